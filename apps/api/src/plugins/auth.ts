import { createHash, timingSafeEqual } from 'node:crypto';
import { KEY_ROLES, keyIdOf, type ApiKeyRole, type KeyRole } from '@activity-core/config';
import { ForbiddenError, UnauthorizedError } from '@activity-core/contracts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addressBucket } from './client-address';

/** Which key set a route accepts. Declared per route in `config.auth`. */
export type AuthScope = 'public' | 'management' | 'ingest' | 'webhook';

/**
 * What a route acts on, for a key that owns only some activities
 * (`activity_prefixes`): `activity` (the `:id` in the path and the `name` in
 * the body), `run` (the activity of the `:run_id`), `run_selection` (the
 * activity a bulk re-run's `filter.activity_id` names, which such a key must
 * give) or `installation` (shared by every team: webhook sources, the schedule
 * reconcile), which such a key may not act on. Routes without one (reads,
 * sending events, the codec) are open to the key whatever it owns.
 */
export type OwnedTarget = 'activity' | 'run' | 'run_selection' | 'installation';

/** One registered route, the key set it accepts and, for a keyed route, the least role it needs. */
interface RouteScope {
  method: string;
  url: string;
  scope: AuthScope;
  /** Undefined only on public and webhook routes. */
  role?: KeyRole;
  owns?: OwnedTarget;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthScope;
    /** The least role (API_KEY_ROLES) an API key needs here; required on `management` and `ingest` routes. */
    role?: KeyRole;
    owns?: OwnedTarget;
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
  /** An API key's role (`admin` without an API_KEY_ROLES entry); undefined for ingest keys. */
  role?: KeyRole;
  /** The activity-name prefixes an API key owns; undefined: every activity. */
  activityPrefixes?: readonly string[];
}

/** Whether a key of role `held` may use a route that needs `needed` (roles include the ones below them). */
export function roleAllows(held: KeyRole, needed: KeyRole): boolean {
  return KEY_ROLES.indexOf(held) >= KEY_ROLES.indexOf(needed);
}

/** Whether an activity with this name belongs to a key owning these prefixes (undefined: every activity). */
export function ownsActivity(prefixes: readonly string[] | undefined, name: string): boolean {
  return prefixes === undefined || prefixes.some((prefix) => name.startsWith(prefix));
}

