import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';

const csv = z
  .string()
  .default('')
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0),
  );

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

/**
 * `TASK_SECRET_<NAME>` holds the secret `http` tasks reference as
 * `{{ secrets.NAME }}`. Kept equal to TASK_SECRET_ENV_PREFIX and
 * SECRET_NAME_PATTERN in @activity-core/contracts (config depends on zod only).
 */
const TASK_SECRET_PREFIX = 'TASK_SECRET_';
const TASK_SECRET_NAME = /^[A-Z][A-Z0-9_]*$/;

/**
 * The worker's task secrets. The values sit in a private field, so logging or
 * serialising the config (or this object) shows the names only.
 */
export class TaskSecrets {
  readonly #values: ReadonlyMap<string, string>;

  constructor(values: Iterable<readonly [string, string]> = []) {
    this.#values = new Map(values);
  }

  get(name: string): string | undefined {
    return this.#values.get(name);
  }

  get names(): string[] {
    return [...this.#values.keys()].sort();
  }

  toJSON(): { names: string[] } {
    return { names: this.names };
  }
}

/** A PEM value given either as a file to read at start-up or inline; `setting` names it in errors. */
export type PemSource = { setting: string; path: string } | { setting: string; data: string };

/** TLS towards Temporal; null means plain TCP (the dev server). */
export interface TemporalTlsConfig {
  serverCa: PemSource | null;
  serverName: string | null;
  client: { cert: PemSource; key: PemSource } | null;
}

type TemporalTlsEnv = {
  TEMPORAL_TLS?: boolean | undefined;
  TEMPORAL_TLS_SERVER_CA_CERT_PATH?: string | undefined;
  TEMPORAL_TLS_SERVER_CA_CERT_DATA?: string | undefined;
  TEMPORAL_TLS_SERVER_NAME?: string | undefined;
  TEMPORAL_TLS_CLIENT_CERT_PATH?: string | undefined;
  TEMPORAL_TLS_CLIENT_CERT_DATA?: string | undefined;
  TEMPORAL_TLS_CLIENT_KEY_PATH?: string | undefined;
  TEMPORAL_TLS_CLIENT_KEY_DATA?: string | undefined;
  TEMPORAL_API_KEY?: string | undefined;
};

function pemSource(
  env: TemporalTlsEnv,
  base: 'TEMPORAL_TLS_SERVER_CA_CERT' | 'TEMPORAL_TLS_CLIENT_CERT' | 'TEMPORAL_TLS_CLIENT_KEY',
): PemSource | null {
  const path = env[`${base}_PATH`];
  if (path !== undefined) return { setting: `${base}_PATH`, path };
  const data = env[`${base}_DATA`];
  if (data !== undefined) return { setting: `${base}_DATA`, data };
  return null;
}

function temporalTls(env: TemporalTlsEnv): TemporalTlsConfig | null {
  const serverCa = pemSource(env, 'TEMPORAL_TLS_SERVER_CA_CERT');
  const cert = pemSource(env, 'TEMPORAL_TLS_CLIENT_CERT');
  const key = pemSource(env, 'TEMPORAL_TLS_CLIENT_KEY');
  const serverName = env.TEMPORAL_TLS_SERVER_NAME ?? null;
  const implied = serverCa !== null || cert !== null || serverName !== null || env.TEMPORAL_API_KEY !== undefined;
  if (env.TEMPORAL_TLS === false || (env.TEMPORAL_TLS === undefined && !implied)) return null;
  return { serverCa, serverName, client: cert !== null && key !== null ? { cert, key } : null };
}

const TEMPORAL_PEM_SETTINGS = [
  'TEMPORAL_TLS_SERVER_CA_CERT',
  'TEMPORAL_TLS_CLIENT_CERT',
  'TEMPORAL_TLS_CLIENT_KEY',
] as const;

function temporalTlsIssues(env: TemporalTlsEnv): Array<{ path: string; message: string }> {
  const issues: Array<{ path: string; message: string }> = [];
  for (const base of TEMPORAL_PEM_SETTINGS) {
    if (env[`${base}_PATH`] !== undefined && env[`${base}_DATA`] !== undefined) {
      issues.push({ path: `${base}_DATA`, message: `set ${base}_PATH or ${base}_DATA, not both` });
    }
  }
  const cert = pemSource(env, 'TEMPORAL_TLS_CLIENT_CERT');
  const key = pemSource(env, 'TEMPORAL_TLS_CLIENT_KEY');
  if (cert !== null && key === null)
    issues.push({
      path: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
      message: 'mTLS needs the client key too (TEMPORAL_TLS_CLIENT_KEY_PATH or _DATA)',
    });
  if (key !== null && cert === null)
    issues.push({
      path: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
      message: 'mTLS needs the client certificate too (TEMPORAL_TLS_CLIENT_CERT_PATH or _DATA)',
    });
  if (env.TEMPORAL_TLS === false) {
    const conflicting = [
      ...TEMPORAL_PEM_SETTINGS.flatMap((base) => [`${base}_PATH`, `${base}_DATA`]),
      'TEMPORAL_TLS_SERVER_NAME',
      'TEMPORAL_API_KEY',
    ].filter((name) => env[name as keyof TemporalTlsEnv] !== undefined);
    if (conflicting.length > 0)
      issues.push({ path: 'TEMPORAL_TLS', message: `is false, but ${conflicting.join(', ')} need TLS` });
  }
  return issues;
}

/**
 * The payload encryption keys, first one current. The key bytes sit in a
 * private field, so logging or serialising the config shows the ids only.
 */
export class PayloadKeys {
  readonly #keys: ReadonlyArray<{ id: string; key: Buffer }>;

