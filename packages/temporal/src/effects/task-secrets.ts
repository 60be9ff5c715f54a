import { taskSecretVariable } from '@activity-core/contracts';
import type { SecretLookup } from './templating';

/** The worker's task secrets by name (the config's TaskSecrets; any Map will do). */
export interface TaskSecretSource {
  get(name: string): string | undefined;
}

/** A template references a secret this worker does not have. The message names the variable, never a value. */
export class SecretMissingError extends Error {
  constructor(readonly secretName: string) {
    super(
      `template references secrets.${secretName}, which this worker does not have: set ${taskSecretVariable(secretName)} in the environment of every worker on this task queue`,
    );
  }
}

/**
 * Secret lookups for one task. It remembers the secrets the task used, so
 * exactly those values are redacted from what the task reports.
 */
export function secretScope(source: TaskSecretSource): { lookup: SecretLookup; used: ReadonlyMap<string, string> } {
  const used = new Map<string, string>();
  return {
    lookup: (name) => {
      const value = source.get(name);
      if (value === undefined) throw new SecretMissingError(name);
      used.set(name, value);
      return value;
    },
    used,
  };
}

interface Span {
  start: number;
  end: number;
  name: string;
}

/**
 * The forms a secret's value takes where a target may echo it: as is;
 * percent-encoded as a URL path or query carries it (encodeURIComponent,
 * upper- or lower-case hex, and encodeURI); form-encoded as URLSearchParams
 * writes it (`+` for a space); and JSON-escaped, as JSON.stringify writes it
 * inside a string (quotes, backslashes, control characters).
 */
function secretForms(value: string): Set<string> {
  // encodeURI* throw on a lone surrogate; such a value has only its other forms.
  const encoded = (encode: (text: string) => string): string => {
    try {
      return encode(value);
    } catch {
      return value;
    }
  };
  const component = encoded(encodeURIComponent);
  return new Set([
    value,
    component,
    component.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
    encoded(encodeURI),
    new URLSearchParams({ s: value }).toString().slice(2),
    JSON.stringify(value).slice(1, -1),
  ]);
}

/**
 * Replaces every occurrence of a secret's value, in any of its secretForms,
 * with `[secret:NAME]`. Occurrences that overlap are
 * replaced as one, named after the secrets not wholly inside another, so a
 * secret that contains another (`tok_1` and `tok_12`) leaves no piece behind.
 */
export function redactText(text: string, secrets: ReadonlyMap<string, string>): string {
  const spans: Span[] = [];
  for (const [name, value] of secrets) {
    for (const form of secretForms(value)) {
      if (form.length === 0) continue;
      for (let at = text.indexOf(form); at !== -1; at = text.indexOf(form, at + 1))
        spans.push({ start: at, end: at + form.length, name });
    }
  }
  if (spans.length === 0) return text;
  spans.sort((a, b) => a.start - b.start || b.end - a.end);

  let out = '';
  let cursor = 0;
  for (let i = 0; i < spans.length;) {
    const group = [spans[i]!];
    let end = spans[i]!.end;
    for (i++; i < spans.length && spans[i]!.start < end; i++) {
      group.push(spans[i]!);
      end = Math.max(end, spans[i]!.end);
    }
    const inside = (s: Span, o: Span): boolean =>
      o.start <= s.start && o.end >= s.end && o.end - o.start > s.end - s.start;
    const names = new Set(group.filter((s) => !group.some((o) => inside(s, o))).map((s) => s.name));
    out += `${text.slice(cursor, group[0]!.start)}[secret:${[...names].join('+')}]`;
    cursor = end;
  }
  return out + text.slice(cursor);
}

/**
 * redactText for a text that was cut short (a response clipped at the read
 * limit): whole occurrences are redacted, then a tail that could be the
 * start of a secret, in any of its secretForms, is dropped, so a secret
 * straddling the cut leaves no prefix behind.
 */
export function redactCutText(text: string, secrets: ReadonlyMap<string, string>): string {
  const redacted = redactText(text, secrets);
  let drop = 0;
  for (const value of secrets.values()) {
    for (const form of secretForms(value)) {
      for (let length = Math.min(form.length - 1, redacted.length); length > drop; length--) {
        if (
          redacted.charCodeAt(redacted.length - length) === form.charCodeAt(0) &&
          redacted.endsWith(form.slice(0, length))
        ) {
          drop = length;
          break;
        }
      }
    }
  }
  return redacted.slice(0, redacted.length - drop);
}

/**
 * redactText over every string, key and number inside a JSON value (a
 * response body). A number that contains a secret becomes a redacted string.
 * Iterative, so no nesting depth can exhaust the call stack.
 */
export function redactValue(value: unknown, secrets: ReadonlyMap<string, string>): unknown {
  if (secrets.size === 0) return value;
  const leaf = (item: unknown): unknown => {
    if (typeof item === 'string') return redactText(item, secrets);
    if (typeof item === 'number') {
      const text = String(item);
      const redacted = redactText(text, secrets);
      return redacted === text ? item : redacted;
    }
    return item;
  };
  const isContainer = (item: unknown): item is object => item !== null && typeof item === 'object';
  if (!isContainer(value)) return leaf(value);
  // Each container is copied once; its children are filled in when it is popped.
  const copyOf = (item: object): unknown[] | Record<string, unknown> => (Array.isArray(item) ? [] : {});
  const root = copyOf(value);
  const stack: Array<{ source: object; target: unknown[] | Record<string, unknown> }> = [
    { source: value, target: root },
  ];
  while (stack.length > 0) {
    const { source, target } = stack.pop()!;
    const entries: Array<[string | number, unknown]> = Array.isArray(source)
      ? source.map((item, index) => [index, item])
      : Object.entries(source);
    for (const [key, item] of entries) {
      const child = isContainer(item) ? copyOf(item) : leaf(item);
      if (Array.isArray(target)) target[key as number] = child;
      else
        Object.defineProperty(target, redactText(key as string, secrets), {
          value: child,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      if (isContainer(item)) stack.push({ source: item, target: child as unknown[] | Record<string, unknown> });
    }
  }
  return root;
}
