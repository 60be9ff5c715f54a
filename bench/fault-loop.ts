/**
 * Randomized fault injection on the real stack, for minutes.
 *
 *   npx tsx bench/fault-loop.ts [seconds=180] [seed=random]
 *
 * Starts its own embedded Postgres and Temporal dev server (restartable, with
 * their data kept), an http target, and the real API and worker entry points
 * as separate processes. While events arrive without pause (a batch now and
 * then) and a cron fires every 5 s, it injects one fault after another, at
 * random: Postgres restarted or crashed (SIGQUIT, like a failover), Temporal
 * restarted, the worker or the API killed with SIGKILL and started again.
 * Then it stops the load, waits until everything drained, and checks what
 * must hold: every acknowledged event has exactly one run, every run ended,
 * one task row per task, one side-effect key per http task, and no process
 * exited that the loop did not kill. Prints each injection and each check;
 * exits 1 when a check failed.
 */
import { loadConfig, type Config } from '@activity-core/config';
import { runMigrations } from '@activity-core/db';
import { findTemporalCli, freePort } from '@activity-core/dev-services';
import { startHttpTarget } from '../test/http-target';
import { createDatabaseOn, createRestartablePostgres, resilientPool } from '../test/restartable-postgres';
import { checkInvariants, describeState, drained, sleep, startLoad, until, type Load } from '../test/restartable-stack';
import { createRestartableTemporal } from '../test/restartable-temporal';
import {
  killHard,
  spawnApiProcess,
  spawnWorkerProcess,
  stopGracefully,
  type SpawnedProcess,
} from '../test/worker-process';

const seconds = Number(process.argv[2] ?? 180);
let seed = Number(process.argv[3] ?? Math.floor(Math.random() * 2 ** 31));
const firstSeed = seed;
/** A small deterministic generator, so a failing run can be replayed with its seed. */
const random = (): number => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const between = (min: number, max: number): number => Math.round(min + random() * (max - min));
const started = Date.now();
const log = (message: string): void =>
  console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${message}`);

const cliPath = findTemporalCli(process.cwd(), process.env.TEMPORAL_CLI_PATH, process.env.PATH);
if (cliPath === undefined) throw new Error('Temporal CLI not found; run npm test or npm start once to install it');

const postgres = await createRestartablePostgres();
const temporal = await createRestartableTemporal({ cliPath });
const target = await startHttpTarget();
await Promise.all([postgres.start(), temporal.start()]);
const databaseUrl = await createDatabaseOn(postgres, 'faultloop');
await runMigrations(databaseUrl);
const config: Config = loadConfig({
  DATABASE_URL: databaseUrl,
  TEMPORAL_ADDRESS: temporal.address,
  TEMPORAL_TASK_QUEUE: 'fault-loop',
  MIGRATE_ON_START: 'false',
  HTTP_TASK_EGRESS_ALLOW: '127.0.0.0/8',
});
// LOG_LEVEL info: readiness is read from the processes' own start-up lines (kept in memory, printed on a failure).
const processEnv = { CRON_ALLOW_SECONDS: 'true', HTTP_TASK_EGRESS_ALLOW: '127.0.0.0/8', LOG_LEVEL: 'info' };
const port = await freePort();
const apiUrl = `http://127.0.0.1:${port}`;
const sql = resilientPool(databaseUrl);

/** A process the loop runs; an exit the loop did not cause is a failure. */
interface Managed {
  name: string;
  current: SpawnedProcess;
  killing: boolean;
  unexpectedExits: string[];
}
const watch = (managed: Managed): void => {
  managed.current.child.once('exit', (code, signal) => {
    if (!managed.killing) {
      managed.unexpectedExits.push(
        `${managed.name} exited with ${code ?? signal}:\n${managed.current.output().slice(-2_000)}`,
      );
      log(`!! ${managed.name} exited on its own (${code ?? signal})`);
    }
  });
};
const spawnApi = (): SpawnedProcess => spawnApiProcess(config, port, processEnv);
const spawnWorker = (): SpawnedProcess => spawnWorkerProcess(config, processEnv);
const api: Managed = { name: 'API', current: spawnApi(), killing: false, unexpectedExits: [] };
const worker: Managed = { name: 'worker', current: spawnWorker(), killing: false, unexpectedExits: [] };
watch(api);
watch(worker);
log('Postgres and Temporal up; starting the API and the worker');
await Promise.all([api.current.ready, worker.current.ready]);

async function restart(managed: Managed, spawn: () => SpawnedProcess): Promise<void> {
  managed.killing = true;
  await killHard(managed.current.child);
  managed.current = spawn();
  managed.killing = false;
  watch(managed);
  await managed.current.ready;
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, json: response.status === 204 ? null : await response.json() };
}

