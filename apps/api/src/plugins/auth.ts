import { createHash, timingSafeEqual } from 'node:crypto';
import { UnauthorizedError } from '@activity-core/contracts';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Which key set a route accepts. Declared per route in `config.auth`. */
export type AuthScope = 'public' | 'management' | 'ingest' | 'webhook';

/** One registered route and the key set it accepts; `public` routes need none. */
export interface RouteScope {
  method: string;
  url: string;
  scope: AuthScope;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthScope;
  }
  interface FastifyInstance {
    /** Every route the server has, with its auth scope, in registration order. */
    readonly routeScopes: readonly RouteScope[];
  }
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** `sha256:<64 hex>`: a key configured by its digest, so the configuration need not hold the key. */
const PREHASHED = /^sha256:([0-9a-fA-F]{64})$/;

/**
 * Keys are kept only as SHA-256 digests and compared digest-to-digest with
 * timingSafeEqual: equal lengths always, and no early exit on the first
 * differing byte. A configured entry of the form `sha256:<hex>` is taken as
 * the digest itself.
 */
export function createKeyMatcher(keys: readonly string[]): (candidate: string) => boolean {
  const digests = keys.map((key) => {
    const prehashed = PREHASHED.exec(key)?.[1];
    return prehashed === undefined ? digest(key) : Buffer.from(prehashed, 'hex');
  });
  return (candidate) => {
    const probe = digest(candidate);
    let found = false;
    for (const known of digests) found = timingSafeEqual(known, probe) || found;
    return found;
  };
}

/** The key in `Authorization: Bearer <key>`, if any. */
export function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export interface AuthOptions {
  apiKeys: readonly string[];
  ingestKeys: readonly string[];
}

/**
 * Every route declares its scope; a route without one is refused at
 * registration, so nothing is public by accident. With no keys configured
 * authentication is off (the server then listens on loopback only — main.ts).
 */
export function registerAuth(app: FastifyInstance, options: AuthOptions): void {
  const management = createKeyMatcher(options.apiKeys);
  const ingest = createKeyMatcher([...options.ingestKeys, ...options.apiKeys]);
  const enabled = options.apiKeys.length > 0;

  const routes: RouteScope[] = [];
  app.decorate('routeScopes', routes);
  app.addHook('onRoute', (route) => {
    const declared = (route.config as { auth?: AuthScope } | undefined)?.auth;
    // The Swagger UI's own routes are the only ones allowed to be implicitly public.
    if (declared === undefined && !route.url.startsWith('/docs')) {
      throw new Error(`route ${route.method} ${route.url} declares no auth scope`);
    }
    const scope = declared ?? 'public';
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, scope });
  });

  app.addHook('onRequest', async (request) => {
    const scope = request.routeOptions.config.auth ?? 'public';
    if (!enabled || scope === 'public' || scope === 'webhook') return;
    const key = bearer(request);
    if (key === undefined) throw new UnauthorizedError('missing API key: send Authorization: Bearer <key>');
    const ok = scope === 'management' ? management(key) : ingest(key);
    if (!ok) throw new UnauthorizedError('invalid API key');
  });
}
