/**
 * Starts the compiled API and worker (a `npm run build` output) with plain
 * `node` against a real Postgres and Temporal, and proves they work: /readyz
 * answers ready, one event starts a run that succeeds, both processes stop
 * cleanly on SIGTERM. Used by test/production-build.int.test.ts (on the dev
 * tree's node_modules) and scripts/verify-production-install.ts (on a
 * production install, `npm ci --omit=dev`).
 */
import { randomUUID } from 'node:crypto';
import {
  entryPointArgs,
  spawnStackProcess,
  stopGracefully,
  type EntryPoint,
  type StackProcess,
} from '@activity-core/dev-services';

export interface SmokeOptions {
  /** The build output: holds api/main.js and worker/main.js. */
  distDir: string;
  /** Working directory of both processes. */
  cwd: string;
  databaseUrl: string;
  temporalAddress: string;
  apiPort: number;
  /** Extra environment for both processes. */
  env?: Record<string, string>;
  log?: (message: string) => void;
}

export interface SmokeResult {
  runId: string;
  apiOutput: string;
  workerOutput: string;
  /** What the worker logged as its workflow bundle (a file path when it loaded the prebuilt one). */
  workflowBundle: string | undefined;
  apiExitCode: number | string | null;
  workerExitCode: number | string | null;
}

type Started = StackProcess;

function start(entry: EntryPoint, options: SmokeOptions, env: Record<string, string>): Started {
  return spawnStackProcess({
    name: entry === 'api' ? 'API' : 'worker',
    args: entryPointArgs(entry, options.distDir),
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
}

async function poll<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs: number,
  alive: Started[],
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    for (const proc of alive) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null)
        throw new Error(`a process exited while waiting for ${what}:\n${proc.output()}`);
    }
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Stops the process and resolves once its output has been read to the end. */
async function stop(proc: Started, graceMs: number): Promise<number | string | null> {
  await stopGracefully(proc.child, graceMs);
  return await proc.exited;
}

export async function runProductionSmoke(options: SmokeOptions): Promise<SmokeResult> {
  const log = options.log ?? (() => undefined);
  const env = {
    DATABASE_URL: options.databaseUrl,
    TEMPORAL_ADDRESS: options.temporalAddress,
    TEMPORAL_TASK_QUEUE: `production-smoke-${randomUUID()}`,
    // The compiled processes apply the migrations they carry (dist/migrations).
    MIGRATE_ON_START: 'true',
    LOG_LEVEL: 'info',
    ...options.env,
  };
  const base = `http://127.0.0.1:${options.apiPort}`;
  log('starting the compiled worker and API…');
  const worker = start('worker', options, env);
  const api = start('api', options, {
    ...env,
    HOST: '127.0.0.1',
    PORT: String(options.apiPort),
  });
  try {
    await poll(
      'the worker to start',
      async () => (worker.output().includes('worker started') ? true : undefined),
      180_000,
      [worker],
    );
    await poll(
      '/readyz to answer ready',
      async () => {
        const response = await fetch(`${base}/readyz`);
        return response.status === 200 ? true : undefined;
      },
      120_000,
      [api],
    );
    log('both are up; registering an activity and posting an event…');
    const registered = await fetch(`${base}/v1/activities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'production-smoke',
        triggers: [{ type: 'event', event_type: 'smoke.checked' }],
        tasks: [{ type: 'noop' }],
      }),
    });
    if (registered.status !== 201)
      throw new Error(`registering the activity answered ${registered.status}: ${await registered.text()}`);
    const eventId = `evt_smoke_${randomUUID()}`;
    const posted = await fetch(`${base}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event_id: eventId,
        event_type: 'smoke.checked',
        source: 'smoke',
        occurred_at: new Date().toISOString(),
        data: {},
      }),
    });
    const postedBody = (await posted.json()) as { runs?: Array<{ run_id: string }> };
    const runId = postedBody.runs?.[0]?.run_id;
    if (posted.status !== 202 || runId === undefined)
      throw new Error(`posting the event answered ${posted.status}: ${JSON.stringify(postedBody)}`);
    await poll(
      `run ${runId} to succeed`,
      async () => {
        const response = await fetch(`${base}/v1/runs/${runId}`);
        if (response.status !== 200) return undefined;
        const run = (await response.json()) as { status: string };
        if (run.status === 'failed') throw new Error(`run ${runId} failed`);
        return run.status === 'succeeded' ? true : undefined;
      },
      120_000,
      [api, worker],
    );
    log(`run ${runId} succeeded; stopping both…`);
    const [apiExitCode, workerExitCode] = await Promise.all([stop(api, 30_000), stop(worker, 45_000)]);
    const started = /"workflowBundle":"([^"]*)"/.exec(worker.output());
    return {
      runId,
      apiOutput: api.output(),
      workerOutput: worker.output(),
      workflowBundle: started?.[1],
      apiExitCode,
      workerExitCode,
    };
  } catch (error) {
    await Promise.all([stop(api, 5_000), stop(worker, 5_000)]);
    throw new Error(
      `${error instanceof Error ? error.message : String(error)}\n--- API output ---\n${api.output()}\n--- worker output ---\n${worker.output()}`,
      { cause: error },
    );
  }
}
