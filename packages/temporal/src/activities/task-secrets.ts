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
 * Replaces every occurrence of a secret's value (as is, or percent-encoded as
 * a URL would carry it) with `[secret:NAME]`. Occurrences that overlap are
 * replaced as one, named after the secrets not wholly inside another, so a
 * secret that contains another (`tok_1` and `tok_12`) leaves no piece behind.
 */
export function redactText(text: string, secrets: ReadonlyMap<string, string>): string {
  const spans: Span[] = [];
  for (const [name, value] of secrets) {
    for (const form of new Set([value, encodeURIComponent(value)])) {
      if (form.length === 0) continue;
      for (let at = text.indexOf(form); at !== -1; at = text.indexOf(form, at + 1)) spans.push({ start: at, end: at + form.length, name });
    }
  }
  if (spans.length === 0) return text;
  spans.sort((a, b) => a.start - b.start || b.end - a.end);

  let out = '';
  let cursor = 0;
  for (let i = 0; i < spans.length; ) {
    const group = [spans[i]!];
    let end = spans[i]!.end;
    for (i++; i < spans.length && spans[i]!.start < end; i++) {
      group.push(spans[i]!);
      end = Math.max(end, spans[i]!.end);
    }
    const inside = (s: Span, o: Span): boolean => o.start <= s.start && o.end >= s.end && o.end - o.start > s.end - s.start;
    const names = new Set(group.filter((s) => !group.some((o) => inside(s, o))).map((s) => s.name));
    out += `${text.slice(cursor, group[0]!.start)}[secret:${[...names].join('+')}]`;
    cursor = end;
  }
  return out + text.slice(cursor);
}

/**
 * redactText over every string, key and number inside a JSON value (a
 * response body). A number that contains a secret becomes a redacted string.
 */
export function redactValue(value: unknown, secrets: ReadonlyMap<string, string>): unknown {
  if (secrets.size === 0) return value;
  if (typeof value === 'string') return redactText(value, secrets);
  if (typeof value === 'number') {
    const text = String(value);
    const redacted = redactText(text, secrets);
    return redacted === text ? value : redacted;
  }
  if (Array.isArray(value)) return value.map((item) => redactValue(item, secrets));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redactText(key, secrets), redactValue(item, secrets)]));
  }
  return value;
}
