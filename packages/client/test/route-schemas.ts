/**
 * The zod schemas each API route registers, read off the API's own server
 * (`buildServer`, the same route set production serves) as routes are added —
 * no service is called — so the client's operation table can be checked
 * against the very objects the routes declare.
 */
import type { RouteOptions } from 'fastify';
import type { z } from 'zod';
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
