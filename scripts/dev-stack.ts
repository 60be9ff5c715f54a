/**
 * `npm start`: the whole stack on embedded defaults. Temporal CLI dev server
 * (UI on :8233, SQLite under .data/), an embedded Postgres under .data/ (or
 * the one DATABASE_URL names), migrations, then the API and the worker as
 * child processes, and an echo endpoint on loopback (DEV_ECHO_PORT, 3001) for
 * http tasks to call. Ctrl-C stops everything; the data stays for next time.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { runMigrations } from '@activity-core/db';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  DEFAULT_ECHO_PORT,
  entryPointArgs,
  findTemporalCli,
  spawnStackProcess,
  startEchoServer,
  startEmbeddedPostgres,
  startTemporalDevServer,
  stopGracefully,
  type EntryPoint,
  type RunningPostgres,
} from '@activity-core/dev-services';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import pg from 'pg';

const root = process.cwd();
const dataDir = join(root, '.data');
const env = process.env;
const apiPort = env.PORT ?? '3000';
const temporalPort = Number(env.TEMPORAL_DEV_PORT ?? 7233);
const uiPort = Number(env.TEMPORAL_UI_PORT ?? 8233);
const postgresPort = Number(env.EMBEDDED_POSTGRES_PORT ?? 54329);
/** The echo endpoint `http` tasks can call without the internet (the README's walkthrough uses it). */
const echoPort = Number(env.DEV_ECHO_PORT ?? DEFAULT_ECHO_PORT);

const children: ChildProcess[] = [];
const stops: Array<() => Promise<void>> = [];
let stopping = false;

function log(message: string): void {
  console.log(`[stack] ${message}`);
}

async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    log('stopping…');
    await Promise.all(children.map((child) => stopGracefully(child, 15_000)));
    log('API and worker stopped; stopping Temporal and Postgres…');
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => console.error(error));
    log('stopped; data kept in .data/');
  }
  process.exit(code);
}

/**
 * Ours alone: embedded-postgres installs exit hooks (async-exit-hook) that
 * stop Postgres and call process.exit on SIGINT — before the API and worker
 * have stopped, which orphaned the worker. Shutdown order is decided here.
 */
function installSignalHandlers(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void stopAll(0));
  }
}
installSignalHandlers();

function startChild(name: string, entry: EntryPoint, childEnv: NodeJS.ProcessEnv): ChildProcess {
  const { child } = spawnStackProcess({
    name,
    args: entryPointArgs(entry),
    cwd: root,
    env: childEnv,
    stdio: 'inherit',
  });
  children.push(child);
  child.once('exit', (code, signal) => {
    if (!stopping) {
      log(`${name} exited (code ${code}, signal ${signal}); stopping the stack`);
      void stopAll(code ?? 1);
    }
  });
  return child;
}

/**
 * Ready means ready: the API's /readyz answers 200 and the worker (this very
 * process, by its identity `<pid>@<host>`) is polling the task queue. Only
 * then is the banner printed.
 */
