import { createDatabase, isConnectionError, runMigrations, type Database } from '@activity-core/db';
import { sql as raw } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, waitFor } from './harness';

/**
 * The server ends a connection the application holds (pg_terminate_backend:
 * what a restart or failover does to every backend). The process must not
 * die of the connection's 'error' event, the work on it must fail as a
 * connection error, and the pool must carry on.
 */
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let app: Database;
let admin: pg.Client;
const lost: Error[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  app = createDatabase({
    url: database.url,
    max: 3,
    applicationName: 'fault-pool',
    onConnectionError: (error) => lost.push(error),
  });
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
});

afterAll(async () => {
  await app?.close();
  await admin?.end();
  await database?.drop();
});

const terminateAppConnections = async (): Promise<number> =>
  (
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fault-pool' AND pid <> pg_backend_pid()`,
    )
  ).rowCount ?? 0;

describe('a pooled connection whose server goes away', () => {
  test('while checked out and idle between queries: the process survives, the next query fails as a connection error, the pool recovers', async () => {
    const client = await app.pool.connect();
    await client.query('SELECT 1');
    const before = lost.length;
    expect(await terminateAppConnections()).toBeGreaterThan(0);
    await waitFor('the held connection to notice', async () => (lost.length > before ? true : undefined));

    const error = await client.query('SELECT 1').then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(isConnectionError(error), String(error)).toBe(true);
    client.release();
    expect((await app.pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
  });

  test('inside a transaction: the transaction rejects with a connection error and the pool recovers', async () => {
    const failure = await app.db
      .transaction(async (tx) => {
        await tx.execute(raw`SELECT 1`);
        const before = lost.length;
        await terminateAppConnections();
        await waitFor('the transaction connection to notice', async () => (lost.length > before ? true : undefined));
        await tx.execute(raw`SELECT 2`);
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(isConnectionError(failure), String(failure)).toBe(true);
    expect((await app.pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
  });

  test('the migration lock: a migration waiting on the lock whose session is ended rejects, instead of ending the process', async () => {
    const MIGRATION_LOCK_KEY = 7_261_860_071;
    await admin.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const migrating = runMigrations(database.url).then(
        () => undefined,
        (error: unknown) => error,
      );
      await waitFor('the migration to wait on the lock', async () =>
        (
          await admin.query(
            `SELECT 1 FROM pg_stat_activity WHERE application_name = 'activity-core-migrate' AND wait_event_type = 'Lock'`,
          )
        ).rowCount === 1
          ? true
          : undefined,
      );
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'activity-core-migrate'`,
      );
      const failure = await migrating;
      expect(isConnectionError(failure), String(failure)).toBe(true);
    } finally {
      await admin.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
    // Nothing was left half-done: a second attempt (what the worker's retry does) succeeds.
    await runMigrations(database.url);
  });
});
