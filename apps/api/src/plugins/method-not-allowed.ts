import type { FastifyInstance } from 'fastify';
import { problem } from './problem';

/** A route URL (`/v1/runs/:run_id`, `/docs/*`) as a matcher of request paths. */
export function routePathMatcher(url: string): RegExp {
  const source = url
    .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
    .replace(/:[A-Za-z0-9_]+/g, '[^/]+')
    .replace(/\*/g, '.*');
  return new RegExp(`^${source}$`);
}

const isTemplated = (url: string): boolean => /[:*]/.test(url);

/** Which methods the registered routes take, by route URL; answers the methods a request path has. */
function createMethodIndex() {
  const routes = new Map<string, { matcher: RegExp; methods: Set<string> }>();
  return {
    add(url: string, methods: string | readonly string[]): void {
      const entry = routes.get(url) ?? { matcher: routePathMatcher(url), methods: new Set<string>() };
      for (const method of [methods].flat()) entry.methods.add(method.toUpperCase());
      // HEAD is answered wherever GET is (fastify's exposeHeadRoutes).
      if (entry.methods.has('GET')) entry.methods.add('HEAD');
      routes.set(url, entry);
    },
    /**
     * The methods the path (no query string) takes, empty when no route has it.
     * A concrete path is its own resource: `/v1/runs/rerun` takes what its
     * route takes, whatever `/v1/runs/:run_id` does (OpenAPI matches concrete
     * paths before templated ones). `concrete` says which kind answered.
     */
    methodsAt(path: string): { methods: string[]; concrete: boolean } {
      const exact = routes.get(path);
      if (exact !== undefined && !isTemplated(path)) return { methods: [...exact.methods].sort(), concrete: true };
      const methods = new Set<string>();
      for (const [url, { matcher, methods: taken }] of routes)
        if (isTemplated(url) && matcher.test(path)) for (const method of taken) methods.add(method);
      return { methods: [...methods].sort(), concrete: false };
    },
  };
}

/**
 * A method no route takes at a path that exists is a 405 with `Allow`
 * listing the methods that path takes (RFC 9110), not a 404: a client learns
 * it used the wrong method, not that the resource is missing. Decided before
 * anything else about the request (no key check, no body read): which methods
 * exist is in the public OpenAPI document anyway. A concrete path is not
 * handed to a templated route of another method (`GET /v1/runs/rerun` is a
 * 405, not a lookup of run "rerun"). Register before the routes.
 */
export function registerMethodNotAllowed(app: FastifyInstance): void {
  const index = createMethodIndex();
  app.addHook('onRoute', (route) => index.add(route.url, route.method));
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0] ?? request.url;
    const { methods: allowed, concrete } = index.methodsAt(path);
    if (allowed.length === 0 || allowed.includes(request.method)) return;
    // A templated route took the request (the router's choice); only a concrete path overrules it.
    if (!request.is404 && !concrete) return;
    // A CORS preflight a route answers (OPTIONS /codec/:operation beside POST /codec/decode) is that route's.
    if (!request.is404 && request.method === 'OPTIONS') return;
    const body = problem(
      'method_not_allowed',
      405,
      'Method not allowed',
      `${path} takes ${allowed.join(', ')}, not ${request.method}`,
    );
    return reply
      .status(405)
      .header('allow', allowed.join(', '))
      .type('application/problem+json')
      .send({ ...body, instance: request.url, request_id: request.id });
  });
}