  constructor(keys: ReadonlyArray<{ id: string; key: Buffer }>) {
    this.#keys = keys;
  }

  /** Every key, the one that seals new payloads first. */
  get all(): ReadonlyArray<{ id: string; key: Buffer }> {
    return this.#keys;
  }

  get ids(): string[] {
    return this.#keys.map((entry) => entry.id);
  }

  toJSON(): { ids: string[] } {
    return { ids: this.ids };
  }
}

/** The Temporal UI's origin; for a loopback UI both spellings, since the browser sends whichever was typed. */
function defaultCodecOrigins(uiUrl: string): string[] {
  const url = new URL(uiUrl);
  if (url.hostname !== 'localhost' && url.hostname !== '127.0.0.1') return [url.origin];
  return ['localhost', '127.0.0.1'].map((host) => `${url.protocol}//${host}${url.port === '' ? '' : `:${url.port}`}`);
}

function taskSecretVariables(env: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(env).filter(([key]) => key.startsWith(TASK_SECRET_PREFIX));
}

/**
 * The id of a configured key (API_KEYS / INGEST_KEYS entry): the first 12 hex
 * digits of its SHA-256, so an id names a key without revealing it. An entry
 * `sha256:<hex>` is the digest already. Compute one with
 * `printf %s "$KEY" | sha256sum | cut -c1-12`.
 */
export function keyIdOf(entry: string): string {
  const prehashed = /^sha256:([0-9a-fA-F]{64})$/.exec(entry)?.[1];
  return (prehashed ?? createHash('sha256').update(entry).digest('hex')).slice(0, 12).toLowerCase();
}

/** `*` matches any run of characters; everything else matches itself. */
const ScopePattern = z.string().min(1).max(500);

/** What one ingest key may send: omitted lists allow everything. */
const IngestKeyScope = z
  .object({
    /** Patterns the event's `source` must match, e.g. `shop:*`. */
    sources: z.array(ScopePattern).min(1).max(50).optional(),
    /** Patterns the event's `event_type` must match, e.g. `order.*`. */
    event_types: z.array(ScopePattern).min(1).max(50).optional(),
  })
  .strict();
export type IngestKeyScope = z.infer<typeof IngestKeyScope>;

/** A setting holding a JSON object keyed by key id (default `{}`), each value checked by `entry`. */
function jsonByKeyId<T extends z.ZodType>(entry: T, example: string) {
  return z
    .string()
    .default('{}')
    .transform((value, ctx) => {
      try {
        return JSON.parse(value) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: `must be JSON: ${example}` });
        return z.NEVER;
      }
    })
    .pipe(z.record(z.string(), entry));
}

const IngestKeyScopes = jsonByKeyId(
  IngestKeyScope,
  '{"<key id>": {"sources": ["shop:*"], "event_types": ["order.*"]}}',
);

/**
 * What a management key may do, lowest first; each role includes the ones
 * before it. `read`: every GET (payloads the API shows included); `operate`:
 * the operator's actions on runs and schedules, enabling and disabling, sending
 * events, decrypting payloads through the codec endpoint; `write`: definitions
 * and webhook sources; `admin`: everything (the role of a key without an entry).
 */
export const KEY_ROLES = ['read', 'operate', 'write', 'admin'] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

