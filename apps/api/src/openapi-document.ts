import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { PAGE_CURSOR_DESCRIPTION, resolveOnWrite } from '@activity-core/contracts';
import type { FastifySchema, RouteOptions } from 'fastify';
import type { KeyRole } from '@activity-core/config';
import type { AuthScope, OwnedTarget } from './plugins/auth';

/**
 * The served OpenAPI document, made to say what the server does (the API
 * fuzz test holds the two together). Routes declare their own answers: the
 * success bodies and the error statuses only their logic produces (403, 409,
 * 422, …) as `Problem`. Everything else is derived here from what the route
 * is, so a new route cannot forget it:
 *
 * - every error answer is `application/problem+json` with the `Problem` schema;
 * - the error statuses the server answers for any route of its kind
 *   (STANDARD_ERRORS): 400 for input, 401 and 429 where a key is checked,
 *   404 under a path parameter, 413/415 where a body is read, 503 where
 *   Postgres is read, 500 everywhere;
 * - the headers: `WWW-Authenticate` on a bearer 401, `Retry-After` on 429
 *   and 503, `x-ratelimit-*` on answers of rate-limited routes, `Accept-Post`
 *   on a 415;
 * - `security: []` on routes that take no API key (public ones and webhook
 *   deliveries, which are verified by their signature); on keyed routes the
 *   least role a management key needs, as the security requirement's role
 *   and as `x-required-role` (with `x-owned-target` where a key that owns
 *   only some activities is checked against them), and a 403 wherever a
 *   role or an owned activity can be lacking;
 * - an optional request body (a body schema that accepts no body) as
 *   `required: false`;
 * - constraints checked only when something is written (ON_WRITE in
 *   @activity-core/contracts) applied to request schemas only.
 */

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** Marks the operation carries until completeDocument() reads (and removes) them. */
const SCOPE_MARK = 'x-activity-core-auth';
const OPTIONAL_BODY_MARK = 'x-activity-core-optional-body';
/** Kept in the served document: the least role (API_KEY_ROLES) a management key needs for the operation. */
export const REQUIRED_ROLE = 'x-required-role';
/** Kept in the served document: what a key owning only some activities is checked against (see OwnedTarget). */
export const OWNED_TARGET = 'x-owned-target';

const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete']);
const BEARER_SCOPES = new Set<AuthScope>(['management', 'ingest']);

export interface OperationShape {
  method: string;
  /** The OpenAPI path, `{name}` for parameters. */
  path: string;
  scope: AuthScope;
  /** The least role a management key needs; undefined on public and webhook operations. */
  role?: KeyRole;
  owns?: OwnedTarget;
  /** Whether the operation declares parameters or a request body. */
  takesInput: boolean;
}

/** Why each standard status is answered, as the document describes it. */
const STANDARD_ERRORS: Record<number, { description: string; applies: (operation: OperationShape) => boolean }> = {
  400: {
    description:
      'The request breaks the schema or a rule it describes, or its body is not valid JSON; `errors` names each field and the rule.',
    applies: ({ method, takesInput }) => takesInput || BODY_METHODS.has(method),
  },
  401: {
    description: 'No API key, or not one this server knows (`Authorization: Bearer <key>`).',
    applies: ({ scope }) => BEARER_SCOPES.has(scope),
  },
  403: {
    description:
      "The key's role (API_KEY_ROLES) is below the operation's `x-required-role`, or the key owns only some activities (`activity_prefixes`) and the request touches another; `errors` names what is lacking.",
    // The lowest role, on an operation no owned activity limits, is never refused.
    applies: ({ scope, role, owns }) =>
      (scope === 'management' || scope === 'ingest') && (role !== 'read' || owns !== undefined),
  },
  404: {
    description: 'Nothing exists under this path (a path parameter names no resource).',
    applies: ({ path }) => path.includes('{'),
  },
  413: {
    description: "The body is over the server's limit (BODY_LIMIT_BYTES).",
    applies: ({ method }) => BODY_METHODS.has(method),
  },
  415: {
    description: "The body's Content-Type is not one this operation reads (`Accept-Post` lists those of a POST).",
    // Webhook deliveries are read as raw bytes of any media type (their signature covers the bytes).
    applies: ({ method, scope }) => BODY_METHODS.has(method) && scope !== 'webhook',
  },
  429: {
    description:
      'Over a rate limit (RATE_LIMIT_MAX per key or webhook source), or too many failed key attempts from this address (AUTH_FAILURE_LIMIT); `Retry-After` says when to try again.',
    applies: ({ scope }) => scope !== 'public',
  },
  500: {
    description: 'An unexpected error; nothing internal is shown. Quote `request_id` when reporting it.',
    applies: () => true,
  },
  503: {
    description:
      'Postgres (or, where the operation needs it, Temporal) is unreachable; `Retry-After` says when to try again. Safe to retry.',
    // Every /v1 operation reads or writes Postgres.
    applies: ({ path }) => path.startsWith('/v1/'),
  },
};

