/**
 * `{{ path.to.value }}` placeholders over the run context. Lookup only: no
 * expressions, no code, nothing but property access on plain data.
 *
 * A string that is exactly one placeholder takes the value's own type (so a
 * body field can be an object); placeholders inside longer strings are
 * stringified. A path that does not exist is an error: sending a request with
 * a silently empty field is worse than failing the task.
 */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}$/;

export class TemplateError extends Error {
  constructor(readonly path: string) {
    super(`template references ${path}, which does not exist in the run context`);
  }
}

function lookup(context: unknown, path: string): unknown {
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

export function renderString(template: string, context: unknown): unknown {
  const whole = WHOLE.exec(template);
  if (whole !== null) return lookup(context, whole[1]!);
  return template.replace(PLACEHOLDER, (_, path: string) => stringify(lookup(context, path)));
}

/** Renders every string inside a JSON value. */
export function renderValue(value: unknown, context: unknown): unknown {
  if (typeof value === 'string') return renderString(value, context);
  if (Array.isArray(value)) return value.map((item) => renderValue(item, context));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renderValue(item, context)]));
  }
  return value;
}

/** Renders a string that must stay a string (URLs, header values). */
export function renderText(template: string, context: unknown): string {
  return stringify(renderString(template, context));
}