/** An activity-name prefix a key owns: printable, no spaces, like the names it matches. */
const ActivityPrefix = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/** What one API key may do: its role, and optionally the activities it owns by name prefix. */
const ApiKeyRole = z
  .object({
    role: z.enum(KEY_ROLES),
    /** Names the key's changes and operator actions are limited to, e.g. `billing.`; omitted: every activity. */
    activity_prefixes: z.array(ActivityPrefix).min(1).max(50).optional(),
  })
  .strict();
export type ApiKeyRole = z.infer<typeof ApiKeyRole>;

const ApiKeyRoles = jsonByKeyId(ApiKeyRole, '{"<key id>": {"role": "operate", "activity_prefixes": ["billing."]}}');

/** An HTTP_TASK_EGRESS_ALLOW entry: CIDR, IP address, hostname or `*.suffix`. */
function isEgressAllowEntry(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address.replace(/^\[(.*)\]$/, '$1'));
  if (version !== 0)
    return (
      rest.length === 0 &&
      (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128)))
    );
  return (
    prefix === undefined &&
    /^(\*\.)?[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i.test(entry) &&
    entry.length <= 255
  );
}

/** The OTLP/HTTP traces endpoint the OTEL_* settings name, with the collector headers; null when traces are off. */
function otelTracing(env: {
  OTEL_TRACES_EXPORTER?: 'otlp' | 'none' | undefined;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_HEADERS: string[];
  OTEL_SERVICE_NAME?: string | undefined;
}): { endpoint: string; headers: Record<string, string>; serviceName: string | null } | null {
  if (env.OTEL_TRACES_EXPORTER === 'none') return null;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const endpoint =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (base === undefined ? undefined : `${base.replace(/\/$/, '')}/v1/traces`) ??
    (env.OTEL_TRACES_EXPORTER === 'otlp' ? 'http://localhost:4318/v1/traces' : undefined);
  if (endpoint === undefined) return null;
  const headers = Object.fromEntries(
    env.OTEL_EXPORTER_OTLP_HEADERS.map((entry) => [
      entry.slice(0, entry.indexOf('=')).trim(),
      decodeURIComponent(entry.slice(entry.indexOf('=') + 1).trim()),
    ]),
  );
  return { endpoint, headers, serviceName: env.OTEL_SERVICE_NAME ?? null };
}

/** Shortest API_KEYS / INGEST_KEYS entry accepted (unless given as `sha256:<hex>`). */
export const MIN_KEY_LENGTH = 32;

/**
 * Every setting activity-core reads, parsed once at start-up. Nothing else in
 * the codebase reads `process.env`.
 */
