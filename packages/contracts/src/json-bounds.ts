import { InvalidInputError, PayloadTooLargeError } from './errors';

/**
 * Bounds on JSON that users hand us: event `data` (copied into every run,
 * task and activity input, so it must fit Temporal's 2 MB payload limit with
 * room to spare) and the JSON inside definitions (http bodies, emitted data).
 *
 * Every walk here is iterative, so no input can exhaust the call stack, and it
 * stops as soon as a bound is passed. Pure, but it throws the domain errors
 * (zod-backed): workflow code reads the depth bound from json-depth.ts.
 */

export { DEFINITION_JSON_MAX_DEPTH } from './json-depth';

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
  kind: 'too_deep' | 'too_large' | 'nul_character';
  /** `data`, or for a NUL character the string that holds it (`data.items[2].note`). */
  path: string;
  message: string;
}

/** Longest key, in characters, a path in an error names whole: a longer one is cut, so an answer never echoes a huge key. */
const PATH_KEY_MAX = 64;

const pathKey = (key: string): string => (key.length > PATH_KEY_MAX ? `${key.slice(0, PATH_KEY_MAX)}…` : key);

/**
 * Where `value` holds U+0000 (NUL), which Postgres stores in neither text nor
 * jsonb: the path of the first string or object key that holds it, from
 * `root` (`data.items[2].note`; a key's path is its object's; keys over
 * PATH_KEY_MAX characters cut), or undefined.
 * Iterative, like every walk here.
 */
export function nulCharacterPath(value: unknown, root: string): string | undefined {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return path;
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}[${i}]`]);
      continue;
    }
    const entries = Object.entries(item as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      if (key.includes('\u0000')) return path;
      stack.push([child, `${path}.${pathKey(key)}`]);
    }
  }
  return undefined;
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
  const json = JSON.stringify(data) ?? 'null';
  const bytes = utf8Length(json);
  if (bytes > limits.maxBytes) {
    return {
      kind: 'too_large',
      path: 'data',
      message: `data is ${bytes} bytes as JSON; the limit is ${limits.maxBytes} bytes (EVENT_DATA_LIMIT_BYTES)`,
    };
  }
  // JSON writes U+0000 as the escape \u0000: only data whose JSON has that text is walked (it may be an escaped backslash).
  const nulAt = json.includes('\\u0000') ? nulCharacterPath(data, 'data') : undefined;
  return nulAt === undefined ? undefined : nulCharacterIssue(nulAt);
}

function nulCharacterIssue(path: string): EventDataBoundsIssue {
  return {
    kind: 'nul_character',
    path,
    message: `${path} contains the character U+0000 (NUL), which cannot be stored`,
  };
}

function throwIssue(issue: EventDataBoundsIssue): never {
  const code = issue.kind === 'too_large' ? 'too_big' : issue.kind;
  const issues = [{ path: issue.path, message: issue.message, code }];
  if (issue.kind === 'too_large') throw new PayloadTooLargeError(issue.message, issues);
  throw new InvalidInputError(issue.message, issues);
}

/**
 * Throws InvalidInputError (400) for `data` nested too deep or holding a
 * NUL character, and PayloadTooLargeError (413) for `data` too large; each
 * names the field and the limit.
 */
export function assertEventDataWithinBounds(data: unknown, limits: EventDataLimits): void {
  const issue = eventDataBoundsIssue(data, limits);
  if (issue !== undefined) throwIssue(issue);
}

/**
 * Throws InvalidInputError (400) naming the first of `fields` (name → value,
 * e.g. an envelope's text fields) that holds U+0000 (NUL), which Postgres
 * cannot store.
 */
export function assertTextStorable(fields: Readonly<Record<string, unknown>>): void {
  for (const [name, value] of Object.entries(fields)) {
    const at = nulCharacterPath(value, name);
    if (at !== undefined) throwIssue(nulCharacterIssue(at));
  }
}
