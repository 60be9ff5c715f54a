import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Config } from '@activity-core/config';
import { inject } from 'vitest';

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
 * How an entry point starts: from the run's production build when there is
 * one (compiled once by the global setup, with the prebuilt workflow bundle:
 * what `npm run start:*` runs), else from the sources with tsx.
 */
function commandFor(source: string, built: string): string[] {
  const build = inject('productionBuild');
  return build ? ['--enable-source-maps', join(build, built)] : ['--import', 'tsx', source];
}

function spawnEntryPoint(
  entry: string[],
  env: NodeJS.ProcessEnv,
  readyWhen: (output: string) => boolean,
  what: string,
): SpawnedProcess {
  let output = '';
  const child = spawn(process.execPath, entry, {
    cwd: process.cwd(),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (readyWhen(output)) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${what} exited early with ${code}:\n${output}`)));
  });
  ready.catch(() => undefined);
  return {
    child,
    output: () => output,
    ready,
    exited: () => child.exitCode ?? child.signalCode ?? null,
  };
}

/**
 * The real worker entry point (`npm run start:worker`) in its own process,
 * so a test can kill it with SIGKILL like a crashed host.
 */
export function spawnWorkerProcess(config: Config, env: Record<string, string> = {}): SpawnedProcess {
  return spawnEntryPoint(
    commandFor('apps/worker/src/main.ts', 'worker/main.js'),
    envFor(config, env),
    (output) => output.includes('worker started'),
    'worker',
  );
}

/**
 * The real API entry point (`npm run start:api`) in its own process on
 * `port`, so a test can tell whether a fault made it exit.
 */
export function spawnApiProcess(config: Config, port: number, env: Record<string, string> = {}): SpawnedProcess {
  return spawnEntryPoint(
    commandFor('apps/api/src/main.ts', 'api/main.js'),
    envFor(config, { HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_MAX: '1000000', ...env }),
    (output) => output.includes('Server listening'),
    'API',
  );
}

export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await gone;
}

/** SIGTERM, then SIGKILL if it has not ended within `graceMs`. */
export async function stopGracefully(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}
