import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { guardClient } from './client';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../migrations', import.meta.url));

/** Arbitrary constant shared by every process that migrates this database. */
const MIGRATION_LOCK_KEY = 7_261_860_071;

/**
 * Applies the committed SQL migrations. Safe to call from every process at
 * start-up: a session-level advisory lock on one dedicated connection makes
 * concurrent starts wait for each other, and the second finds nothing to do.
 *
 * If Postgres goes away meanwhile, the call rejects (the session ends, and
 * with it the lock) instead of the connection's error ending the process;
 * callers retry the whole call.
 */
export async function runMigrations(databaseUrl: string): Promise<void> {
  const client = guardClient(
    new pg.Client({
      connectionString: databaseUrl,
      application_name: 'activity-core-migrate',
      connectionTimeoutMillis: 10_000,
    }),
  );
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_FOLDER });
    } finally {
      // A lost session has released the lock already; the original error is the one worth reporting.
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.end();
  }
}