const TASKS = [
  { type: 'delay', config: { duration: '1s' } },
  { type: 'http', config: { url: `${target.url}/hook` } },
  { type: 'noop' },
];
const eventActivity = await call('POST', '/v1/activities', {
  name: 'fault-loop-events',
  triggers: [{ type: 'event', event_type: 'fault.loop' }],
  tasks: TASKS,
});
const cronActivity = await call('POST', '/v1/activities', {
  name: 'fault-loop-cron',
  triggers: [{ type: 'cron', cron: '*/5 * * * * *' }],
  tasks: [{ type: 'noop' }],
});
if (eventActivity.status !== 201 || cronActivity.status !== 201)
  throw new Error(`could not create the activities: ${JSON.stringify([eventActivity.json, cronActivity.json])}`);
log(
  `seed ${firstSeed}; running ${seconds} s of faults against API ${apiUrl}, Postgres :${postgres.port}, Temporal ${temporal.address}`,
);

// Load: waves of events, one after another, until the loop ends.
const acked = new Set<string>();
let loading = true;
let wave = 0;
const loadLoop = (async () => {
  while (loading) {
    const load: Load = startLoad({
      apiUrl,
      eventType: 'fault.loop',
      prefix: `w${wave++}`,
      // About 5 events a second: steady load that a small stack drains after the loop.
      count: 40,
      senders: 2,
      gapMs: 400,
      batchAt: 20,
      batchSize: 10,
      apiExited: () => (api.unexpectedExits.length > 0 ? 'exited' : null),
    });
    await load.done;
    for (const id of load.acked) acked.add(id);
  }
})();

const faults: Record<string, () => Promise<string>> = {
  'postgres restart': async () => {
    const downMs = between(2_000, 10_000);
    await postgres.stop();
    await sleep(downMs);
    await postgres.start();
    return `Postgres stopped (fast shutdown) for ${downMs} ms`;
  },
  'postgres crash': async () => {
    const downMs = between(500, 4_000);
    await postgres.crash();
    await sleep(downMs);
    await postgres.start();
    return `Postgres crashed (SIGQUIT, transactions open) and back after ${downMs} ms`;
  },
  'temporal restart': async () => {
    const downMs = between(3_000, 15_000);
    await temporal.stop();
    await sleep(downMs);
    await temporal.start();
    return `Temporal stopped for ${downMs} ms`;
  },
  'worker kill': async () => {
    await restart(worker, spawnWorker);
    return 'worker killed (SIGKILL) and started again';
  },
  'api kill': async () => {
    await restart(api, spawnApi);
    return 'API killed (SIGKILL) and started again';
  },
};
const injected: string[] = [];
try {
  while (Date.now() - started < seconds * 1_000) {
    await sleep(between(5_000, 15_000));
    const names = Object.keys(faults);
    const name = names[Math.floor(random() * names.length)]!;
    const what = await faults[name]!();
    injected.push(what);
    log(`injected: ${what} (${acked.size} events acknowledged so far)`);
    if (api.unexpectedExits.length + worker.unexpectedExits.length > 0) break;
  }

  loading = false;
  await loadLoop;
  log(
    `load stopped: ${acked.size} events acknowledged; deleting the cron activity and waiting for everything to drain`,
  );
  await call('DELETE', `/v1/activities/${cronActivity.json.id}`);
  await until(
    'everything to drain',
    () => drained({ sql, acked, eventActivityId: eventActivity.json.id }),
    600_000,
    () => describeState(sql),
  );
  log(`drained: ${await describeState(sql)}`);

  const problems = await checkInvariants({
    sql,
    acked,
    eventActivityId: eventActivity.json.id,
    tasksPerRun: TASKS.length,
    httpKeys: target.requests.filter((r) => r.url === '/hook').map((r) => String(r.headers['idempotency-key'] ?? '')),
    cronActivityId: cronActivity.json.id,
  });
  problems.push(...api.unexpectedExits, ...worker.unexpectedExits);
  const ready = await call('GET', '/readyz');
  if (ready.status !== 200)
    problems.push(`/readyz answers ${ready.status} after the faults: ${JSON.stringify(ready.json)}`);
  const checks = [
    'every acknowledged event stored, routed, with exactly one run',
    'every run ended (succeeded)',
    `exactly ${TASKS.length} task rows per run, all succeeded, none orphaned`,
    'one Idempotency-Key per http task',
    'at most one run per cron fire time',
    'no process exited that the loop did not kill',
    '/readyz answers 200',
  ];
  console.log(
    `\nseed ${firstSeed}: ${injected.length} faults injected, ${acked.size} events acknowledged, ${target.requests.length} http task requests`,
  );
  for (const fault of injected) console.log(`  injected  ${fault}`);
  for (const check of checks) console.log(`  checked   ${check}`);
  if (problems.length > 0) {
    console.log('\nFAILED:');
    for (const problem of problems) console.log(`  - ${problem}`);
    process.exitCode = 1;
  } else {
    console.log('\nall checks held');
  }
} finally {
  loading = false;
  api.killing = worker.killing = true;
  await Promise.all([stopGracefully(api.current.child), stopGracefully(worker.current.child)]);
  await sql.end();
  await target.close();
  await Promise.all([temporal.dispose(), postgres.dispose()]);
}
