/**
 * Secret references in task templates: `{{ secrets.NAME }}`. A secret's value
 * is known only to workers (`TASK_SECRET_<NAME>` in their environment) and is
 * rendered only inside the `http` task activity, in its url, header values and
 * body. Definitions, workflow inputs and histories hold the placeholder only.
 *
 * Registration checks the form of a reference and where it is used, never that
 * the secret exists: API processes do not hold worker secrets. A reference to
 * a secret no worker has fails the task at run time (`secret_missing`).
 */
export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]*$/;

/** Workers read secret `NAME` from the variable `TASK_SECRET_NAME`. */
export const TASK_SECRET_ENV_PREFIX = 'TASK_SECRET_';

export function taskSecretVariable(name: string): string {
  return `${TASK_SECRET_ENV_PREFIX}${name}`;
}

/**
 * Anything that reads as a secrets placeholder, well-formed or not, so a typo
 * (`{{ secrets.vendor_token }}`, `{{secrets}}`) is refused rather than sent
 * as literal text: `{{`, optional whitespace, the word `secrets` (not
 * followed by a letter, digit or `_`), anything but `}`, then `}}`.
 *
 * A hand-written scanner rather than a regular expression: with a global
 * regex, every `{{secrets` without a closing `}}` rescans the rest of the
 * text, so `{{secrets` repeated over 1 MiB took minutes. This one reads each
 * character a bounded number of times.
 */
const SECRET_REFERENCE = /^\.([A-Z][A-Z0-9_]*)\s*$/;
const SECRETS_WORD = 'secrets';
const WHITESPACE = /\s/;
const WORD_CHARACTER = /[A-Za-z0-9_]/;

export interface SecretPlaceholder {
  placeholder: string;
  /** Set when the placeholder is a valid reference. */
  name?: string;
}

/** Every secrets placeholder in a string, left to right, without overlaps. Linear in `text`. */
export function findSecretPlaceholders(text: string): SecretPlaceholder[] {
  const found: SecretPlaceholder[] = [];
  // The first `}` at or after the last position asked for. Positions asked for
  // only grow, so each stretch of text is searched for a `}` at most once.
  let close = -1;
  let from = 0;
  for (;;) {
    const open = text.indexOf('{{', from);
    if (open === -1) break;
    let at = open + 2;
    while (at < text.length && WHITESPACE.test(text[at]!)) at += 1;
    if (!text.startsWith(SECRETS_WORD, at) || WORD_CHARACTER.test(text[at + SECRETS_WORD.length] ?? '')) {
      from = open + 1;
      continue;
    }
    const inner = at + SECRETS_WORD.length;
    if (close < inner) {
      close = text.indexOf('}', inner);
      if (close === -1) break; // no `}` after here: nothing further can match
    }
    if (text[close + 1] !== '}') {
      from = open + 1;
      continue;
    }
    const placeholder = text.slice(open, close + 2);
    const name = SECRET_REFERENCE.exec(text.slice(inner, close))?.[1];
    found.push(name === undefined ? { placeholder } : { placeholder, name });
    from = close + 2;
  }
  return found;
}

/** At most this many placeholder issues are reported for one value; the first ones say enough. */
export const MAX_SECRET_ISSUES = 20;

export interface SecretPlaceholderIssue {
  path: Array<string | number>;
  message: string;
}

/**
 * Issues for the secrets placeholders inside a JSON value: a malformed
 * reference anywhere, a placeholder in an object key (keys are never
 * rendered), and, when `refused` is given, every placeholder at all.
 */
export function secretPlaceholderIssues(value: unknown, options: { refused?: string } = {}): SecretPlaceholderIssue[] {
  const issues: SecretPlaceholderIssue[] = [];
  // Paths are kept as links to the parent and spelled out only for an issue, so deep values cost linear time.
  interface Step {
    parent: Step | undefined;
    segment: string | number;
  }
  const pathOf = (step: Step | undefined): Array<string | number> => {
    const path: Array<string | number> = [];
    for (let at = step; at !== undefined; at = at.parent) path.push(at.segment);
    return path.reverse();
  };
  const check = (text: string, step: Step | undefined, isKey: boolean): void => {
    for (const found of findSecretPlaceholders(text)) {
      if (options.refused !== undefined)
        issues.push({ path: pathOf(step), message: `${found.placeholder}: ${options.refused}` });
      else if (found.name === undefined) {
        issues.push({
          path: pathOf(step),
          message: `${found.placeholder} is not a valid secret reference: write {{ secrets.NAME }} with NAME matching ${SECRET_NAME_PATTERN.source}`,
        });
      } else if (isKey)
        issues.push({
          path: pathOf(step),
          message: `${found.placeholder}: keys are not templated; secrets may be used in string values only`,
        });
    }
  };
  // Iterative: a deeply nested value cannot overflow the stack (definitions also bound the depth).
  const stack: Array<{ item: unknown; step: Step | undefined; key?: string }> = [{ item: value, step: undefined }];
  while (stack.length > 0 && issues.length < MAX_SECRET_ISSUES) {
    const { item, step, key } = stack.pop()!;
    if (key !== undefined) check(key, step, true);
    else if (typeof item === 'string') check(item, step, false);
    else if (Array.isArray(item)) {
      for (let index = item.length - 1; index >= 0; index--)
        stack.push({ item: item[index], step: { parent: step, segment: index } });
    } else if (item !== null && typeof item === 'object') {
      const entries = Object.entries(item);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [entryKey, entry] = entries[index]!;
        const child = { parent: step, segment: entryKey };
        stack.push({ item: entry, step: child });
        stack.push({ item: undefined, step: child, key: entryKey });
      }
    }
  }
  return issues.slice(0, MAX_SECRET_ISSUES);
}
