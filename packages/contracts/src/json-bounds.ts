import { InvalidInputError, PayloadTooLargeError } from './errors';

/**
 * Bounds on JSON that users hand us: event `data` (copied into every run,
 * task and activity input, so it must fit Temporal's 2 MB payload limit with
 * room to spare) and the JSON inside definitions (http bodies, emitted data).
 *
 * Every walk here is iterative, so no input can exhaust the call stack, and it
 * stops as soon as a bound is passed. Pure; safe in workflow code.
 */

/** Deepest nesting accepted in the JSON of a definition (http `body`, emit_event `data`). */
export const DEFINITION_JSON_MAX_DEPTH = 32;

export interface EventDataLimits {
  /** Largest `data`, in bytes of its JSON (UTF-8). EVENT_DATA_LIMIT_BYTES. */
  maxBytes: number;
  /** Deepest nesting of objects and arrays in `data` (`data` itself is level 1). EVENT_DATA_MAX_DEPTH. */
  maxDepth: number;
}

/** Defaults of EVENT_DATA_LIMIT_BYTES (256 KiB) and EVENT_DATA_MAX_DEPTH (32). */
export const DEFAULT_EVENT_DATA_LIMITS: EventDataLimits = { maxBytes: 256 * 1024, maxDepth: 32 };

/**
 * True when `value` nests objects and arrays more than `maxDepth` levels
 * (a scalar is level 0, `{}` and `[]` are level 1, `{"a":[]}` level 2).
 * Stops at the first container past the limit.
 */
export function jsonDepthExceeds(value: unknown, maxDepth: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > maxDepth) return true;
    const children = Array.isArray(item) ? item : Object.values(item as Record<string, unknown>);
    for (const child of children) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** Bytes of `text` in UTF-8, without encoding it. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

export interface EventDataBoundsIssue {
  kind: 'too_deep' | 'too_large';
  path: 'data';
  message: string;
}

/**
 * Why an event's `data` is refused, or undefined when it is within `limits`.
 * Depth is checked first, so the serialisation that measures the size never
 * sees nesting deeper than the limit.
 */
export function eventDataBoundsIssue(data: unknown, limits: EventDataLimits): EventDataBoundsIssue | undefined {
  if (jsonDepthExceeds(data, limits.maxDepth)) {
    return {
      kind: 'too_deep',
      path: 'data',
      message: `data nests objects and arrays more than ${limits.maxDepth} levels deep; the limit is ${limits.maxDepth} (EVENT_DATA_MAX_DEPTH)`,
    };
  }
  const bytes = utf8Length(JSON.stringify(data) ?? 'null');
  if (bytes > limits.maxBytes) {
    return {
      kind: 'too_large',
      path: 'data',
      message: `data is ${bytes} bytes as JSON; the limit is ${limits.maxBytes} bytes (EVENT_DATA_LIMIT_BYTES)`,
    };
  }
  return undefined;
}

/**
 * Throws InvalidInputError (400) for `data` nested too deep and
 * PayloadTooLargeError (413) for `data` too large; both name `data` and the limit.
 */
export function assertEventDataWithinBounds(data: unknown, limits: EventDataLimits): void {
  const issue = eventDataBoundsIssue(data, limits);
  if (issue === undefined) return;
  const issues = [
    { path: issue.path, message: issue.message, code: issue.kind === 'too_deep' ? 'too_deep' : 'too_big' },
  ];
  if (issue.kind === 'too_deep') throw new InvalidInputError(issue.message, issues);
  throw new PayloadTooLargeError(issue.message, issues);
}
