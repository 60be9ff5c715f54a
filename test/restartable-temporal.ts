import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  freePort,
  startTemporalDevServer,
  type TemporalDevServer,
} from '@activity-core/dev-services';

/**
 * A Temporal dev server of a test file's own, on a fixed port with a SQLite
 * file, so the test can stop it (an outage) and start it again with its
 * workflows and schedules intact — without disturbing the shared server.
 *
 * `cliPath` defaults to the one the test run's global setup found; a script
 * outside vitest (bench/fault-loop.ts) passes its own.
 */
export async function createRestartableTemporal(options: { cliPath?: string } = {}): Promise<{
  address: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  dispose(): Promise<void>;
}> {
  const scratch = await mkdtemp(join(tmpdir(), 'activity-core-temporal-'));
  const port = await freePort();
  let server: TemporalDevServer | undefined;
  // Imported only inside a test run: vitest's inject() has no meaning elsewhere.
  const cliPath = options.cliPath ?? (await import('vitest')).inject('temporalCli');
  return {
    address: `127.0.0.1:${port}`,
    async start() {
      server = await startTemporalDevServer({
        cliPath,
        port,
        dbFilename: join(scratch, 'temporal.sqlite'),
        // Durable across the restart (the WAL is on disk) without an fsync per write.
        sqlitePragmas: { journal_mode: 'wal', synchronous: 'normal' },
        dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG,
      });
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async dispose() {
      await server?.stop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