/** The error statuses the server may answer an operation of this shape with, besides the ones the route declares. */
export function standardErrorStatuses(operation: OperationShape): number[] {
  return Object.entries(STANDARD_ERRORS)
    .filter(([, rule]) => rule.applies(operation))
    .map(([status]) => Number(status));
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const integerHeader = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } });
const RATE_LIMIT_HEADERS = {
  'x-ratelimit-limit': integerHeader('Requests allowed per window for this key (when RATE_LIMIT_MAX is set).'),
  'x-ratelimit-remaining': integerHeader('Requests left in the current window.'),
  'x-ratelimit-reset': integerHeader('Seconds until the window resets.'),
};

/** The headers an answer with this status carries on an operation of this scope (`problem`: a problem+json answer). */
function headersFor(status: number, scope: AuthScope, method: string, problem: boolean): Json {
  const headers: Json = {};
  if (problem && status === 401 && BEARER_SCOPES.has(scope)) {
    headers['WWW-Authenticate'] = {
      description: 'The authentication scheme: `Bearer realm="activity-core"`.',
      required: true,
      schema: { type: 'string' },
    };
  }
  if (problem && (status === 429 || status === 503)) {
    headers['Retry-After'] = {
      description: 'Seconds to wait before retrying.',
      required: true,
      schema: { type: 'integer', minimum: 0 },
    };
  }
  if (problem && status === 415 && method === 'post') {
    headers['Accept-Post'] = { description: 'The media types this operation reads.', schema: { type: 'string' } };
  }
  // Set before the handler runs, so answers of every status carry them (not a 401: the key check comes first).
  if (BEARER_SCOPES.has(scope) && status !== 401) Object.assign(headers, RATE_LIMIT_HEADERS);
  return headers;
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };
const isProblemRef = (schema: unknown): boolean => isObject(schema) && schema.$ref === PROBLEM_REF.$ref;

/** Zod schemas (body) that accept a request without a body. */
function acceptsNoBody(body: unknown): boolean {
  if (!isObject(body) || typeof body.safeParse !== 'function') return false;
  return (body.safeParse as (value: unknown) => { success: boolean })(undefined).success;
}

/**
 * The per-route step, around the zod transform: marks the route's auth
 * scope and an optional body for completeDocument(), and declares no
 * security on routes that take no API key.
 */
