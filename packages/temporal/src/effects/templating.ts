import { SECRET_NAME_PATTERN } from '@activity-core/contracts';

/**
 * `{{ path.to.value }}` placeholders over the run context. Lookup only: no
 * expressions, no code, nothing but property access on plain data.
 *
 * A string that is exactly one placeholder takes the value's own type (so a
 * body field can be an object); placeholders inside longer strings are
 * stringified, and in an `http` task's URL also percent-encoded for their
 * position (renderUrl). A path that does not exist is an error: sending a request with
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
    throw new TemplateError(
      path,
      `template references ${path}, but secrets can only be used in the url, header values and body of an http task`,
    );
  }
  const name = path.slice(SECRETS_NAMESPACE.length + 1);
  if (!SECRET_NAME_PATTERN.test(name)) {
    throw new TemplateError(
      path,
      `template references ${path}, which is not a valid secret reference (names match ${SECRET_NAME_PATTERN.source})`,
    );
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

/** Renders a string that must stay a string (header values). */
export function renderText(template: string, context: unknown, secrets?: SecretLookup): string {
  return stringify(renderString(template, context, secrets));
}

/** A segment the URL parser would resolve away (`.`, `..`, or their `%2e` spellings). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;
/** What the WHATWG URL parser strips before parsing: leading and trailing C0 controls and spaces, and every tab and line break. */
function stripLikeUrlParser(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) <= 0x20) start++;
  while (end > start && text.charCodeAt(end - 1) <= 0x20) end--;
  return text.slice(start, end).replace(/[\t\n\r]/g, '');
}
/** Path separators in an http(s) URL: the parser reads `\` as `/`. */
const PATH_SEPARATOR = /([/\\])/;

/** How the URL parser writes one path segment (its percent-encoding), for a segment with no separator and no dots. */
function canonicalSegment(segment: string): string {
  return new URL(`http://h.invalid/${segment}`).pathname.slice(1);
}

/**
 * Renders an `http` task's URL so that data can fill in a URL, never reshape
 * it. Each value is percent-encoded for the one position it sits in: in the
 * path it stays inside its path segment (`/`, `\`, `?`, `#`, `%`, tabs and
 * line breaks are encoded, and a segment that would render as `.`, `..` or
 * empty is refused); in the query it stays one key or one value (`&`, `=`,
 * `+`, `#` encoded); in the fragment (refused at registration) it is encoded
 * too. The scheme and host take no placeholders at all.
 *
 * Then the rendered URL is parsed (WHATWG, as the request will be) and its
 * path compared with the template's structure: the template's path parsed
 * with each placeholder-bearing segment stood in for by a marker, each marker
 * replaced by its rendered segment. Any difference (a segment split, merged,
 * dropped or resolved away by the parser, the origin or the static path
 * changed) throws a TemplateError: the URL a secret is sent to is the one the
 * definition names. Segments are cut at `/` and `\` alike, and the template is
 * first stripped of what the parser strips (tabs, line breaks, edge spaces),
 * so the check sees what the parser sees.
 */
export function renderUrl(rawTemplate: string, context: unknown, secrets?: SecretLookup): string {
  const template = stripLikeUrlParser(rawTemplate);
  const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]*/i.exec(template)?.[0] ?? '';
  if (authority.includes('{{'))
    throw new TemplateError(
      'url',
      `url ${template} has a placeholder in its scheme or host; only the path and query may have one`,
    );
  // Placeholders cannot contain `?` or `#`, so the first of each in the template marks where the query and fragment begin.
  const queryAt = template.indexOf('?', authority.length);
  const fragmentAt = template.indexOf('#', authority.length);
  const end = (at: number): number => (at === -1 ? template.length : at);
  const pathEnd = Math.min(end(queryAt), end(fragmentAt));
  const encodeValues = (text: string): string =>
    text.replace(PLACEHOLDER, (_: string, path: string) =>
      encodeURIComponent(stringify(lookup(context, path, secrets))),
    );

  // Placeholders contain no separator, so cutting the path at `/` and `\` never cuts one; odd parts are the separators.
  const parts = template.slice(authority.length, pathEnd).split(PATH_SEPARATOR);
  let marker = '~ph';
  while (template.includes(marker)) marker += '~';
  const markers = new Map<string, string>(); // marker -> rendered segment
  const renderedParts: string[] = [];
  const skeletonParts: string[] = [];
  parts.forEach((part, index) => {
    if (index % 2 === 1 || !part.includes('{{') || part.replace(PLACEHOLDER, '') === part) {
      renderedParts.push(part);
      skeletonParts.push(part);
      return;
    }
    const segment = encodeValues(part);
    if (DOT_SEGMENT.test(segment)) {
      throw new TemplateError(
        'url',
        `url ${template} would render a "." or ".." path segment; a value may not move the path`,
      );
    }
    if (segment === '')
      throw new TemplateError(
        'url',
        `url ${template} would render an empty path segment; a value may not remove a segment`,
      );
    const standIn = `${marker}${markers.size}~`;
    markers.set(standIn, segment);
    renderedParts.push(segment);
    skeletonParts.push(standIn);
  });
  const rendered = authority + renderedParts.join('') + encodeValues(template.slice(pathEnd));

  let skeleton: URL;
  let url: URL;
  let expectedPath: string;
  let seen: Set<string>;
  try {
    skeleton = new URL(authority + skeletonParts.join(''));
    url = new URL(rendered);
    seen = new Set<string>();
    expectedPath = skeleton.pathname
      .split('/')
      .map((segment) => {
        const value = markers.get(segment);
        if (value === undefined) return segment;
        seen.add(segment);
        return canonicalSegment(value);
      })
      .join('/');
  } catch {
    throw new TemplateError('url', `url ${template} does not render to a valid URL`);
  }
  // Every placeholder's segment must survive parsing (a static `..` after one would resolve it away).
  if (url.origin !== skeleton.origin || url.pathname !== expectedPath || seen.size !== markers.size) {
    throw new TemplateError(
      'url',
      `url ${template} rendered outside ${skeleton.origin} and its path's segments; a value may not change the host or move, split, join or remove a path segment`,
    );
  }
  return rendered;
}