async function waitUntilReady(apiUrl: string, temporalAddress: string, worker: ChildProcess): Promise<boolean> {
  const namespace = env.TEMPORAL_NAMESPACE ?? 'default';
  const taskQueue = env.TEMPORAL_TASK_QUEUE ?? 'activity-core';
  const connection = await Connection.connect({ address: temporalAddress });
  const started = Date.now();
  let warned = false;
  let apiReady = false;
  try {
    for (;;) {
      if (stopping) return false;
      // Once ready, the API is not asked again (each probe is a log line).
      apiReady ||= await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
        (response) => response.status === 200,
        () => false,
      );
      const workerPolling =
        apiReady &&
        (await connection.workflowService
          .describeTaskQueue({
            namespace,
            taskQueue: { name: taskQueue },
            taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          })
          .then(
            (answer) => (answer.pollers ?? []).some((poller) => poller.identity?.startsWith(`${worker.pid}@`) === true),
            () => false,
          ));
      if (apiReady && workerPolling) return true;
      if (!warned && Date.now() - started > 60_000) {
        warned = true;
        log(`still waiting for ${apiReady ? 'the worker to poll' : 'the API to be ready'} (see the logs above)…`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await connection.close();
  }
}

async function ensureDatabase(server: RunningPostgres, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return server.urlFor(name);
}

async function main(): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  const cli = findTemporalCli(root, env.TEMPORAL_CLI_PATH, env.PATH);
  if (cli === undefined) throw new Error('Temporal CLI not found; run `npm start` (it installs it)');

  if (!Number.isInteger(echoPort) || echoPort < 1 || echoPort > 65_535)
    throw new Error(`DEV_ECHO_PORT must be a port number (1-65535), got ${env.DEV_ECHO_PORT}`);
  const echo = await startEchoServer({ port: echoPort }).catch((error: unknown) => {
    throw new Error(
      `could not serve the echo endpoint on 127.0.0.1:${echoPort} (${(error as Error).message}); set DEV_ECHO_PORT to a free port`,
    );
  });
  stops.push(() => echo.stop());

  let temporalAddress = env.TEMPORAL_ADDRESS;
  if (temporalAddress === undefined) {
    log(`starting the Temporal dev server (${cli})…`);
    const temporal = await startTemporalDevServer({
      cliPath: cli,
      port: temporalPort,
      uiPort,
      dbFilename: join(dataDir, 'temporal.sqlite'),
      namespace: env.TEMPORAL_NAMESPACE ?? 'default',
      dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG,
      // Its own process group: a terminal Ctrl-C reaches the API and worker, and
      // Temporal is stopped after them, so the worker can shut down cleanly.
      detached: true,
    });
    stops.push(() => temporal.stop());
    temporalAddress = temporal.address;
  }

  let databaseUrl = env.DATABASE_URL;
  if (databaseUrl === undefined) {
    log('starting the embedded Postgres…');
    const postgres = await startEmbeddedPostgres({
      dataDir: join(dataDir, 'postgres'),
      port: postgresPort,
      persistent: true,
    });
    installSignalHandlers();
    stops.push(() => postgres.stop());
    databaseUrl = await ensureDatabase(postgres, 'activity_core');
  }

  log('applying migrations…');
  await runMigrations(databaseUrl);

  // http tasks may call services on this machine in development (loopback is denied by default).
  const egressAllow = env.HTTP_TASK_EGRESS_ALLOW ?? '127.0.0.0/8,::1/128,localhost';
  // Colored log lines for a terminal (LOG_FORMAT=json to see what production writes).
  const childEnv = {
    LOG_FORMAT: 'pretty',
    ...env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    PORT: apiPort,
    MIGRATE_ON_START: 'false',
    HTTP_TASK_EGRESS_ALLOW: egressAllow,
  };
  const startedAt = Date.now();
  const worker = startChild('worker', 'worker', childEnv);
  // Task secrets are the worker's alone: the API never renders them.
  startChild(
    'api',
    'api',
    Object.fromEntries(Object.entries(childEnv).filter(([key]) => !key.startsWith('TASK_SECRET_'))),
  );

  const host = env.HOST ?? '127.0.0.1';
  const probeHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  log('starting the worker and the API…');
  if (!(await waitUntilReady(`http://${probeHost}:${apiPort}`, temporalAddress, worker))) return;
  console.log(`
  activity-core is ready (API and worker up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s):
    API            http://${host}:${apiPort}/v1
    OpenAPI docs   http://${host}:${apiPort}/docs   (document: /openapi.json)
    Temporal UI    ${env.TEMPORAL_ADDRESS === undefined ? `http://127.0.0.1:${uiPort}` : '(external Temporal)'}
    Temporal gRPC  ${temporalAddress}
    Echo endpoint  ${echo.url}   (answers any request back as JSON; for http tasks)
    Postgres       ${databaseUrl.replace(/:[^:@/]+@/, ':***@')}
  Ctrl-C stops everything; data is kept in .data/.
`);
}

main().catch(async (error: unknown) => {
  console.error(error);
  await stopAll(1);
});
