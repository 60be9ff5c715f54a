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

/** Which methods the registered routes take, by route URL; answers the methods a request path has. */
export function createMethodIndex() {
  const routes = new Map<string, { matcher: RegExp; methods: Set<string> }>();
  return {
    add(url: string, methods: string | readonly string[]): void {
      const entry = routes.get(url) ?? { matcher: routePathMatcher(url), methods: new Set<string>() };
      for (const method of [methods].flat()) entry.methods.add(method.toUpperCase());
      // HEAD is answered wherever GET is (fastify's exposeHeadRoutes).
      if (entry.methods.has('GET')) entry.methods.add('HEAD');
      routes.set(url, entry);
    },
    /** The methods some route takes at this path (no query string); empty when no route has the path. */
    methodsAt(path: string): string[] {
      const methods = new Set<string>();
      for (const { matcher, methods: taken } of routes.values()) if (matcher.test(path)) for (const method of taken) methods.add(method);
      return [...methods].sort();
    },
  };
}

/**
 * A method no route takes at a path that exists is a 405 with `Allow`
 * listing the methods that path takes (RFC 9110), not a 404: a client learns
 * it used the wrong method, not that the resource is missing. Decided before
 * anything else about the request (no key check, no body read): which methods
 * exist is in the public OpenAPI document anyway. Register before the routes.
 */
export function registerMethodNotAllowed(app: FastifyInstance): void {
  const index = createMethodIndex();
  app.addHook('onRoute', (route) => index.add(route.url, route.method));
  app.addHook('onRequest', async (request, reply) => {
    if (!request.is404) return;
    const path = request.url.split('?')[0] ?? request.url;
    const allowed = index.methodsAt(path);
    if (allowed.length === 0 || allowed.includes(request.method)) return;
    const body = problem('method_not_allowed', 405, 'Method not allowed', `${path} takes ${allowed.join(', ')}, not ${request.method}`);
    return reply
      .status(405)
      .header('allow', allowed.join(', '))
      .type('application/problem+json')
      .send({ ...body, instance: request.url, request_id: request.id });
  });
}
