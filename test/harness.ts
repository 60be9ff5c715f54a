import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createApiApp, type ApiApp, type ApiAppOptions } from '../apps/api/src/app';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { loadConfig, type Config } from '@activity-core/config';
import { createDatabase, type Database } from '@activity-core/db';
import { listSchedules } from '@activity-core/schedule-manager';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { afterEach, beforeEach, inject } from 'vitest';

export const silentLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export function postgresUrl(database: string): string {
  return `postgres://postgres:postgres@127.0.0.1:${inject('postgresPort')}/${database}`;
}

/** A fresh database cloned from the migrated template: milliseconds, and isolated. */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `t_${randomUUID().replace(/-/g, '')}`;
  const admin = new pg.Client({ connectionString: postgresUrl('postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`);
  } finally {
    await admin.end();
  }
  return {
    url: postgresUrl(name),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: postgresUrl('postgres') });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A pool for a test's own queries. A pooled connection the server ends (a
 * dropped test database, a Postgres restart in a fault test) is reported on
 * the pool; without a listener that report is an uncaught exception in the
 * test process, which fails the whole run.
 */
/**
 * A fresh database for every test of the calling file, dropped after it,
 * and the pools a test opens on it (`connect`), closed before the drop.
 */
export function databasePerTest(): { readonly name: string; connect(max: number): Database } {
  let current: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  const opened: Database[] = [];
  beforeEach(async () => {
    current = await createTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((database) => database.close()));
    await current?.drop();
  });
  const database = () => {
    if (current === undefined) throw new Error('databasePerTest: used outside a test');
    return current;
  };
  return {
    get name() {
      return database().name;
    },
    connect(max: number): Database {
      const pool = createDatabase({ url: database().url, max });
      opened.push(pool);
      return pool;
    },
  };
}

export function testPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => undefined);
  return pool;
}

export function testConfig(databaseUrl: string, overrides: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'silent',
    // Tests call http targets on loopback (test/http-target.ts): opt in, as a deployment would for its own networks.
    HTTP_TASK_EGRESS_ALLOW: '127.0.0.0/8,::1/128',
    // Schedule tests fire every second or two: opt in to seconds-level cron, as an operator would.
    CRON_ALLOW_SECONDS: 'true',
    ...overrides,
  });
}

let bundle: { code: string } | undefined;
export async function workflowBundle(): Promise<{ code: string }> {
  bundle ??= { code: await readFile(inject('workflowBundlePath'), 'utf8') };
  return bundle;
}

export interface TestStack {
  config: Config;
  api: ApiApp;
  worker: WorkerApp | undefined;
  client: Client;
  sql: pg.Pool;
  close(): Promise<void>;
}

/**
 * The real API and (optionally) a real worker in this process, on a fresh
 * database and a task queue of their own.
 */
export async function startStack(
  options: { worker?: boolean; env?: Record<string, string>; api?: ApiAppOptions } = {},
): Promise<TestStack> {
  const database = await createTestDatabase();
  const config = testConfig(database.url, options.env);
  const api = await createApiApp(config, {
    logger: process.env.TEST_LOG ? { level: process.env.TEST_LOG } : false,
    dispatcherIntervalMs: 200,
    ...options.api,
  });
  const worker =
    options.worker === false
      ? undefined
      : await createWorkerApp(config, { logger: silentLogger, workflowBundle: await workflowBundle() });
  void worker?.run();
  const connection = await Connection.connect({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const sql = testPool(database.url, 3);
  return {
    config,
    api,
    worker,
    client,
    sql,
    close: async () => {
      await worker?.close();
      await api.close();
      try {
        await deleteSchedulesOf(client, config.temporal.taskQueue);
      } finally {
        await connection.close();
        await sql.end();
        await database.drop();
      }
    },
  };
}

/**
 * Deletes every Temporal schedule that starts runs on `taskQueue`. The dev
 * server is shared by the whole run: a schedule a file leaves behind keeps
 * firing (a 5-second cron: every 5 s) into a queue nobody polls until the
 * run ends, load every later file pays for. Schedules carry their task queue
 * in the memo the schedule manager writes; a schedule whose memo this client
 * cannot decode (encrypted with a key it does not have) is not this file's
 * unless the file used encryption, and is left alone.
 */
export async function deleteSchedulesOf(client: Client, taskQueue: string): Promise<string[]> {
  const deleted: string[] = [];
  // The tolerant listing: files with PAYLOAD_ENCRYPTION_KEYS leave memos this client cannot open, which
  // client.schedule.list() would throw on for every file after them.
  for await (const summary of listSchedules(client, 100)) {
    if (summary.memo?.taskQueue !== taskQueue) continue;
    await client.schedule
      .getHandle(summary.scheduleId)
      .delete()
      .then(
        () => deleted.push(summary.scheduleId),
        () => undefined,
      );
  }
  return deleted;
}

/** Polls until `check` returns a value that is not undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The management key tests configure as API_KEYS (keys must be at least 32 characters). */
export const TEST_KEY = 'test-key-0123456789abcdef0123456789';
export const AUTH = { authorization: `Bearer ${TEST_KEY}` };
