import { createHash, timingSafeEqual } from 'node:crypto';
import { keyIdOf } from '@activity-core/config';
import { UnauthorizedError } from '@activity-core/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addressBucket } from './client-address';

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
  interface FastifyRequest {
    /**
     * The key that authenticated this request, by id (never the key itself);
     * undefined on public and webhook routes and while authentication is off.
     */
    credential?: RequestCredential;
  }
  interface FastifyInstance {
    /** Every route the server has, with its auth scope, in registration order. */
    readonly routeScopes: readonly RouteScope[];
  }
}

/** Which configured key a request used: its set and its id (keyIdOf: 12 hex digits of its SHA-256). */
export interface RequestCredential {
  kind: 'api_key' | 'ingest_key';
  id: string;
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
  const identify = createKeyIdentifier(keys);
  return (candidate) => identify(candidate) !== undefined;
}

/** Like createKeyMatcher, but answers the id (keyIdOf) of the matching key. */
export function createKeyIdentifier(keys: readonly string[]): (candidate: string) => string | undefined {
  const known = keys.map((key) => {
    const prehashed = PREHASHED.exec(key)?.[1];
    return { digest: prehashed === undefined ? digest(key) : Buffer.from(prehashed, 'hex'), id: keyIdOf(key) };
  });
  return (candidate) => {
    const probe = digest(candidate);
    let found: string | undefined;
    // Every entry is compared, whichever matches.
    for (const entry of known) if (timingSafeEqual(entry.digest, probe)) found ??= entry.id;
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
  /**
   * Failed attempts (missing or wrong key) per client address bucket
   * (AUTH_FAILURE_LIMIT; an IPv6 /64, see addressBucket). Past it, missing and
   * wrong keys from the address get 429 instead of 401. A right key always
   * passes: clients behind one NAT share an address, and one of them guessing
   * must not lock the others out. (Keys are at least 32 random characters, so
   * telling a right guess from a wrong one is worth nothing to a guesser.)
   */
  failures?: { max: number; windowMs: number; hit(address: string): number | undefined };
}

function tooManyFailures(reply: FastifyReply, limit: { max: number; windowMs: number }, waitSeconds: number): Error {
  reply.header('retry-after', String(waitSeconds));
  return Object.assign(
    new Error(
      `too many failed API key attempts from this address (limit ${limit.max} per ${Math.round(limit.windowMs / 1000)} s); retry in ${waitSeconds} s`,
    ),
    { statusCode: 429 },
  );
}

/**
 * Every route declares its scope; a route without one is refused at
 * registration, so nothing is public by accident. With no keys configured
 * authentication is off (the server then listens on loopback only — main.ts).
 */
export function registerAuth(app: FastifyInstance, options: AuthOptions): void {
  const management = createKeyIdentifier(options.apiKeys);
  const ingest = createKeyIdentifier(options.ingestKeys);
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

  app.addHook('onRequest', async (request, reply) => {
    const scope = request.routeOptions.config.auth ?? 'public';
    if (!enabled || scope === 'public' || scope === 'webhook') return;
    const { failures } = options;
    const refuse = (message: string): never => {
      const wait = failures?.hit(addressBucket(request.ip));
      if (failures !== undefined && typeof wait === 'number') throw tooManyFailures(reply, failures, wait);
      throw new UnauthorizedError(message);
    };
    const key = bearer(request);
    if (key === undefined) return refuse('missing API key: send Authorization: Bearer <key>');
    // API keys are accepted for ingest too, with full rights.
    const apiKeyId = management(key);
    const ingestKeyId = scope === 'ingest' && apiKeyId === undefined ? ingest(key) : undefined;
    if (apiKeyId !== undefined) request.credential = { kind: 'api_key', id: apiKeyId };
    else if (ingestKeyId !== undefined) request.credential = { kind: 'ingest_key', id: ingestKeyId };
    else refuse('invalid API key');
  });
}