export function describeRoute<S extends FastifySchema>(transform: SwaggerTransform<S>): SwaggerTransform<S> {
  return (document) => {
    const result = transform(document);
    const route: RouteOptions = document.route;
    const config = route.config as { auth?: AuthScope; role?: KeyRole; owns?: OwnedTarget } | undefined;
    const scope = config?.auth ?? 'public';
    const schema: Json = { ...result.schema, [SCOPE_MARK]: scope };
    if (scope === 'public' || scope === 'webhook') schema.security = [];
    else if (config?.role !== undefined) {
      // OpenAPI 3.1 lets a security requirement of an http scheme list the roles it needs.
      schema.security = [{ apiKey: [config.role] }];
      schema[REQUIRED_ROLE] = config.role;
      if (config.owns !== undefined) schema[OWNED_TARGET] = config.owns;
    }
    if (acceptsNoBody(document.schema?.body)) schema[OPTIONAL_BODY_MARK] = true;
    return { ...result, schema: schema as FastifySchema };
  };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Completes one operation's responses (in place). */
function completeOperation(method: string, path: string, operation: Json): void {
  const scope = (operation[SCOPE_MARK] as AuthScope | undefined) ?? 'public';
  delete operation[SCOPE_MARK];
  const requestBody = operation.requestBody;
  if (operation[OPTIONAL_BODY_MARK] === true && isObject(requestBody)) requestBody.required = false;
  delete operation[OPTIONAL_BODY_MARK];
  resolveOnWrite(operation.parameters, true);
  resolveOnWrite(operation.requestBody, true);
  for (const parameter of Array.isArray(operation.parameters) ? operation.parameters : []) {
    // Every list's cursor is opaque: only the server can tell one it issued.
    if (isObject(parameter) && parameter.in === 'query' && parameter.name === 'cursor') {
      parameter.description ??= PAGE_CURSOR_DESCRIPTION;
    }
  }

  const responses = (isObject(operation.responses) ? operation.responses : {}) as Record<string, Json>;
  const role = operation[REQUIRED_ROLE] as KeyRole | undefined;
  const owns = operation[OWNED_TARGET] as OwnedTarget | undefined;
  const shape: OperationShape = {
    method,
    path,
    scope,
    ...(role === undefined ? {} : { role }),
    ...(owns === undefined ? {} : { owns }),
    takesInput: (Array.isArray(operation.parameters) && operation.parameters.length > 0) || requestBody !== undefined,
  };
  for (const status of standardErrorStatuses(shape)) {
    responses[status] ??= {
      description: STANDARD_ERRORS[status]!.description,
      content: { [PROBLEM_MEDIA_TYPE]: { schema: PROBLEM_REF } },
    };
  }
  for (const [code, response] of Object.entries(responses)) {
    const status = Number(code);
    const content = isObject(response.content) ? response.content : undefined;
    const json = content?.['application/json'];
    // Error answers are problem+json (the error handler's), whatever media type the route schema defaulted to.
    if (status >= 400 && content !== undefined && isObject(json) && isProblemRef(json.schema)) {
      delete content['application/json'];
      content[PROBLEM_MEDIA_TYPE] = json;
    }
    const problem = content?.[PROBLEM_MEDIA_TYPE] !== undefined;
    if (problem && response.description === 'Default Response' && STANDARD_ERRORS[status] !== undefined)
      response.description = STANDARD_ERRORS[status]!.description;
    const headers = headersFor(status, scope, method, problem);
    if (Object.keys(headers).length > 0)
      response.headers = { ...headers, ...(isObject(response.headers) ? response.headers : {}) };
  }
  operation.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The whole-document step, after the zod one: completes every operation
 * (see the module comment) and states the API's version.
 */
export function completeDocument(
  transformObject: SwaggerTransformObject,
  options: { version: string },
): SwaggerTransformObject {
  return (documentObject) => {
    const document = transformObject(documentObject) as Json;
    document.info = { ...(isObject(document.info) ? document.info : {}), version: options.version };
    const paths = isObject(document.paths) ? document.paths : {};
    for (const [path, item] of Object.entries(paths)) {
      if (!isObject(item)) continue;
      for (const method of METHODS) {
        const operation = item[method];
        if (isObject(operation)) completeOperation(method, path, operation);
      }
    }
    const components = isObject(document.components) ? document.components : {};
    const schemas = isObject(components.schemas) ? components.schemas : {};
    // Request components are the zod input schemas (`…Input`); the rest describe answers.
    for (const [name, schema] of Object.entries(schemas)) resolveOnWrite(schema, name.endsWith('Input'));
    resolveOnWrite(paths, false);
    return document as ReturnType<SwaggerTransformObject>;
  };
}