export const ConfigSchema = z
  .object({
    /** Postgres for activity-core's own records. Required. */
    DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL'),
    /** Temporal frontend. @default "127.0.0.1:7233" (the dev server) */
    TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
    /** @default "default" */
    TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
    /** The one task queue every run and task workflow uses. @default "activity-core" */
    TEMPORAL_TASK_QUEUE: z.string().min(1).default('activity-core'),
    /** Where operators open runs; used for links in API responses and logs. @default "http://127.0.0.1:8233" */
    TEMPORAL_UI_URL: z.string().url().default('http://127.0.0.1:8233'),
    /**
     * Connect to Temporal over TLS (server certificate checked against the
     * system's CAs, or TEMPORAL_TLS_SERVER_CA_CERT_*). Turned on by any of the
     * TLS settings below and by TEMPORAL_API_KEY; `false` forbids TLS even
     * then. The names are Temporal's own client environment settings.
     * @default off
     */
    TEMPORAL_TLS: bool.optional(),
    /** PEM of the CA that signed the Temporal frontend's certificate (a private CA); file path or the PEM itself. */
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: z.string().min(1).optional(),
    TEMPORAL_TLS_SERVER_CA_CERT_DATA: z.string().min(1).optional(),
    /** Host name the server certificate must carry, when it differs from TEMPORAL_ADDRESS's host (SNI). */
    TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
    /** mTLS: the client certificate chain (PEM) this process presents; file path or the PEM itself. */
    TEMPORAL_TLS_CLIENT_CERT_PATH: z.string().min(1).optional(),
    TEMPORAL_TLS_CLIENT_CERT_DATA: z.string().min(1).optional(),
    /** mTLS: the client certificate's private key (PEM); file path or the PEM itself. */
    TEMPORAL_TLS_CLIENT_KEY_PATH: z.string().min(1).optional(),
    TEMPORAL_TLS_CLIENT_KEY_DATA: z.string().min(1).optional(),
    /** API key (Temporal Cloud), sent as a bearer token on every call; implies TLS. */
    TEMPORAL_API_KEY: z.string().min(1).optional(),
    /**
     * Keys that encrypt every payload this service hands Temporal (event data,
     * definitions, task results) with AES-256-GCM, comma-separated
     * `<key id>:<32 bytes in base64>`. The first seals new payloads; all open
     * stored ones, so keys rotate by id. API and workers need the same set.
     * Empty (the default): payloads are stored as plain JSON.
     */
    PAYLOAD_ENCRYPTION_KEYS: csv.pipe(
      z
        .array(
          z
            .string()
            .regex(
              /^[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/]+={0,2}$/,
              'each entry must be <key id>:<base64 key>, e.g. k2026:$(openssl rand -base64 32)',
            )
            .refine(
              (entry) => Buffer.from(entry.slice(entry.indexOf(':') + 1), 'base64').length === 32,
              'each key must be 32 bytes in base64 (openssl rand -base64 32)',
            ),
        )
        .refine(
          (entries) => new Set(entries.map((entry) => entry.slice(0, entry.indexOf(':')))).size === entries.length,
          'key ids must be unique',
        ),
    ),
    /**
     * Browser origins allowed to call the codec endpoint (`/codec/decode`),
     * comma-separated. @default the origin of TEMPORAL_UI_URL (with both
     * `localhost` and `127.0.0.1` when it is one of them)
     */
    CODEC_CORS_ORIGINS: csv,
    /** @default "127.0.0.1" — loopback unless you say otherwise. */
    HOST: z.string().min(1).default('127.0.0.1'),
    /** @default 3000 */
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    /**
     * Bearer keys for the management API, comma-separated. An entry may be
     * `sha256:<64 hex digits>`, the SHA-256 of a key, so the configuration
     * need not hold the key itself. Empty: authentication is off and the
     * server listens on loopback only.
     */
    API_KEYS: csv,
    /** Keys for POST /v1/events (same forms as API_KEYS), comma-separated; API keys are accepted too. */
    INGEST_KEYS: csv,
    /**
     * Scopes for INGEST_KEYS entries, as JSON keyed by key id (see keyIdOf):
     * `{"3f9a0c1b2d4e": {"sources": ["shop:*"], "event_types": ["order.*"]}}`.
     * `*` matches any run of characters. A key without an entry may send any
     * non-reserved source and type; API keys are never scoped. @default {}
     */
    INGEST_KEY_SCOPES: IngestKeyScopes,
    /**
     * Roles for API_KEYS entries, as JSON keyed by key id (see keyIdOf):
     * `{"3f9a0c1b2d4e": {"role": "write", "activity_prefixes": ["billing."]}}`.
     * A key without an entry is `admin` on every activity. @default {}
     */
    API_KEY_ROLES: ApiKeyRoles,
    /**
     * Most emit_event steps between an emitted event and the external event
     * that began the chain; an emit past it fails its task. @default 8
     */
    EMIT_MAX_HOPS: z.coerce.number().int().min(1).max(1000).default(8),
    /**
     * Most events emit_event tasks may emit from one root event (the external
     * event, cron or manual run that began the chain), over all hops and all
     * definitions; an emit past it fails its task. @default 500
     */
    EMIT_MAX_PER_ROOT: z.coerce.number().int().min(1).max(1_000_000).default(500),
    /**
     * Most bytes of run ids one concurrency queue holds (on_limit: queue); a
     * run beyond it is skipped with the reason. At most (and by default) half
     * of Temporal's 2 MiB payload limit, as the queue is carried across
     * continue-as-new in one payload.
     */
    CONCURRENCY_QUEUE_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(1)
      .max(1024 * 1024)
      .optional(),
    /** @default "info" */
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** `json` (one JSON object a line, for log collectors) or `pretty` (colored, for a terminal; needs pino-pretty). @default "json" */
    LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
    /**
     * OpenTelemetry traces: exported over OTLP/HTTP when an endpoint is set
     * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, used as is, or
     * OTEL_EXPORTER_OTLP_ENDPOINT plus `/v1/traces`) or OTEL_TRACES_EXPORTER is
     * `otlp` (then http://localhost:4318/v1/traces). `none` turns them off.
     * @default off
     */
    OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none']).optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
    /** Headers for the collector, `key=value` comma-separated (e.g. an API key). */
    OTEL_EXPORTER_OTLP_HEADERS: csv.pipe(z.array(z.string().regex(/^[^=\s]+=.*$/, 'each entry must be key=value'))),
    /** @default "activity-core-api" / "activity-core-worker" */
    OTEL_SERVICE_NAME: z.string().min(1).optional(),
    /** Largest request body accepted; larger ones get 413. @default 1048576 (1 MiB) */
    BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /**
     * Largest event `data` accepted, in bytes of its JSON; larger gets 413.
     * Every run, task and activity input carries the event, so this stays well
     * below Temporal's 2 MB payload limit. @default 262144 (256 KiB)
     */
    EVENT_DATA_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024)
      .default(256 * 1024),
    /** Deepest nesting of objects and arrays in event `data` (`data` is level 1); deeper gets 400. @default 32 */
    EVENT_DATA_MAX_DEPTH: z.coerce.number().int().min(1).max(128).default(32),
    /**
     * Allow 6-field (seconds-level) cron triggers. Off, such a trigger is
     * refused at registration (400 naming the cron field). @default false
     */
    CRON_ALLOW_SECONDS: bool.default(false),
    /** Most time a client has to send a whole request (headers and body); then 408 and the connection closes. @default 30000 */
    HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    /** Most time a client has to send the request headers; at most HTTP_REQUEST_TIMEOUT_MS. @default 10000 */
    HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    /** How long an idle keep-alive connection stays open; above a load balancer's idle timeout (often 60 s). @default 72000 */
    HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(72_000),
    /**
     * Worker only: where the Temporal SDK serves its Prometheus metrics
     * (`host:port`, scraped at `/metrics`): task latencies, poll results,
     * slots in use, sticky cache. Unset (the default): not served.
     */
    WORKER_METRICS_BIND_ADDRESS: z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/, 'must be host:port, e.g. 0.0.0.0:9464')
      .optional(),
    /**
     * Worker only: most workflow executions kept in memory between their
     * workflow tasks (the SDK's `maxCachedWorkflows`). One that is not cached
     * is replayed from its history when its next task arrives — a run's
     * history is short, so that costs milliseconds. The SDK's own default
     * grows with the heap limit (about 2,300 on a 4 GiB heap) and is what let
     * a worker reach 1 GB; see docs/performance.md. Each cached workflow
     * costs about 0.5 MB. At least 2: without a cache the SDK drops local
     * activities in flight at every eviction (the bookkeeping would be redone).
     * @default 20
     */
    WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(2).max(100_000).default(20),
    /**
     * Worker only: workflow tasks run at once (`maxConcurrentWorkflowTaskExecutions`),
     * 2–1000 and at most WORKER_MAX_CACHED_WORKFLOWS. Workflow code runs on one
     * thread, so more slots mostly queue. @default 10
     */
    WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: z.coerce.number().int().min(2).max(1000).default(10),
    /** Worker only: activities run at once (`http` tasks, emitted events, waits for a task; `maxConcurrentActivityTaskExecutions`). @default 100 */
    WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).default(100),
    /**
     * Worker only: local activities run at once (a run's and a task's
     * Postgres bookkeeping; `maxConcurrentLocalActivityExecutions`). Each holds
     * a pool connection, so more than DATABASE_POOL_SIZE only queue. @default 100
     */
    WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).default(100),
    /**
     * Worker only: destinations `http` tasks may reach although the egress
     * policy denies them (private, loopback, link-local, CGNAT, multicast…),
     * comma-separated: CIDRs (`10.20.0.0/16`, `fd00::/8`), addresses
     * (`127.0.0.1`), hostnames (`erp.internal`: any address it resolves to)
     * or `*.suffix`. @default "" (public addresses only)
     */
    HTTP_TASK_EGRESS_ALLOW: csv.pipe(
      z.array(
        z
          .string()
          .refine(
            isEgressAllowEntry,
            'each entry must be a CIDR (10.0.0.0/8, fd00::/8), an IP address, a hostname or *.suffix',
          ),
      ),
    ),
    /** Apply migrations at start-up (under an advisory lock). @default true */
    MIGRATE_ON_START: bool.default(true),
    /** Postgres pool size per process. @default 10 */
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
    /**
     * Run the hot statements (an event's accept and routing record) as named
     * prepared statements, planned once per connection. Turn off behind a
     * pooler in transaction mode that does not keep them (PgBouncer before
     * 1.21, or `max_prepared_statements = 0`). @default true
     */
    DATABASE_PREPARED_STATEMENTS: bool.default(true),
    /**
     * Days an accepted event, and so its id / Idempotency-Key, is remembered.
     * Unset (the default): forever, so a redelivery at any later time is
     * answered `duplicate` and never starts a second run. Set it
     * to bound the table; after expiry only Temporal's own memory of the run
     * (namespace retention) still stops a second run. See docs/ingress.md.
     * Choose it longer than any provider's redelivery window (Stripe and
     * GitHub retry for up to 3 days, Svix for about 5).
     */
    EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).optional(),
    /**
     * Days an accepted event's `data` is kept (1–3650), counted from
     * `received_at`; at most EVENT_RETENTION_DAYS when both are set. After it
     * the retention purger clears the data (the event's id, fingerprint and
     * decision log stay, so redeliveries are still duplicates) and a replay of
     * the event answers 410. Events whose routing is not final (pending,
     * in a debounce window, held, dead-lettered) keep their data. Unset (the
     * default): data is kept as long as the event. See docs/recovery.md.
     */
    EVENT_PAYLOAD_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).optional(),
    /**
     * The routing retry budget (docs/recovery.md, "Dead letters"): a route
     * whose run start keeps failing with an answer (Temporal refused it, our
     * own store failed), not with Temporal unreachable, becomes a dead letter
     * (`retry_budget_exhausted`) at this many attempts of its event or after
     * ROUTING_RETRY_MAX_AGE_SECONDS, whichever comes first. @default 100
     */
    ROUTING_RETRY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100_000).default(100),
    /** See ROUTING_RETRY_MAX_ATTEMPTS; counted from when the route was opened (accepted, or retried). @default 86400 (a day) */
    ROUTING_RETRY_MAX_AGE_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(86_400),
    /**
     * Requests per key (API/ingest key, webhook source, or client IP when
     * auth is off) per window, counted per API process; 0 turns limiting off.
     * A batch counts as one request. @default 1200 (20 per second on average)
     */
    RATE_LIMIT_MAX: z.coerce.number().int().min(0).max(1_000_000).default(1200),
    /** The rate-limit window. @default 60 */
    RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
    /**
     * Failed attempts per client address per RATE_LIMIT_WINDOW_SECONDS, counted
     * separately for bearer keys (a missing or wrong key) and for webhook
     * deliveries that do not verify; past it the address gets 429 with
     * Retry-After until the window ends. 0 turns it off. @default 30
     */
    AUTH_FAILURE_LIMIT: z.coerce.number().int().min(0).max(1_000_000).default(30),
    /**
     * Which proxies to believe about the client address (X-Forwarded-For), so
     * per-address limits see the real client behind a load balancer:
     * `false` (the socket's peer is the client), `true` (trust every hop — only
     * if nothing can reach the API except through your proxy), a hop count
     * (`1`: the nearest proxy), or comma-separated addresses/CIDRs of your
     * proxies (`10.0.0.0/8,192.168.1.5`). @default false
     */
    TRUST_PROXY: z
      .string()
      .default('false')
      .transform((value, ctx): boolean | number | string[] => {
        const trimmed = value.trim();
        if (trimmed === 'false' || trimmed === '') return false;
        if (trimmed === 'true') return true;
        if (/^\d+$/.test(trimmed)) return Number(trimmed);
        const entries = trimmed
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry.length > 0);
        for (const entry of entries) {
          const [address = '', prefix, ...rest] = entry.split('/');
          const version = isIP(address);
          const prefixOk =
            prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128));
          if (version === 0 || rest.length > 0 || !prefixOk) {
            ctx.addIssue({
              code: 'custom',
              message: `must be true, false, a hop count, or comma-separated IP addresses/CIDRs; ${entry} is none of those`,
            });
            return z.NEVER;
          }
        }
        return entries;
      }),
    /**
     * Keys that encrypt webhook secrets at rest (AES-256-GCM), comma-separated,
     * each 32 bytes in base64. The first seals new secrets; all of them open
     * stored ones, so a key can be rotated. Empty: secrets are stored in
     * plain text (the server warns at start-up).
     */
    WEBHOOK_SECRET_KEYS: csv.pipe(
      z.array(
        z
          .string()
          .refine(
            (key) => Buffer.from(key, 'base64').length === 32 && /^[A-Za-z0-9+/]+={0,2}$/.test(key),
            'each key must be 32 bytes in base64 (openssl rand -base64 32)',
          ),
      ),
    ),
  })
  // Unknown keys are kept so the TASK_SECRET_* family (names not known in advance) can be read below.
  .loose()
  .refine((env) => env.INGEST_KEYS.length === 0 || env.API_KEYS.length > 0, {
    path: ['INGEST_KEYS'],
    message:
      'INGEST_KEYS needs API_KEYS too: without API keys authentication is off and the management API would be open',
  })
  .refine((env) => env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS <= env.WORKER_MAX_CACHED_WORKFLOWS, {
    path: ['WORKER_MAX_CONCURRENT_WORKFLOW_TASKS'],
    message: 'must be at most WORKER_MAX_CACHED_WORKFLOWS (a workflow task needs its workflow in the cache)',
  })
  .refine(
    (env) =>
      env.EVENT_PAYLOAD_RETENTION_DAYS === undefined ||
      env.EVENT_RETENTION_DAYS === undefined ||
      env.EVENT_PAYLOAD_RETENTION_DAYS <= env.EVENT_RETENTION_DAYS,
    {
      path: ['EVENT_PAYLOAD_RETENTION_DAYS'],
      message: 'must be at most EVENT_RETENTION_DAYS (an event is not kept without its id)',
    },
  )
  .refine((env) => env.HTTP_HEADERS_TIMEOUT_MS <= env.HTTP_REQUEST_TIMEOUT_MS, {
    path: ['HTTP_HEADERS_TIMEOUT_MS'],
    message: 'must be at most HTTP_REQUEST_TIMEOUT_MS (the headers are part of the request)',
  })
  .superRefine((env, ctx) => {
    for (const issue of temporalTlsIssues(env))
      ctx.addIssue({ code: 'custom', path: [issue.path], message: issue.message });
    const ingestIds = new Set(env.INGEST_KEYS.map(keyIdOf));
    for (const id of Object.keys(env.INGEST_KEY_SCOPES)) {
      if (!/^[0-9a-f]{12}$/.test(id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['INGEST_KEY_SCOPES', id],
          message:
            'keys must be key ids: the first 12 hex digits of the key\'s SHA-256 (printf %s "$KEY" | sha256sum | cut -c1-12)',
        });
      } else if (!ingestIds.has(id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['INGEST_KEY_SCOPES', id],
          message: `no INGEST_KEYS entry has the key id ${id} (API keys cannot be scoped)`,
        });
      }
    }
    const apiIds = new Set(env.API_KEYS.map(keyIdOf));
    for (const id of Object.keys(env.API_KEY_ROLES)) {
      if (!/^[0-9a-f]{12}$/.test(id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['API_KEY_ROLES', id],
          message:
            'keys must be key ids: the first 12 hex digits of the key\'s SHA-256 (printf %s "$KEY" | sha256sum | cut -c1-12)',
        });
      } else if (!apiIds.has(id)) {
        ctx.addIssue({
          code: 'custom',
          path: ['API_KEY_ROLES', id],
          message: `no API_KEYS entry has the key id ${id} (ingest keys are limited by INGEST_KEY_SCOPES)`,
        });
      }
    }
    for (const [key, value] of taskSecretVariables(env)) {
      const name = key.slice(TASK_SECRET_PREFIX.length);
      if (!TASK_SECRET_NAME.test(name)) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `the secret name after ${TASK_SECRET_PREFIX} must match ${TASK_SECRET_NAME.source}`,
        });
      } else if (typeof value !== 'string' || value.length === 0) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'must not be empty (unset it to remove the secret)' });
      }
    }
  })
  .superRefine((env, ctx) => {
    // A short key can be guessed; a `sha256:<hex>` entry hides the key's length, and is exempt.
    for (const setting of ['API_KEYS', 'INGEST_KEYS'] as const) {
      env[setting].forEach((entry, index) => {
        if (!/^sha256:[0-9a-fA-F]{64}$/.test(entry) && entry.length < MIN_KEY_LENGTH) {
          ctx.addIssue({
            code: 'custom',
            path: [setting, index],
            message: `entry ${index + 1} of ${setting} is ${entry.length} characters; keys must be at least ${MIN_KEY_LENGTH} (openssl rand -hex 32), or given as sha256:<64 hex digits>`,
          });
        }
      });
    }
  })
  .transform((env) => ({
    databaseUrl: env.DATABASE_URL,
    temporal: {
      address: env.TEMPORAL_ADDRESS,
      namespace: env.TEMPORAL_NAMESPACE,
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      uiUrl: env.TEMPORAL_UI_URL.replace(/\/$/, ''),
      tls: temporalTls(env),
      apiKey: env.TEMPORAL_API_KEY ?? null,
    },
    payloadEncryption:
      env.PAYLOAD_ENCRYPTION_KEYS.length === 0
        ? null
        : {
            keys: new PayloadKeys(
              env.PAYLOAD_ENCRYPTION_KEYS.map((entry) => ({
                id: entry.slice(0, entry.indexOf(':')),
                key: Buffer.from(entry.slice(entry.indexOf(':') + 1), 'base64'),
              })),
            ),
            codecCorsOrigins:
              env.CODEC_CORS_ORIGINS.length > 0 ? env.CODEC_CORS_ORIGINS : defaultCodecOrigins(env.TEMPORAL_UI_URL),
          },
    http: {
      host: env.HOST,
      port: env.PORT,
      bodyLimitBytes: env.BODY_LIMIT_BYTES,
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
      keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    /** Bounds on event `data`, checked at ingest (API and worker). */
    eventData: { maxBytes: env.EVENT_DATA_LIMIT_BYTES, maxDepth: env.EVENT_DATA_MAX_DEPTH },
    /** Seconds-level (6-field) cron triggers allowed (CRON_ALLOW_SECONDS). */
    cron: { allowSeconds: env.CRON_ALLOW_SECONDS },
    auth: {
      apiKeys: env.API_KEYS,
      ingestKeys: env.INGEST_KEYS,
      enabled: env.API_KEYS.length > 0,
      /** Each API key's role and owned name prefixes, by key id; a key without an entry is admin on everything. */
      apiKeyRoles: env.API_KEY_ROLES as Readonly<Record<string, ApiKeyRole>>,
    },
    /** What each scoped ingest key may send, by key id. */
    ingestKeyScopes: env.INGEST_KEY_SCOPES as Readonly<Record<string, IngestKeyScope>>,
    /** Worker only: the emit_event hop limit (EMIT_MAX_HOPS) and per-root budget (EMIT_MAX_PER_ROOT). */
    emit: { maxHops: env.EMIT_MAX_HOPS, maxPerRoot: env.EMIT_MAX_PER_ROOT },
    /** Worker only: the byte bound of a concurrency queue (CONCURRENCY_QUEUE_MAX_BYTES); undefined: the default. */
    concurrency: { queueMaxBytes: env.CONCURRENCY_QUEUE_MAX_BYTES },
    logLevel: env.LOG_LEVEL,
    logFormat: env.LOG_FORMAT,
    /** OpenTelemetry traces over OTLP/HTTP (OTEL_*); null: off. */
    tracing: otelTracing(env),
    migrateOnStart: env.MIGRATE_ON_START,
    databasePoolSize: env.DATABASE_POOL_SIZE,
    databasePreparedStatements: env.DATABASE_PREPARED_STATEMENTS,
    events: {
      retentionDays: env.EVENT_RETENTION_DAYS ?? null,
      payloadRetentionDays: env.EVENT_PAYLOAD_RETENTION_DAYS ?? null,
    },
    /** The routing retry budget (ROUTING_RETRY_MAX_ATTEMPTS, ROUTING_RETRY_MAX_AGE_SECONDS): past it a route is a dead letter. */
    routingRetryBudget: {
      maxAttempts: env.ROUTING_RETRY_MAX_ATTEMPTS,
      maxAgeMs: env.ROUTING_RETRY_MAX_AGE_SECONDS * 1000,
    },
    rateLimit: { max: env.RATE_LIMIT_MAX, windowMs: env.RATE_LIMIT_WINDOW_SECONDS * 1000 },
    /** Failed bearer keys / unverified webhook deliveries per client address (AUTH_FAILURE_LIMIT). */
    authFailureLimit: { max: env.AUTH_FAILURE_LIMIT, windowMs: env.RATE_LIMIT_WINDOW_SECONDS * 1000 },
    /** Fastify's trustProxy (TRUST_PROXY): which X-Forwarded-For hops to believe. */
    trustProxy: env.TRUST_PROXY,
    webhooks: { secretKeys: env.WEBHOOK_SECRET_KEYS },
    worker: {
      metricsBindAddress: env.WORKER_METRICS_BIND_ADDRESS ?? null,
      /** The worker's cache and slots (WORKER_MAX_*), handed to the Temporal SDK's Worker as they are. */
      maxCachedWorkflows: env.WORKER_MAX_CACHED_WORKFLOWS,
      maxConcurrentWorkflowTasks: env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
      maxConcurrentActivities: env.WORKER_MAX_CONCURRENT_ACTIVITIES,
      maxConcurrentLocalActivities: env.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
    },
    /** Worker only: HTTP_TASK_EGRESS_ALLOW entries (see EgressPolicy in @activity-core/temporal). */
    httpTasks: { egressAllow: env.HTTP_TASK_EGRESS_ALLOW },
    /** Worker only: secrets for `{{ secrets.NAME }}` in `http` tasks. */
    taskSecrets: new TaskSecrets(
      taskSecretVariables(env).map(([key, value]) => [key.slice(TASK_SECRET_PREFIX.length), String(value)]),
    ),
  }));

export type Config = z.output<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n  ${issues.join('\n  ')}`);
  }
}

/** Parses the environment; throws ConfigError listing every bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  return result.data;
}
