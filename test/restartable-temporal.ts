import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startTemporalDevServer, type TemporalDevServer } from '@activity-core/dev-services';
import { inject } from 'vitest';

/**
 * A Temporal dev server of a test file's own, on a fixed port with a SQLite
 * file, so the test can stop it (an outage) and start it again with its
 * workflows and schedules intact — without disturbing the shared server.
 */
export async function createRestartableTemporal(): Promise<{
  address: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  dispose(): Promise<void>;
}> {
  const scratch = await mkdtemp(join(tmpdir(), 'activity-core-temporal-'));
  const port = await freePort();
  let server: TemporalDevServer | undefined;
  return {
    address: `127.0.0.1:${port}`,
    async start() {
      server = await startTemporalDevServer({
        cliPath: inject('temporalCli'),
        port,
        dbFilename: join(scratch, 'temporal.sqlite'),
        // Durable across the restart (the WAL is on disk) without an fsync per write.
        sqlitePragmas: { journal_mode: 'wal', synchronous: 'normal' },
        dynamicConfig: { 'limit.maxIDLength': 255 },
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
