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

function taskSecretVariables(env: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(env).filter(([key]) => key.startsWith(TASK_SECRET_PREFIX));
}

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
    /** @default "info" */
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Largest request body accepted; larger ones get 413. @default 1048576 (1 MiB) */
    BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
    /**
     * Worker only: where the Temporal SDK serves its Prometheus metrics
     * (`host:port`, scraped at `/metrics`): task latencies, poll results,
     * slots in use, sticky cache. Unset (the default): not served.
     */
    WORKER_METRICS_BIND_ADDRESS: z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/, 'must be host:port, e.g. 0.0.0.0:9464')
      .optional(),
    /** Apply migrations at start-up (under an advisory lock). @default true */
    MIGRATE_ON_START: bool.default(true),
    /** Postgres pool size per process. @default 10 */
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
    /**
     * Days an accepted event, and so its id / Idempotency-Key, is remembered.
     * Unset (the default): forever, so a redelivery at any later time is
     * answered `duplicate` and never starts a second run (SPEC §5.1). Set it
     * to bound the table; after expiry only Temporal's own memory of the run
     * (namespace retention) still stops a second run. See docs/ingress.md.
     * Choose it longer than any provider's redelivery window (Stripe and
     * GitHub retry for up to 3 days, Svix for about 5).
     */
    EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).optional(),
    /**
     * Requests per key (API/ingest key, webhook source, or client IP when
     * auth is off) per window, counted per API process; 0 turns limiting off.
     * A batch counts as one request. @default 1200 (20 per second on average)
     */
    RATE_LIMIT_MAX: z.coerce.number().int().min(0).max(1_000_000).default(1200),
    /** The rate-limit window. @default 60 */
    RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
    /**
     * Keys that encrypt webhook secrets at rest (AES-256-GCM), comma-separated,
     * each 32 bytes in base64. The first seals new secrets; all of them open
     * stored ones, so a key can be rotated. Empty: secrets are stored in
     * plain text (the server warns at start-up).
     */
    WEBHOOK_SECRET_KEYS: csv.pipe(
      z.array(z.string().refine((key) => Buffer.from(key, 'base64').length === 32 && /^[A-Za-z0-9+/]+={0,2}$/.test(key), 'each key must be 32 bytes in base64 (openssl rand -base64 32)')),
    ),
  })
  // Unknown keys are kept so the TASK_SECRET_* family (names not known in advance) can be read below.
  .loose()
  .refine((env) => env.INGEST_KEYS.length === 0 || env.API_KEYS.length > 0, {
    path: ['INGEST_KEYS'],
    message: 'INGEST_KEYS needs API_KEYS too: without API keys authentication is off and the management API would be open',
  })
  .superRefine((env, ctx) => {
    for (const [key, value] of taskSecretVariables(env)) {
      const name = key.slice(TASK_SECRET_PREFIX.length);
      if (!TASK_SECRET_NAME.test(name)) {
        ctx.addIssue({ code: 'custom', path: [key], message: `the secret name after ${TASK_SECRET_PREFIX} must match ${TASK_SECRET_NAME.source}` });
      } else if (typeof value !== 'string' || value.length === 0) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'must not be empty (unset it to remove the secret)' });
      }
    }
  })
  .transform((env) => ({
    databaseUrl: env.DATABASE_URL,
    temporal: {
      address: env.TEMPORAL_ADDRESS,
      namespace: env.TEMPORAL_NAMESPACE,
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      uiUrl: env.TEMPORAL_UI_URL.replace(/\/$/, ''),
    },
    http: { host: env.HOST, port: env.PORT, bodyLimitBytes: env.BODY_LIMIT_BYTES },
    auth: { apiKeys: env.API_KEYS, ingestKeys: env.INGEST_KEYS, enabled: env.API_KEYS.length > 0 },
    logLevel: env.LOG_LEVEL,
    migrateOnStart: env.MIGRATE_ON_START,
    databasePoolSize: env.DATABASE_POOL_SIZE,
    events: { retentionDays: env.EVENT_RETENTION_DAYS ?? null },
    rateLimit: { max: env.RATE_LIMIT_MAX, windowMs: env.RATE_LIMIT_WINDOW_SECONDS * 1000 },
    webhooks: { secretKeys: env.WEBHOOK_SECRET_KEYS },
    worker: { metricsBindAddress: env.WORKER_METRICS_BIND_ADDRESS ?? null },
    /** Worker only: secrets for `{{ secrets.NAME }}` in `http` tasks. */
    taskSecrets: new TaskSecrets(taskSecretVariables(env).map(([key, value]) => [key.slice(TASK_SECRET_PREFIX.length), String(value)])),
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
