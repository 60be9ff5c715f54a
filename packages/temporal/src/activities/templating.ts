import { SECRET_NAME_PATTERN } from '@activity-core/contracts';

/**
 * `{{ path.to.value }}` placeholders over the run context. Lookup only: no
 * expressions, no code, nothing but property access on plain data.
 *
 * A string that is exactly one placeholder takes the value's own type (so a
 * body field can be an object); placeholders inside longer strings are
 * stringified. A path that does not exist is an error: sending a request with
 * a silently empty field is worse than failing the task.
 *
 * `{{ secrets.NAME }}` is not part of the run context: it resolves only when
 * the caller passes a SecretLookup, which only the `http` task does. Rendered
 * values are never templated again, so data cannot smuggle in a reference.
 */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}$/;

export class TemplateError extends Error {
  constructor(
    readonly path: string,
    message = `template references ${path}, which does not exist in the run context`,
  ) {
    super(message);
  }
}

/** Returns the value of secret `name`, or throws (e.g. SecretMissingError). */
export type SecretLookup = (name: string) => string;

const SECRETS_NAMESPACE = 'secrets';

function lookupSecret(path: string, secrets: SecretLookup | undefined): string {
  if (secrets === undefined) {
    throw new TemplateError(path, `template references ${path}, but secrets can only be used in the url, header values and body of an http task`);
  }
  const name = path.slice(SECRETS_NAMESPACE.length + 1);
  if (!SECRET_NAME_PATTERN.test(name)) {
    throw new TemplateError(path, `template references ${path}, which is not a valid secret reference (names match ${SECRET_NAME_PATTERN.source})`);
  }
  return secrets(name);
}

function lookup(context: unknown, path: string, secrets: SecretLookup | undefined): unknown {
  if (path === SECRETS_NAMESPACE || path.startsWith(`${SECRETS_NAMESPACE}.`)) return lookupSecret(path, secrets);
  let current: unknown = context;
  for (const segment of path.split('.')) {
    if (current === null || typeof current !== 'object') throw new TemplateError(path);
    if (!Object.prototype.hasOwnProperty.call(current, segment)) throw new TemplateError(path);
    current = (current as Record<string, unknown>)[segment];
  }
  if (current === undefined) throw new TemplateError(path);
  return current;
}

function stringify(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function renderString(template: string, context: unknown, secrets?: SecretLookup): unknown {
  const whole = WHOLE.exec(template);
  if (whole !== null) return lookup(context, whole[1]!, secrets);
  return template.replace(PLACEHOLDER, (_, path: string) => stringify(lookup(context, path, secrets)));
}

/** Renders every string inside a JSON value. */
export function renderValue(value: unknown, context: unknown, secrets?: SecretLookup): unknown {
  if (typeof value === 'string') return renderString(value, context, secrets);
  if (Array.isArray(value)) return value.map((item) => renderValue(item, context, secrets));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renderValue(item, context, secrets)]));
  }
  return value;
}

/** Renders a string that must stay a string (URLs, header values). */
export function renderText(template: string, context: unknown, secrets?: SecretLookup): string {
  return stringify(renderString(template, context, secrets));
}
