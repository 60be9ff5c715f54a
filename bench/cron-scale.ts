/**
 * Many cron activities: registration, the schedule sweep, and no missed fire.
 *
 *   npm run bench:cron-scale -- [--count 10000] [--baseline 100] [--probes 20] [--probe-seconds 0]
 *                                [--concurrency 16] [--sweeps 3] [--drift 100] [--describe-all]
 *                                [--cpu-prof [dir]] [--timeout-min 120]
 *
 * Starts its own Temporal dev server and embedded Postgres, applies the migrations, runs the API
 * as a separate node process (its real entry point through tsx) and one worker in this process
 * (`createWorkerApp` with its own periodic sweep off, so the sweeps measured here are the only
 * ones; a worker's sweep runs in the worker's process, as here). Then:
 *
 *   1. registers `--baseline` cron activities over `POST /v1/activities` with `--concurrency`
 *      senders, each daily at a time that does not come round during the run (pure sweep load,
 *      as most schedules are between their fires);
 *   2. runs the worker's sweep `--sweeps` times — `reconcile({ compareWith: 'listing' })` then
 *      `processAllDue()`, what every worker runs at start-up and every 60 s — on a Postgres pool
 *      and Temporal connection of its own, so its statements and RPCs can be counted; times the
 *      listing and the bulk reads alone (the floors); then reconciles once describing every
 *      schedule (`POST /v1/schedules/reconcile` and the API's start-up do that);
 *   3. registers activities up to `--count`, the last `--probes` of them firing every minute
 *      (every `--probe-seconds` seconds when given, with CRON_ALLOW_SECONDS=true), and waits
 *      until Temporal fires the probes within 5 s of their time again (after thousands of
 *      registrations the dev server is behind for a while);
 *   4. the same sweeps and floors over `--count`; then deletes `--drift` schedules directly in
 *      Temporal and checks that one sweep recreates exactly those;
 *   5. calls the API's on-demand reconciliation once (`POST /v1/schedules/reconcile`);
 *   6. waits for the next probe fire time after all that, then checks every probe fire time
 *      from the first sweep on: exactly one fire-log row `started` / `on_time` and exactly one
 *      run in `activity_runs` (a late tick shows as `misfire_skip`, a lost one as a gap, a
 *      doubled one as two runs); the fire times before the sweeps are counted apart;
 *   7. with `--describe-all`, reconciles once more describing all `--count` schedules (minutes,
 *      and it slows Temporal's own scheduler down: last, and only when asked for).
 * Prints a table: the baseline and `--count` side by side (per-schedule cost), with the target.
 * `--cpu-prof` writes a CPU profile of this process over the sweeps at `--count`.
 * Every wait is bounded; everything it started is stopped when it ends or fails.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@activity-core/config';
import {
  createDatabase,
  createDefinitionsRepository,
  createRunsRepository,
  createSchedulesRepository,
  runMigrations,
  type Database,
} from '@activity-core/db';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  entryPointArgs,
  findTemporalCli,
  freePort,
  spawnStackProcess,
  startEmbeddedPostgres,
  startTemporalDevServer,
  stopGracefully,
  type RunningPostgres,
  type StackProcess,
  type TemporalDevServer,
} from '@activity-core/dev-services';
import type { ReconcileResponse } from '@activity-core/contracts';
import { createScheduleManager } from '@activity-core/schedule-manager';
import { createRunStarter } from '@activity-core/temporal/client';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pg from 'pg';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';

// ---------------------------------------------------------------- options

function flag(name: string, fallback: number, min = 1): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${name} needs an integer ≥ ${min}`);
  return value;
}
const count = flag('count', 10_000);
const baseline = flag('baseline', 100);
const probes = flag('probes', 20, 0);
const probeSeconds = flag('probe-seconds', 0, 0);
const concurrency = flag('concurrency', 16);
const sweeps = flag('sweeps', 3);
const drift = flag('drift', 100, 0);
const describeAll = process.argv.includes('--describe-all');
const cpuProfileDir = (() => {
  const at = process.argv.indexOf('--cpu-prof');
  if (at === -1) return undefined;
  const dir = process.argv[at + 1];
  return dir === undefined || dir.startsWith('--') ? process.cwd() : dir;
})();
const timeoutMs = flag('timeout-min', 120) * 60_000;
if (baseline > count) throw new Error('--baseline must not exceed --count');
if (probes > count - baseline) throw new Error('--probes must not exceed --count minus --baseline');
if (probeSeconds !== 0 && (60 % probeSeconds !== 0 || probeSeconds < 2))
  throw new Error('--probe-seconds must divide 60 (2, 3, 5, 10, 15, 20, 30)');
const probePeriodMs = probeSeconds === 0 ? 60_000 : probeSeconds * 1000;
const probeCron = probeSeconds === 0 ? '* * * * *' : `*/${probeSeconds} * * * * *`;
const root = process.cwd();
const overallDeadline = Date.now() + timeoutMs;

const log = (message: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}
const median = (values: number[]): number => percentile(values, 50);

async function waitFor<T>(what: string, ms: number, check: () => Promise<T | undefined>, everyMs = 250): Promise<T> {
  const deadline = Math.min(Date.now() + ms, overallDeadline);
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' }).trim() !==
      '';
    return dirty ? `${head} + uncommitted changes` : head;
  } catch {
    return 'unknown';
  }
}

// ---------------------------------------------------------------- counting

/** Temporal RPCs by method, and Postgres statements, made by the measured schedule manager only. */
const rpcCounts = new Map<string, number>();
let queryCount = 0;

/** Counts every gRPC method called through this connection's WorkflowService. */
function countRpcs(connection: Connection): void {
  const service = connection.workflowService;
  const counted = new Proxy(service, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]) => {
        rpcCounts.set(property, (rpcCounts.get(property) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  Object.defineProperty(connection, 'workflowService', { value: counted });
}

/** Counts every statement sent on this pool's connections (transactions included: BEGIN and COMMIT count). */
function countQueries(database: Database): void {
  database.pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      queryCount++;
      return query(...args);
    };
  });
}

// ---------------------------------------------------------------- processes

type Proc = StackProcess;
const procs = new Set<Proc>();
const alive = (proc: Proc): boolean => proc.alive();

function startApi(env: Record<string, string>): Proc {
  const proc = spawnStackProcess({
    name: 'API',
    args: entryPointArgs('api'),
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    keepOutputChars: 20_000,
  });
  procs.add(proc);
  void proc.exited.then(() => procs.delete(proc));
  return proc;
}

async function stopProc(proc: Proc, graceMs: number): Promise<void> {
  await stopGracefully(proc.child, graceMs);
}

// ---------------------------------------------------------------- the run

let scratch: string | undefined;
let postgres: RunningPostgres | undefined;
let temporal: TemporalDevServer | undefined;
let worker: WorkerApp | undefined;
let workerRunning: Promise<void> | undefined;
let sweepDatabase: Database | undefined;
let sweepConnection: Connection | undefined;
let probe: pg.Pool | undefined;
let cleaning: Promise<void> | undefined;

function cleanup(): Promise<void> {
  const step = async (what: string, run: () => Promise<unknown> | undefined) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        run(),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('gave up after 30 s')), 30_000))),
      ]);
    } catch (error) {
      log(`stopping ${what}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      clearTimeout(timer);
    }
  };
  cleaning ??= (async () => {
    log('stopping everything this benchmark started…');
    await step('the API', () => Promise.all([...procs].map((proc) => stopProc(proc, 15_000))));
    await step('the worker', async () => {
      await worker?.close();
      await workerRunning?.catch(() => undefined);
    });
    await step('the sweep connections', async () => {
      await sweepDatabase?.close();
      await sweepConnection?.close();
    });
    await step('the Postgres probe', () => probe?.end());
    await step('the Temporal dev server', () => temporal?.stop());
    await step('Postgres', () => postgres?.stop());
    await step('the scratch directory', () =>
      scratch === undefined ? undefined : rm(scratch, { recursive: true, force: true }),
    );
    log('everything stopped');
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (cleaning !== undefined) return;
    log(`${signal}`);
    for (const proc of procs) proc.child.kill('SIGTERM');
    temporal?.process.kill('SIGTERM');
    void cleanup().finally(() => process.exit(130));
  });
}
process.on('exit', () => {
  for (const proc of procs) if (alive(proc)) proc.child.kill('SIGKILL');
  if (temporal !== undefined && temporal.process.exitCode === null && temporal.process.signalCode === null)
    temporal.process.kill('SIGKILL');
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

interface SweepFigures {
  schedules: number;
  reconcileMs: number;
  dueMs: number;
  rpcs: Record<string, number>;
  queries: number;
  outcome: string;
  changes: ReconcileResponse;
}

interface Floors {
  listingMs: number;
  readsMs: number;
}

interface Registration {
  count: number;
  seconds: number;
  latencies: number[];
}

async function main(): Promise<void> {
  const load0 = loadavg();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const cli = findTemporalCli(root, process.env.TEMPORAL_CLI_PATH, process.env.PATH);
  if (cli === undefined) throw new Error('Temporal CLI not found; run `npm test` or `npm start` once to install it');
  scratch = await mkdtemp(join(tmpdir(), 'activity-core-cron-scale-'));
  await chmod(scratch, 0o755);
  log('starting Postgres and the Temporal dev server…');
  [postgres, temporal] = await Promise.all([
    startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }),
    // The dev server as `npm start` runs it; none of Temporal's defaults throttled this benchmark
    // (docs/performance.md lists the limits a cluster has).
    startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }),
  ]);
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  const databaseUrl = postgres.urlFor('bench');
  await runMigrations(databaseUrl);
  probe = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  probe.on('error', (error) => log(`Postgres connection lost: ${error.message}`));
  const db = probe;

  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    // One sending address; the limiter is not what is measured.
    RATE_LIMIT_MAX: '0',
    ...(probeSeconds === 0 ? {} : { CRON_ALLOW_SECONDS: 'true' }),
  };
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const api = startApi({ ...env, HOST: '127.0.0.1', PORT: String(port) });
  const config = loadConfig(env);
  log('starting the worker (bundling the workflow code)…');
  const warnOnly = {
    debug: () => undefined,
    info: () => undefined,
    warn: (o: unknown, m?: string) => log(`worker: ${m ?? ''} ${JSON.stringify(o)}`),
    error: (o: unknown, m?: string) => log(`worker error: ${m ?? ''} ${JSON.stringify(o)}`),
  };
  worker = await createWorkerApp(config, { logger: warnOnly, scheduleSweepIntervalMs: 0 });
  workerRunning = worker.run();
  await waitFor('the API to answer /readyz', 180_000, async () => {
    if (!alive(api)) throw new Error(`the API exited:\n${api.output()}`);
    const response = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
    await response?.arrayBuffer();
    return response?.status === 200 ? true : undefined;
  });

  // The measured sweep: the worker's, on a pool and connection of its own so what it does can be counted.
  sweepDatabase = createDatabase({ url: databaseUrl, max: config.databasePoolSize, applicationName: 'bench-sweep' });
  countQueries(sweepDatabase);
  sweepConnection = await Connection.connect({ address: temporal.address });
  countRpcs(sweepConnection);
  const client = new Client({ connection: sweepConnection, namespace: config.temporal.namespace });
  const runs = createRunsRepository(sweepDatabase.db);
  const manager = createScheduleManager({
    client,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    schedules: createSchedulesRepository(sweepDatabase.db),
    definitions: createDefinitionsRepository(sweepDatabase.db),
    runs,
    starter: createRunStarter({ client, taskQueue: config.temporal.taskQueue }),
    logger: warnOnly,
  });
  const sweepRepository = createSchedulesRepository(sweepDatabase.db);

  /** What a sweep cannot go below: the listing alone, and the bulk Postgres reads of reconcile and processAllDue alone. */
  async function floors(schedules: number): Promise<Floors> {
    let t = performance.now();
    let listed = 0;
    for await (const summary of client.schedule.list({ pageSize: 1000 })) listed += summary.scheduleId === '' ? 0 : 1;
    const listingMs = performance.now() - t;
    t = performance.now();
    await sweepRepository.listStates();
    await sweepRepository.listLiveDefinitions();
    const readsMs = performance.now() - t;
    log(
      `  floors over ${schedules}: listing ${listed} schedules ${(listingMs / 1000).toFixed(2)} s; states + definitions read ${(readsMs / 1000).toFixed(2)} s`,
    );
    return { listingMs, readsMs };
  }

  /**
   * Every probe fire time in (from, through] (and after the probe's schedule existed): exactly one fire-log row
   * `started` / `on_time` and exactly one run. Returns the counts, the problems and the latest decision's lateness.
   */
  async function checkFires(from: number, through: number) {
    const { rows: created } = await db.query<{ activity_id: string; created: number }>(
      `SELECT activity_id::text, (extract(epoch FROM created_at) * 1000)::float8 AS created FROM schedule_states WHERE activity_id = ANY($1::uuid[])`,
      [probeIds],
    );
    const expected = new Map<string, number[]>();
    for (const row of created) {
      const times: number[] = [];
      const first = Math.floor(Math.max(row.created, from) / probePeriodMs) * probePeriodMs + probePeriodMs;
      for (let t = first; t <= through; t += probePeriodMs) times.push(t);
      expected.set(row.activity_id, times);
    }
    const window = [new Date(from), new Date(through)];
    const { rows: fires } = await db.query<{
      activity_id: string;
      at: number;
      status: string;
      reason: string;
      late: number | null;
    }>(
      `SELECT activity_id::text, (extract(epoch FROM scheduled_for) * 1000)::float8 AS at, status, reason, late_by_ms AS late
       FROM schedule_fires WHERE activity_id = ANY($1::uuid[]) AND scheduled_for > $2 AND scheduled_for <= $3`,
      [probeIds, ...window],
    );
    const { rows: runRows } = await db.query<{ activity_id: string; at: number; n: number }>(
      `SELECT activity_id::text, (extract(epoch FROM scheduled_for) * 1000)::float8 AS at, count(*)::int AS n FROM activity_runs
       WHERE activity_id = ANY($1::uuid[]) AND scheduled_for > $2 AND scheduled_for <= $3 GROUP BY 1, 2`,
      [probeIds, ...window],
    );
    const key = (activity: string, at: number) => `${activity}@${at}`;
    const fireBy = new Map<string, Array<{ status: string; reason: string; late: number | null }>>();
    for (const fire of fires)
      fireBy.set(key(fire.activity_id, fire.at), [...(fireBy.get(key(fire.activity_id, fire.at)) ?? []), fire]);
    const runsBy = new Map(runRows.map((row) => [key(row.activity_id, row.at), row.n]));
    let ok = 0;
    const problems: string[] = [];
    for (const [activity, times] of expected) {
      for (const at of times) {
        const decided = fireBy.get(key(activity, at)) ?? [];
        const runCount = runsBy.get(key(activity, at)) ?? 0;
        if (
          decided.length === 1 &&
          decided[0]!.status === 'started' &&
          decided[0]!.reason === 'on_time' &&
          runCount === 1
        )
          ok++;
        else
          problems.push(
            `${activity} ${new Date(at).toISOString()}: fire log ${JSON.stringify(decided)}, runs ${runCount}`,
          );
      }
    }
    const expectedKeys = new Set([...expected].flatMap(([activity, times]) => times.map((at) => key(activity, at))));
    const extra = fires.filter((fire) => !expectedKeys.has(key(fire.activity_id, fire.at))).length;
    const maxLateMs = Math.max(0, ...fires.map((fire) => fire.late ?? 0));
    return { total: expectedKeys.size, ok, problems, extra, maxLateMs };
  }

  /**
   * Registering thousands of schedules leaves Temporal working through their first tasks for a while (on the
   * dev server, minutes, during which no schedule fires on time). The sweeps are measured once every probe
   * schedule fires within 5 s of its time again.
   */
  async function settle(): Promise<number> {
    const started = Date.now();
    if (probes === 0) return 0;
    log('waiting until Temporal fires the probe schedules on time again…');
    await waitFor(
      'Temporal to fire the probe schedules on time',
      20 * 60_000,
      async () => {
        for (const id of probeIds) {
          const description = await client.schedule
            .getHandle(`schedule-${id}-0`)
            .describe()
            .catch(() => undefined);
          const last = description?.info.recentActions.at(-1);
          if (last === undefined || Date.now() - last.scheduledAt.getTime() > probePeriodMs + 10_000) return undefined;
          if (last.takenAt.getTime() - last.scheduledAt.getTime() > 5_000) return undefined;
        }
        return true;
      },
      5_000,
    );
    log(`  settled after ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return Date.now() - started;
  }

  // ---------------------------------------------------------- registration
  const zones = ['UTC', 'UTC', 'Europe/Paris', 'America/New_York'];
  const probeIds: string[] = [];
  /** A daily cron whose hour is at least 6 hours away in UTC terms, whatever the zone (none fires during the run). */
  const quietHour = (new Date().getUTCHours() + 12) % 24;
  const body = (i: number) =>
    i >= count - probes
      ? {
          name: `cron-probe-${i}`,
          triggers: [{ type: 'cron', cron: probeCron, timezone: 'UTC' }],
          tasks: [{ type: 'noop' }],
        }
      : {
          name: `cron-scale-${i}`,
          triggers: [
            { type: 'cron', cron: `${i % 60} ${(quietHour + (i % 3)) % 24} * * *`, timezone: zones[i % zones.length] },
          ],
          tasks: [{ type: 'noop' }],
        };
  async function register(from: number, to: number): Promise<Registration> {
    let next = from;
    const latencies: number[] = [];
    const started = performance.now();
    let lastLog = Date.now();
    await Promise.all(
      Array.from({ length: Math.min(concurrency, to - from) }, async () => {
        while (next < to) {
          const i = next++;
          const at = performance.now();
          const response = await fetch(`${base}/v1/activities`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body(i)),
            signal: AbortSignal.timeout(60_000),
          });
          const answer = (await response.json()) as { id?: string; schedules?: unknown[] };
          if (response.status !== 201 || answer.id === undefined || answer.schedules?.length !== 1) {
            throw new Error(`registering activity ${i} answered ${response.status} ${JSON.stringify(answer)}`);
          }
          latencies.push(performance.now() - at);
          if (i >= count - probes) probeIds.push(answer.id);
          if (Date.now() - lastLog > 15_000) {
            lastLog = Date.now();
            log(`  registered ${next - from} of ${to - from}…`);
          }
          if (Date.now() > overallDeadline) throw new Error('timed out registering');
        }
      }),
    );
    return { count: to - from, seconds: (performance.now() - started) / 1000, latencies };
  }

  /** One sweep as a worker runs it (`reconcile` from the listing, then `processAllDue`), or with `describe` what the on-demand reconcile does, then `processAllDue`. */
  async function sweep(schedules: number, compareWith: 'listing' | 'describe'): Promise<SweepFigures> {
    rpcCounts.clear();
    queryCount = 0;
    const t0 = performance.now();
    const changes = await manager.reconcile({ compareWith });
    const t1 = performance.now();
    const processed = await manager.processAllDue();
    const t2 = performance.now();
    const outcome = `created ${changes.created.length}, updated ${changes.updated.length}, deleted ${changes.deleted.length}, unchanged ${changes.unchanged}; due processed ${processed}`;
    return {
      schedules,
      reconcileMs: t1 - t0,
      dueMs: t2 - t1,
      rpcs: Object.fromEntries(rpcCounts),
      queries: queryCount,
      outcome,
      changes,
    };
  }
  const describeFigures = (f: SweepFigures) =>
    `reconcile ${(f.reconcileMs / 1000).toFixed(2)} s + processAllDue ${(f.dueMs / 1000).toFixed(2)} s; ${f.outcome}; RPCs ${JSON.stringify(f.rpcs)}; Postgres statements ${f.queries}`;

  /** The worker's sweep `--sweeps` times (the first is what a starting worker runs, the rest what every 60 s runs). */
  async function sweepRounds(schedules: number): Promise<SweepFigures[]> {
    const periodic: SweepFigures[] = [];
    const session = cpuProfileDir !== undefined && schedules === count ? new Session() : undefined;
    if (session !== undefined) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    for (let round = 1; round <= sweeps; round++) {
      log(`sweep ${round}/${sweeps} over ${schedules} schedules…`);
      const f = await sweep(schedules, 'listing');
      log(`  ${describeFigures(f)}`);
      periodic.push(f);
    }
    if (session !== undefined) {
      const { profile } = await session.post('Profiler.stop');
      const file = join(cpuProfileDir!, `cron-scale-sweeps-${count}.cpuprofile`);
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
      log(`  CPU profile of these sweeps (this process: the sweep and the worker): ${file}`);
    }
    return periodic;
  }

  /** The reconciliation that describes every schedule (`POST /v1/schedules/reconcile`, the API's start-up), then `processAllDue`. */
  async function describeRound(schedules: number): Promise<SweepFigures> {
    log(`reconcile describing every schedule, over ${schedules} schedules…`);
    const f = await sweep(schedules, 'describe');
    log(`  ${describeFigures(f)}`);
    return f;
  }

  /** Schedules lost in Temporal behind the product's back: the periodic sweep must recreate them. */
  async function repairRound(schedules: number): Promise<SweepFigures | undefined> {
    if (drift === 0) return undefined;
    const { rows } = await db.query<{ schedule_id: string }>(
      'SELECT schedule_id FROM schedule_states ORDER BY schedule_id DESC LIMIT $1',
      [drift],
    );
    const lost = new Set(rows.map((row) => row.schedule_id));
    log(`deleting ${lost.size} schedules directly in Temporal, waiting for the listing to drop them…`);
    for (const id of lost) await client.schedule.getHandle(id).delete();
    await waitFor(
      'the listing to drop the deleted schedules',
      120_000,
      async () => {
        for await (const summary of client.schedule.list({ pageSize: 1000 }))
          if (lost.has(summary.scheduleId)) return undefined;
        return true;
      },
      5000,
    );
    log(`sweep over ${schedules} schedules, ${lost.size} of them missing in Temporal…`);
    const f = await sweep(schedules, 'listing');
    log(`  ${describeFigures(f)}`);
    if (f.changes.created.length !== lost.size || !f.changes.created.every((id) => lost.has(id))) {
      throw new Error(
        `the sweep recreated ${f.changes.created.length} schedules, expected the ${lost.size} deleted ones`,
      );
    }
    return f;
  }

  log(`registering ${baseline} cron activities, ${concurrency} senders…`);
  const regBase = await register(0, baseline);
  const baseSweeps = await sweepRounds(baseline);
  const baseFloors = await floors(baseline);
  const baseDescribe = await describeRound(baseline);
  log(
    `registering ${count - baseline} more (to ${count}; the last ${probes} are the probes on "${probeCron}"), ${concurrency} senders…`,
  );
  const regMore = await register(baseline, count);
  const { rows: stateCount } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM schedule_states');
  if (stateCount[0]?.n !== count) throw new Error(`expected ${count} schedule states, found ${stateCount[0]?.n}`);
  const settleMs = await settle();
  const sweepsStartedAt = Date.now();
  const fullSweeps = await sweepRounds(count);
  const fullFloors = await floors(count);
  const repair = await repairRound(count);

  log('POST /v1/schedules/reconcile (the API, 10 s deadline)…');
  const apiStarted = performance.now();
  const apiResponse = await fetch(`${base}/v1/schedules/reconcile`, {
    method: 'POST',
    signal: AbortSignal.timeout(300_000),
  });
  const apiBody = await apiResponse.text();
  const apiMs = performance.now() - apiStarted;
  log(`  ${apiResponse.status} in ${(apiMs / 1000).toFixed(2)} s: ${apiBody.slice(0, 200)}`);

  // ---------------------------------------------------------- no missed fire
  let fireCheck = 'no probes';
  let settleNote = '';
  if (probes > 0) {
    // Every probe fire time up to the first one at least a period after the last sweep, plus time to start and record its run.
    const through = Math.ceil((Date.now() + probePeriodMs) / probePeriodMs) * probePeriodMs;
    log(`waiting for the probes' fire time ${new Date(through).toISOString()} and their runs…`);
    await sleep(Math.max(0, through - Date.now()));
    await waitFor(
      'every probe fire time to have a decision and no start pending',
      180_000,
      async () => {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM schedule_fires WHERE activity_id = ANY($1::uuid[]) AND scheduled_for = $2 AND status <> 'pending'`,
          [probeIds, new Date(through)],
        );
        return (rows[0]?.n ?? 0) >= probeIds.length ? true : undefined;
      },
      1000,
    ).catch(() => log('  not every probe has decided its last fire time after 3 minutes; counting what is there'));
    await sleep(5_000); // the runs' own records (activity_runs) are written by the runs, a moment after they start
    const during = await checkFires(sweepsStartedAt, through);
    const before = await checkFires(0, sweepsStartedAt);
    fireCheck =
      `${probes} probes on "${probeCron}", from the first sweep to ${new Date(through).toISOString()}: ${during.ok} of ${during.total} fire times ran exactly once, on time` +
      ` (latest decision ${(during.maxLateMs / 1000).toFixed(1)} s after its time; grace 60 s)` +
      (during.extra > 0 ? `; ${during.extra} fire-log rows at unexpected times` : '');
    settleNote = `before the sweeps (registration, then waiting ${(settleMs / 1000).toFixed(0)} s for Temporal to fire on time again): ${before.ok} of ${before.total} on time`;
    for (const problem of during.problems.slice(0, 20)) log(`  during the sweeps: ${problem}`);
    for (const problem of before.problems.slice(0, 5)) log(`  before the sweeps: ${problem}`);
  }

  // Last, as it slows Temporal's own scheduler down (see docs/performance.md): only when asked for.
  const fullDescribe = describeAll ? await describeRound(count) : undefined;
  const load1 = loadavg();

  // ---------------------------------------------------------- report
  const f = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
  const sumRpcs = (s: SweepFigures) => Object.values(s.rpcs).reduce((a, b) => a + b, 0);
  const total = (s: SweepFigures) => s.reconcileMs + s.dueMs;
  const best = (rounds: SweepFigures[]) => rounds.reduce((a, b) => (total(a) <= total(b) ? a : b));
  const b = best(baseSweeps);
  const n = best(fullSweeps);
  const med = (rounds: SweepFigures[], pick: (s: SweepFigures) => number) => median(rounds.map(pick));
  const ms = (value: number) => (value >= 10_000 ? `${f(value / 1000, 1)} s` : `${f(value)} ms`);
  const perSchedule = (value: number, schedules: number) => `${f((value / schedules) * 1000)} µs`;
  const rate = (r: Registration) => r.count / r.seconds;
  const rows: Array<[string, string, string, string]> = [
    [
      `registration, \`POST /v1/activities\` (${concurrency} senders)`,
      `${f(rate(regBase), 1)} /s (p50 ${f(median(regBase.latencies))} ms)`,
      `${f(rate(regMore), 1)} /s (p50 ${f(median(regMore.latencies))}, p99 ${f(percentile(regMore.latencies, 99))} ms)`,
      '—',
    ],
    [
      `worker sweep (from the listing), median of ${sweeps}`,
      ms(med(baseSweeps, total)),
      ms(med(fullSweeps, total)),
      `≤ 60 s at ${count}`,
    ],
    [
      ' of which `reconcile()`',
      ms(med(baseSweeps, (s) => s.reconcileMs)),
      ms(med(fullSweeps, (s) => s.reconcileMs)),
      '',
    ],
    [' of which `processAllDue()`', ms(med(baseSweeps, (s) => s.dueMs)), ms(med(fullSweeps, (s) => s.dueMs)), ''],
    [
      ' per schedule',
      perSchedule(med(baseSweeps, total), baseline),
      perSchedule(med(fullSweeps, total), count),
      `≤ ${f((60_000 / count) * 1000)} µs`,
    ],
    [
      ' floors: `ListSchedules` alone; states + definitions read alone',
      `${ms(baseFloors.listingMs)}; ${ms(baseFloors.readsMs)}`,
      `${ms(fullFloors.listingMs)}; ${ms(fullFloors.readsMs)}`,
      '',
    ],
    [
      ' Temporal RPCs / Postgres statements per schedule (fastest round)',
      `${f(sumRpcs(b) / baseline, 3)} / ${f(b.queries / baseline, 3)}`,
      `${f(sumRpcs(n) / count, 3)} / ${f(n.queries / count, 3)}`,
      '',
    ],
    ...(repair === undefined
      ? []
      : [
          [
            ` the same with ${drift} schedules deleted in Temporal (all recreated)`,
            '',
            `${ms(total(repair))}; ${JSON.stringify(repair.rpcs)}`,
            '',
          ] as [string, string, string, string],
        ]),
    [
      'reconcile describing every schedule (on-demand, API start-up), + `processAllDue()`',
      `${ms(total(baseDescribe))} (${perSchedule(total(baseDescribe), baseline)} per schedule)`,
      fullDescribe === undefined
        ? 'not run (--describe-all)'
        : `${ms(total(fullDescribe))} (${perSchedule(total(fullDescribe), count)} per schedule)`,
      '',
    ],
    [
      '`POST /v1/schedules/reconcile` (API: describes every schedule, 10 s deadline)',
      '—',
      `${apiResponse.status} in ${f(apiMs / 1000, 1)} s`,
      '',
    ],
    ['no missed fire during the sweeps', '', fireCheck, 'every probe fire time exactly once'],
  ];
  const out: string[] = [];
  out.push('');
  out.push(`activity-core cron scale — commit ${gitCommit()}, ${new Date().toISOString()}`);
  out.push(
    `machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${f(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}; load average (1/5/15 min) at start ${load0.map((l) => f(l, 2)).join(' ')}, at end ${load1.map((l) => f(l, 2)).join(' ')}`,
  );
  out.push(
    `stack: Temporal dev server (in-memory SQLite; dynamic config ${JSON.stringify(DEV_SERVER_DYNAMIC_CONFIG)}) + embedded Postgres + API (process) + 1 worker (in the benchmark's process, its own periodic sweep off); DATABASE_POOL_SIZE=${config.databasePoolSize}`,
  );
  out.push(
    `schedules: ${count} cron activities (one trigger each), ${probes} on "${probeCron}", the rest daily at hours that do not come round during the run; at ${baseline} and at ${count}: ${sweeps} worker sweeps; a reconcile describing every schedule at ${baseline}${describeAll ? ` and at ${count}` : ''}`,
  );
  out.push('');
  out.push(`| measure | ${baseline} schedules | ${count} schedules | target |`);
  out.push('|---|---|---|---|');
  for (const row of rows) out.push(`| ${row.join(' | ')} |`);
  out.push('');
  for (const [label, rounds] of [
    [`${baseline}`, baseSweeps],
    [`${count}`, fullSweeps],
  ] as const) {
    for (const [i, s] of rounds.entries()) out.push(`worker sweep ${label} #${i + 1}: ${describeFigures(s)}`);
  }
  out.push(`describing every schedule, ${baseline}: ${describeFigures(baseDescribe)}`);
  if (fullDescribe !== undefined) out.push(`describing every schedule, ${count}: ${describeFigures(fullDescribe)}`);
  if (repair !== undefined)
    out.push(`worker sweep ${count} with ${drift} deleted in Temporal: ${describeFigures(repair)}`);
  if (settleNote !== '') out.push(`probe fire times ${settleNote}`);
  out.push(`API reconcile answer: ${apiBody.slice(0, 300)}`);
  console.log(out.join('\n'));
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanup();
}
