/**
 * The zod schemas each API route registers, read off the API's own server
 * (`buildServer`, the same route set production serves) as routes are added —
 * no service is called — and the type a zod schema describes, so the
 * client's copies of schemas a route declares inline can be compared with it.
 */
import type { RouteOptions } from 'fastify';
import { z } from 'zod';
import { buildServer, type ServerDeps } from '../../../apps/api/src/server';

export interface RouteSchemas {
  method: string;
  /** OpenAPI form: `/v1/activities/{id}`. */
  path: string;
  hidden: boolean;
  body?: z.ZodType;
  querystring?: z.ZodType;
  params?: z.ZodType;
  headers?: z.ZodType;
  /** By status: a zod schema, or `{ description, content: { [media type]: { schema } } }`; see `answerSchema`. */
  response: Record<number, unknown>;
}

/**
 * The schema of a documented answer in one media type: a bare zod schema is
 * JSON; an answer documented per media type (`content`) has one per type.
 */
export function answerSchema(entry: unknown, mediaType = 'application/json'): z.ZodType | undefined {
  if (entry === undefined || entry === null || typeof entry !== 'object') return undefined;
  const content = (entry as { content?: Record<string, { schema?: z.ZodType }> }).content;
  if (content !== undefined) return content[mediaType]?.schema;
  return '_zod' in entry ? (entry as z.ZodType) : undefined;
}

/** A body documented per media type (`{ content: { 'application/json': { schema } } }`): the JSON one, which the client sends. */
function unwrapContent(body: z.ZodType): z.ZodType {
  const content = (body as { content?: Record<string, { schema?: z.ZodType }> }).content;
  return content?.['application/json']?.schema ?? body;
}

/**
 * Dependencies that are never called: building the server only stores them
 * for request time. Any member is another such object, so routes added
 * behind a new dependency are registered (and captured) too; `codec` is
 * present, so the codec routes are as well.
 */
function inertDeps(): ServerDeps {
  const inert: object = new Proxy(() => undefined, {
    get: (_target, key) => (key === 'then' ? undefined : inert),
    apply: () => inert,
  });
  return inert as ServerDeps;
}

/** Every route the API serves (HEAD twins of GET routes left out), keyed `METHOD /path`. */
export async function captureRouteSchemas(): Promise<Map<string, RouteSchemas>> {
  const routes = new Map<string, RouteSchemas>();
  const onRoute = (route: RouteOptions): void => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const schema = (route.schema ?? {}) as {
      hide?: boolean;
      body?: z.ZodType;
      querystring?: z.ZodType;
      params?: z.ZodType;
      headers?: z.ZodType;
      response?: Record<number, unknown>;
    };
    for (const method of methods) {
      if (method === 'HEAD') continue;
      const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      routes.set(`${method} ${path}`, {
        method,
        path,
        hidden: schema.hide === true || route.url.startsWith('/docs'),
        ...(schema.body === undefined ? {} : { body: unwrapContent(schema.body) }),
        ...(schema.querystring === undefined ? {} : { querystring: schema.querystring }),
        ...(schema.params === undefined ? {} : { params: schema.params }),
        ...(schema.headers === undefined ? {} : { headers: schema.headers }),
        response: schema.response ?? {},
      });
    }
  };
  const app = await buildServer(inertDeps(), {
    auth: { apiKeys: [], ingestKeys: [] } as never,
    bodyLimitBytes: 1_048_576,
    logger: false,
    rateLimit: { max: 0, windowMs: 60_000 },
    onRoute,
  });
  await app.ready();
  await app.close();
  return routes;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Keywords whose value is one schema, a list of schemas, or a map of them. */
const SCHEMA = new Set(['items', 'additionalProperties', 'propertyNames', 'not']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'prefixItems']);
const SCHEMA_MAPS = new Set(['properties', 'patternProperties']);
/** Keywords that say what type of value is taken; everything else (patterns, bounds, formats, rules, annotations) is left out. */
const SHAPE = new Set([...SCHEMA, ...SCHEMA_LISTS, ...SCHEMA_MAPS, 'type', 'required', 'enum', 'const']);

const sortedByText = (values: Json[]): Json[] =>
  [...values].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

/** Inlines local `$ref`s and keeps only the keywords of SHAPE, in an order-free form (required, enum and unions sorted). */
function shapeOf(node: Json, defs: Record<string, Json>, seen: readonly string[] = []): Json {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return node;
  const ref = node.$ref;
  if (typeof ref === 'string') {
    const name = ref.replace(/^#\/(\$defs|definitions)\//, '');
    if (seen.includes(name)) return { $ref: name };
    const target = ref === '#' ? defs['#'] : defs[name];
    if (target === undefined) throw new Error(`unresolved $ref ${ref}`);
    return shapeOf(target, defs, [...seen, name]);
  }
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(node)) {
    if (!SHAPE.has(key)) continue;
    if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, shapeOf(schema, defs, seen)]));
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      const members = value.map((schema) => shapeOf(schema, defs, seen));
      out[key] = key === 'prefixItems' ? members : sortedByText(members);
    } else if (SCHEMA.has(key)) {
      out[key] = shapeOf(value, defs, seen);
    } else if ((key === 'required' || key === 'enum') && Array.isArray(value)) {
      out[key] = sortedByText(value);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/**
 * The type a zod schema describes, as JSON Schema reduced to its shape: which
 * values of which types, which properties (required or not), unions, enums and
 * constants — the things a client's types are made of. Patterns, bounds,
 * formats, cross-field rules and annotations are left out: they are the
 * server's to check. `io` picks the request (input) or answer (output) side.
 */
export function typeShape(schema: z.ZodType, io: 'input' | 'output'): Json {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as {
    [key: string]: Json;
  };
  const defs = { ...((json.$defs ?? {}) as Record<string, Json>), '#': json };
  return shapeOf(json, defs);
}
