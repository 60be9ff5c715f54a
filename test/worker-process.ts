import { spawn, type ChildProcess } from 'node:child_process';
import type { Config } from '@activity-core/config';

/**
 * The real worker entry point (`npm run start:worker`) in its own process,
 * so a test can kill it with SIGKILL like a crashed host.
 */
export function spawnWorkerProcess(config: Config, env: Record<string, string> = {}): { child: ChildProcess; output: () => string; ready: Promise<void> } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/worker/src/main.ts'], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: config.databaseUrl,
      TEMPORAL_ADDRESS: config.temporal.address,
      TEMPORAL_NAMESPACE: config.temporal.namespace,
      TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
      MIGRATE_ON_START: 'false',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.includes('worker started')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker exited early with ${code}:\n${output}`)));
  });
  ready.catch(() => undefined);
  return { child, output: () => output, ready };
}

export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await gone;
}
