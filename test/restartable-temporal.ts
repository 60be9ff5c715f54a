import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStack } from './harness';
import { spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';
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

/**
 * The stack of a coalescing fault test: the API in this process (no worker)
 * on a Temporal of the test's own that it can stop and start, and the worker
 * (and API) processes the test spawns into `processes`; `close()` stops every
 * one still running, then the stack and Temporal.
 */
export async function startStackOnRestartableTemporal() {
  const temporal = await createRestartableTemporal();
  await temporal.start();
  const stack = await startStack({ worker: false, env: { TEMPORAL_ADDRESS: temporal.address } });
  const processes: SpawnedProcess[] = [];
  return {
    temporal,
    stack,
    processes,
    /** A worker process (the real entry point) on the stack's task queue. */
    startWorker(): SpawnedProcess {
      const worker = spawnWorkerProcess(stack.config);
      processes.push(worker);
      return worker;
    },
    async close(): Promise<void> {
      for (const proc of processes) if (proc.exited() === null) await stopGracefully(proc.child);
      await stack.close();
      await temporal.dispose();
    },
  };
}
