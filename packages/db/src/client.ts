import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import * as schema from './schema';
import { createStatementRunner, type Db, type StatementRunner } from './statements';

export type { Db };

export interface Database {
  db: Db;
  pool: pg.Pool;
  /** The hot statements, named and planned once per connection unless `preparedStatements` is off. */
  statements: StatementRunner;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  url: string;
  /** Pool size. @default 10 */
  max?: number;
  applicationName?: string;
  /**
   * Told about every error a connection emits outside a query (the server
   * went away, a failover, a network reset). Informational only: the error is
   * already handled — the connection is discarded and the next checkout opens
   * a new one. @default ignore
   */
  onConnectionError?: (error: Error) => void;
  /**
   * Run the hot statements (the accept of an event) as named prepared
   * statements. Turn off behind a pooler in transaction mode that does not
   * keep them; if one refuses them anyway, the process turns them off by
   * itself and tells `onPreparedStatementsOff`. @default true
   */
  preparedStatements?: boolean;
  onPreparedStatementsOff?: (error: unknown) => void;
}

/**
 * A pool that survives Postgres going away. pg emits `'error'` on a client
 * whose server disappears; an emitter with no listener for it throws, which
 * ends the process. pg-pool listens on idle clients only and removes that
 * listener while a client is checked out (`pool.connect()`, a drizzle
 * transaction between statements, a LISTEN). So every client gets its own
 * listener for its whole life, from the moment it connects: the error then
 * reaches the code using the client as a failed query ("not queryable"), the
 * client is dropped when released, and the pool opens fresh connections once
 * Postgres answers again.
 */
export function createDatabase(options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'activity-core',
    // Fail fast when Postgres is down so ingress can answer 503 instead of hanging.
    connectionTimeoutMillis: 5_000,
  });
  const report = options.onConnectionError ?? (() => undefined);
  pool.on('connect', (client) => guardClient(client, report));
  // An idle client that loses its server: the pool has already removed it.
  pool.on('error', (error) => report(error));
  const db = drizzle(pool, { schema });
  return {
    db,
    pool,
    statements: createStatementRunner(db, {
      prepared: options.preparedStatements ?? true,
      ...(options.onPreparedStatementsOff === undefined ? {} : { onOff: options.onPreparedStatementsOff }),
    }),
    close: () => pool.end(),
  };
}

/**
 * Gives a client an `'error'` listener for its whole life, so losing the
 * server never becomes an uncaught exception. For clients made outside a
 * pool (`new pg.Client`) call it before `connect()`.
 */
export function guardClient<T extends pg.ClientBase>(client: T, onError: (error: Error) => void = () => undefined): T {
  client.on('error', (error: Error) => onError(error));
  return client;
}
