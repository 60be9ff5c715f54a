import type { ChildProcess } from 'node:child_process';
import type { Config } from '@activity-core/config';
import { entryPointArgs, outputReady, spawnStackProcess, type EntryPoint } from '@activity-core/dev-services';
import { inject } from 'vitest';

export { killHard, stopGracefully } from '@activity-core/dev-services';

export interface SpawnedProcess {
  child: ChildProcess;
  output: () => string;
  ready: Promise<void>;
  /** Null while the process runs; its exit code (or signal) once it has ended. */
  exited: () => number | string | null;
}

function envFor(config: Config, env: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: config.databaseUrl,
    TEMPORAL_ADDRESS: config.temporal.address,
    TEMPORAL_NAMESPACE: config.temporal.namespace,
    TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'info',
    // The same http task egress opt-in as the in-process worker (test/harness.ts testConfig).
    HTTP_TASK_EGRESS_ALLOW: config.httpTasks.egressAllow.join(','),
    ...env,
  };
}

/**
 * An entry point in its own process: from the run's production build when
 * there is one (compiled once by the global setup, with the prebuilt workflow
 * bundle: what `npm run start:*` runs), else from the sources with tsx.
 */
function spawnEntryPoint(
  entry: EntryPoint,
  env: NodeJS.ProcessEnv,
  readyWhen: (output: string) => boolean,
  what: string,
): SpawnedProcess {
  const proc = spawnStackProcess({ name: what, args: entryPointArgs(entry, inject('productionBuild')), env });
  return {
    child: proc.child,
    output: proc.output,
    ready: outputReady(proc, readyWhen),
    exited: () => proc.child.exitCode ?? proc.child.signalCode ?? null,
  };
}

/**
 * The real worker entry point (`npm run start:worker`) in its own process,
 * so a test can kill it with SIGKILL like a crashed host.
 */
export function spawnWorkerProcess(config: Config, env: Record<string, string> = {}): SpawnedProcess {
  return spawnEntryPoint('worker', envFor(config, env), (output) => output.includes('worker started'), 'worker');
}

/**
 * The real API entry point (`npm run start:api`) in its own process on
 * `port`, so a test can tell whether a fault made it exit.
 */
export function spawnApiProcess(config: Config, port: number, env: Record<string, string> = {}): SpawnedProcess {
  return spawnEntryPoint(
    'api',
    envFor(config, { HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_MAX: '1000000', ...env }),
    (output) => output.includes('Server listening'),
    'API',
  );
}
