import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import * as schema from './schema';

export type Db = NodePgDatabase<typeof schema>;

export interface Database {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  url: string;
  /** Pool size. @default 10 */
  max?: number;
  applicationName?: string;
}

export function createDatabase(options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'activity-core',
    // Fail fast when Postgres is down so ingress can answer 503 instead of hanging.
    connectionTimeoutMillis: 5_000,
  });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return {
    db: drizzle(pool, { schema }),
    pool,
    close: () => pool.end(),
  };
}

/**
 * True when the error means Postgres could not be reached (as opposed to a
 * bad query). Drizzle wraps driver errors in a DrizzleQueryError whose
 * `cause` is the driver's error, so the cause chain is followed.
 */
export function isConnectionError(error: unknown, depth = 0): boolean {
  if (depth > 5 || error === null || typeof error !== 'object') return false;
  const cause = (error as { cause?: unknown }).cause;
  if (cause !== undefined && isConnectionError(cause, depth + 1)) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03', '53300'].includes(code)) return true;
    if (code.startsWith('08')) return true;
  }
  const message = (error as Error | null)?.message ?? '';
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED/i.test(message);
}

/**
 * True when Postgres refused a value's text itself (a NUL character, an
 * untranslatable character): the input is bad, not the server.
 */
export function isInvalidTextError(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current !== null && current !== undefined && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (code === '22P05' || code === '22021' || code === '22P02') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
