import { readFile, mkdtemp, rm, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmbeddedPostgres, type RunningPostgres } from '@activity-core/dev-services';
import pg from 'pg';

/**
 * A Postgres cluster of a test's own, on a fixed port with its files kept
 * across restarts, so a test can take it away (a clean stop, or a crash like
 * a failover) and bring it back with its data — without disturbing the
 * shared one.
 */
export interface RestartablePostgres {
  port: number;
  urlFor(database: string): string;
  start(): Promise<void>;
  /** A fast shutdown: every backend is told 57P01 (open transactions roll back), then the server exits. */
  stop(): Promise<void>;
  /**
   * An immediate shutdown (SIGQUIT to the postmaster): backends die in the
   * middle of whatever they were doing, nothing is checkpointed, and the next
   * start runs crash recovery — what clients see in a failover.
   */
  crash(): Promise<void>;
  dispose(): Promise<void>;
}

export async function createRestartablePostgres(): Promise<RestartablePostgres> {
  const scratch = await mkdtemp(join(tmpdir(), 'activity-core-pg-fault-'));
  await chmod(scratch, 0o755);
  const dataDir = join(scratch, 'pg');
  const port = await freePort();
  let server: RunningPostgres | undefined;
  const urlFor = (database: string): string =>
    `postgres://postgres:postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  const stop = async (): Promise<void> => {
    await server?.stop();
    server = undefined;
  };
  return {
    port,
    urlFor,
    async start() {
      server = await startEmbeddedPostgres({ dataDir, port, persistent: true });
    },
    stop,
    async crash() {
      const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      process.kill(pid, 'SIGQUIT');
      for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
        try {
          process.kill(pid, 0);
        } catch {
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await stop();
    },
    async dispose() {
      await stop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

/**
 * A pool for a test's own queries that rides out the outages it causes:
 * idle and checked-out clients alike have an error listener.
 */
export function resilientPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 5_000 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** Creates `database` on the cluster (the `postgres` database must be reachable). */
export async function createDatabaseOn(postgres: RestartablePostgres, database: string): Promise<string> {
  const admin = new pg.Client({ connectionString: postgres.urlFor('postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  return postgres.urlFor(database);
}
