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
 * as literal text.
 */
const SECRET_PLACEHOLDER = /\{\{\s*secrets(?![A-Za-z0-9_])([^}]*)\}\}/g;
const SECRET_REFERENCE = /^\.([A-Z][A-Z0-9_]*)\s*$/;

export interface SecretPlaceholder {
  placeholder: string;
  /** Set when the placeholder is a valid reference. */
  name?: string;
}

/** Every secrets placeholder in a string. */
export function findSecretPlaceholders(text: string): SecretPlaceholder[] {
  return [...text.matchAll(SECRET_PLACEHOLDER)].map((match) => {
    const name = SECRET_REFERENCE.exec(match[1]!)?.[1];
    return name === undefined ? { placeholder: match[0] } : { placeholder: match[0], name };
  });
}

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
  const check = (text: string, path: Array<string | number>, isKey: boolean): void => {
    for (const found of findSecretPlaceholders(text)) {
      if (options.refused !== undefined) issues.push({ path, message: `${found.placeholder}: ${options.refused}` });
      else if (found.name === undefined) {
        issues.push({ path, message: `${found.placeholder} is not a valid secret reference: write {{ secrets.NAME }} with NAME matching ${SECRET_NAME_PATTERN.source}` });
      } else if (isKey) issues.push({ path, message: `${found.placeholder}: keys are not templated; secrets may be used in string values only` });
    }
  };
  const walk = (item: unknown, path: Array<string | number>): void => {
    if (typeof item === 'string') check(item, path, false);
    else if (Array.isArray(item)) item.forEach((entry, index) => walk(entry, [...path, index]));
    else if (item !== null && typeof item === 'object') {
      for (const [key, entry] of Object.entries(item)) {
        check(key, [...path, key], true);
        walk(entry, [...path, key]);
      }
    }
  };
  walk(value, []);
  return issues;
}