/** Looks up what an owned-target check compares against the key's prefixes. */
export interface OwnershipLookup {
  /** An activity's name, deleted ones included; undefined when no activity has the id. */
  activityName(id: string): Promise<string | undefined>;
  /** The activity a run belongs to; undefined when no run has the id. */
  runActivity(runId: string): Promise<string | undefined>;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** `sha256:<64 hex>`: a key configured by its digest, so the configuration need not hold the key. */
const PREHASHED = /^sha256:([0-9a-fA-F]{64})$/;

/**
 * Keys are kept only as SHA-256 digests and compared digest-to-digest with
 * timingSafeEqual: equal lengths always, and no early exit on the first
 * differing byte. A configured entry of the form `sha256:<hex>` is taken as
 * the digest itself. Answers the id (keyIdOf) of the matching key.
 */
function createKeyIdentifier(keys: readonly string[]): (candidate: string) => string | undefined {
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
  /** API_KEY_ROLES: role and owned prefixes by key id; a key without an entry is admin on every activity. */
  apiKeyRoles?: Readonly<Record<string, ApiKeyRole>>;
  /** Needed when any key owns prefixes: how a route's target is resolved to an activity name. */
  ownership?: OwnershipLookup;
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

const KEYED_SCOPES = new Set<AuthScope>(['management', 'ingest']);

/** What a key with prefixes is refused with: which activities it owns, and what the request touches. */
function notOwned(prefixes: readonly string[], what: string, path: string): ForbiddenError {
  const owned = prefixes.join(', ');
  return new ForbiddenError(`this API key owns only activities whose names start with ${owned}; ${what}`, [
    { path, message: `must be an activity whose name starts with ${owned}` },
  ]);
}

/** The activity names a request on an `activity`, `run` or `run_selection` route touches, each with the field that names it. */
async function touchedActivities(
  owns: Exclude<OwnedTarget, 'installation'>,
  request: FastifyRequest,
  lookup: OwnershipLookup,
  prefixes: readonly string[],
): Promise<Array<{ name: string; path: string; what: string }>> {
  const params = (request.params ?? {}) as Record<string, unknown>;
  const body = (request.body ?? {}) as Record<string, unknown>;
  const touched: Array<{ name: string; path: string; what: string }> = [];
  const activity = async (id: string, path: string, what: string): Promise<void> => {
    const name = await lookup.activityName(id);
    if (name !== undefined) touched.push({ name, path, what: `${what} ${id} is ${name}` });
  };
  if (owns === 'activity') {
    if (typeof params.id === 'string') await activity(params.id, 'id', 'activity');
    if (typeof body.name === 'string')
      touched.push({ name: body.name, path: 'name', what: `the name is ${body.name}` });
  } else if (owns === 'run') {
    const activityId = typeof params.run_id === 'string' ? await lookup.runActivity(params.run_id) : undefined;
    if (activityId !== undefined) await activity(activityId, 'run_id', `the run's activity`);
  } else {
    const filter = (body.filter ?? {}) as Record<string, unknown>;
    if (typeof filter.activity_id !== 'string')
      throw notOwned(prefixes, 'a bulk re-run must name one of them in filter.activity_id', 'filter.activity_id');
    const name = await lookup.activityName(filter.activity_id);
    touched.push({
      name: name ?? '',
      path: 'filter.activity_id',
      what: `activity ${filter.activity_id} is ${name ?? 'unknown'}`,
    });
  }
  return touched;
}

/**
 * Every route declares its scope, and every keyed route the least role it
 * needs; a route without them is refused at registration, so nothing is
 * public, or open to every role, by accident. With no keys configured
 * authentication is off (the server then listens on loopback only — main.ts)
 * and every request may do everything.
 */
export function registerAuth(app: FastifyInstance, options: AuthOptions): void {
  const management = createKeyIdentifier(options.apiKeys);
  const ingest = createKeyIdentifier(options.ingestKeys);
  const enabled = options.apiKeys.length > 0;
  const roles = options.apiKeyRoles ?? {};

  const routes: RouteScope[] = [];
  app.decorate('routeScopes', routes);
  app.addHook('onRoute', (route) => {
    const config = route.config as { auth?: AuthScope; role?: KeyRole; owns?: OwnedTarget } | undefined;
    const declared = config?.auth;
    // The Swagger UI's own routes are the only ones allowed to be implicitly public.
    if (declared === undefined && !route.url.startsWith('/docs')) {
      throw new Error(`route ${route.method} ${route.url} declares no auth scope`);
    }
    const scope = declared ?? 'public';
    if (KEYED_SCOPES.has(scope) && config?.role === undefined) {
      throw new Error(`route ${route.method} ${route.url} declares no role (config.role: ${KEY_ROLES.join(', ')})`);
    }
    for (const method of [route.method].flat()) {
      routes.push({
        method,
        url: route.url,
        scope,
        ...(config?.role === undefined ? {} : { role: config.role }),
        ...(config?.owns === undefined ? {} : { owns: config.owns }),
      });
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    const { auth: scope = 'public', role: needed } = request.routeOptions.config;
    if (!enabled || scope === 'public' || scope === 'webhook') return;
    const { failures } = options;
    const refuse = (message: string): never => {
      const wait = failures?.hit(addressBucket(request.ip));
      if (failures !== undefined && typeof wait === 'number') throw tooManyFailures(reply, failures, wait);
      throw new UnauthorizedError(message);
    };
    const key = bearer(request);
    if (key === undefined) return refuse('missing API key: send Authorization: Bearer <key>');
    // API keys are accepted for ingest too, as far as their role allows.
    const apiKeyId = management(key);
    const ingestKeyId = apiKeyId === undefined ? ingest(key) : undefined;
    // A known ingest key outside the ingest routes is a key without the right (403), not an unknown one (401).
    if (ingestKeyId !== undefined && scope !== 'ingest')
      throw new ForbiddenError(
        `an ingest key only sends events; ${request.method} ${request.routeOptions.url} needs an API key`,
        [{ path: 'authorization', message: 'needs an API key (API_KEYS), not an ingest key' }],
      );
    if (apiKeyId !== undefined) {
      const entry = roles[apiKeyId];
      request.credential = {
        kind: 'api_key',
        id: apiKeyId,
        role: entry?.role ?? 'admin',
        ...(entry?.activity_prefixes === undefined ? {} : { activityPrefixes: entry.activity_prefixes }),
      };
      const role = request.credential.role!;
      if (needed !== undefined && !roleAllows(role, needed)) {
        throw new ForbiddenError(
          `this API key's role is ${role}; ${request.method} ${request.routeOptions.url} needs ${needed} or above (API_KEY_ROLES)`,
          [{ path: 'authorization', message: `needs a key with role ${needed} or above` }],
        );
      }
    } else if (ingestKeyId !== undefined) request.credential = { kind: 'ingest_key', id: ingestKeyId };
    else refuse('invalid API key');
  });

  // After validation: an owned target can be named in the body, which is parsed and checked by then.
  app.addHook('preHandler', async (request) => {
    const prefixes = request.credential?.activityPrefixes;
    const owns = request.routeOptions.config.owns;
    if (prefixes === undefined || owns === undefined) return;
    if (owns === 'installation') {
      throw notOwned(
        prefixes,
        `${request.method} ${request.routeOptions.url} acts on what every team shares and needs a key without activity_prefixes`,
        'authorization',
      );
    }
    const lookup = options.ownership;
    if (lookup === undefined)
      throw new Error('API_KEY_ROLES names activity_prefixes but the server has no ownership lookup');
    for (const touched of await touchedActivities(owns, request, lookup, prefixes)) {
      if (!ownsActivity(prefixes, touched.name)) throw notOwned(prefixes, touched.what, touched.path);
    }
  });
}
