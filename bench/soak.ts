/**
 * Soak: steady ingest for a long time on its own stack, watching the processes' memory and errors.
 *
 *   npm run bench:soak -- [--minutes 10] [--rate <events/s>] [--warmup-min 2] [--sample-s 10]
 *                         [--capacity-events 300] [--concurrency 32] [--built] [--timeout-min <minutes + 20>]
 *
 * Starts its own Temporal dev server and embedded Postgres, applies the migrations, and runs the
 * API and one worker as separate node processes (the sources through tsx, or with --built the
 * compiled dist/api/main.js and dist/worker/main.js; the worker with the node flags and environment
 * `npm run start:worker` gives it, apps/worker/src/runtime-flags.ts), with RATE_LIMIT_MAX=0,
 * LOG_LEVEL=warn and every other setting at its default. One activity with one `noop` task.
 *
 *   1. capacity (unless --rate is given): `--capacity-events` new events from `--concurrency`
 *      senders, then the time until their last run finished: end-to-end runs per second, what the
 *      stack sustains (ingest alone is faster; a soak above the run rate would only grow a backlog);
 *   2. soak: new events at half that rate (or `--rate`), open loop (event i is due at i/rate
 *      seconds, whatever the answers take; at most 256 in flight), for `--minutes`;
 *      every `--sample-s` seconds the VmRSS of the API's and the worker's node processes, the
 *      events answered and the runs finished so far;
 *   3. drain: posting stops, every run must finish; then the checks: every event answered 202
 *      and stored, exactly one succeeded run per event.
 *
 * Prints the samples, the memory growth after the warm-up (`--warmup-min`, from the first sample
 * after it to the last, and the slope of a least-squares line through those samples), the
 * latency of the answers per minute, and every error. Every wait is bounded; everything it started
 * is stopped when it ends or fails (on Ctrl-C the processes stop, but a scratch directory
 * /tmp/activity-core-soak-* may be left behind: delete it). Exits 1 when a check fails.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
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
import pg from 'pg';
import { API_NODE_FLAGS, API_PROCESS_ENV } from '../apps/api/src/runtime-flags';
import { WORKER_NODE_FLAGS, WORKER_PROCESS_ENV } from '../apps/worker/src/runtime-flags';
import { memoryMb } from './proc';

// ---------------------------------------------------------------- options

function option(name: string, fallback: number | undefined, integer = true): number | undefined {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value)))
    throw new Error(`--${name} needs a positive ${integer ? 'integer' : 'number'}`);
  return value;
}
const minutes = option('minutes', 10, false)!;
const givenRate = option('rate', undefined, false);
const warmupMin = option('warmup-min', 2, false)!;
const sampleS = option('sample-s', 10, false)!;
const capacityEvents = option('capacity-events', 300)!;
const concurrency = option('concurrency', 32)!;
const timeoutMs = option('timeout-min', Math.ceil(minutes) + 20)! * 60_000;
const MAX_IN_FLIGHT = 256;
const root = process.cwd();
const distDir = join(root, 'dist');
const distApi = join(distDir, 'api', 'main.js');
const distWorker = join(distDir, 'worker', 'main.js');
const built = process.argv.includes('--built');
if (built && (!existsSync(distApi) || !existsSync(distWorker)))
  throw new Error('--built needs dist/api/main.js and dist/worker/main.js: run `npm run build` first');
if (warmupMin >= minutes) throw new Error('--warmup-min must be shorter than --minutes');
const mode = built ? 'compiled (dist/)' : 'sources (node --import tsx)';
const overallDeadline = Date.now() + timeoutMs;
const EVENT_TYPE = 'soak.tick';
const log = (message: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);

// ---------------------------------------------------------------- helpers

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

async function waitFor<T>(what: string, ms: number, check: () => Promise<T | undefined>, everyMs = 200): Promise<T> {
  const deadline = Math.min(Date.now() + ms, overallDeadline);
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  return sxx === 0 ? NaN : sxy / sxx;
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

// ---------------------------------------------------------------- processes

type Proc = StackProcess;
const procs = new Set<Proc>();
let cleaning: Promise<void> | undefined;

function startNode(name: string, entry: 'api' | 'worker', env: Record<string, string>): Proc {
  if (cleaning !== undefined) throw new Error(`not starting the ${name}: the soak is stopping`);
  // Both are started as `npm run start:api` / `start:worker` start them: memory flags, malloc arena limit.
  const runtime =
    entry === 'worker'
      ? { flags: [...WORKER_NODE_FLAGS], env: WORKER_PROCESS_ENV }
      : { flags: [...API_NODE_FLAGS], env: API_PROCESS_ENV };
  const args = [...runtime.flags, ...entryPointArgs(entry, built ? distDir : undefined)];
  // process.execPath directly: the child's pid is the node process whose memory is read.
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

const alive = (proc: Proc): boolean => proc.alive();

async function stopProc(proc: Proc, graceMs: number): Promise<void> {
  if (!alive(proc)) return;
  await stopGracefully(proc.child, graceMs);
}

let scratch: string | undefined;
let postgres: RunningPostgres | undefined;
let temporal: TemporalDevServer | undefined;
let probe: pg.Pool | undefined;

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
    log('stopping everything the soak started…');
    await step('the API and worker', () => Promise.all([...procs].map((proc) => stopProc(proc, 15_000))));
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
    log(signal);
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

// ---------------------------------------------------------------- the soak

interface Sample {
  atS: number;
  apiMb: number;
  workerMb: number;
  answered: number;
  runsFinished: number;
}

async function main(): Promise<boolean> {
  const load0 = loadavg();
  const cli = findTemporalCli(root, process.env.TEMPORAL_CLI_PATH, process.env.PATH);
  if (cli === undefined) throw new Error('Temporal CLI not found; run `npm test` or `npm start` once to install it');
  scratch = await mkdtemp(join(tmpdir(), 'activity-core-soak-'));
  await chmod(scratch, 0o755);
  log(`starting Postgres and the Temporal dev server (${mode})…`);
  await Promise.all([
    startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }).then((running) => (postgres = running)),
    startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }).then(
      (running) => (temporal = running),
    ),
  ]);
  if (postgres === undefined || temporal === undefined) throw new Error('Postgres or Temporal did not start');
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE soak');
  await admin.end();
  const databaseUrl = postgres.urlFor('soak');
  await runMigrations(databaseUrl);
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  probe = db;
  db.on('error', (error) => log(`Postgres connection lost: ${error.message}`));

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '0',
  };
  const api = startNode('API', 'api', { ...env, HOST: '127.0.0.1', PORT: String(port) });
  const worker = startNode('worker', 'worker', env);
  const check = () => {
    for (const proc of [api, worker]) if (!alive(proc)) throw new Error(`the ${proc.name} exited:\n${proc.output()}`);
  };
  await waitFor(
    'the API to answer /readyz',
    180_000,
    async () => {
      check();
      const response = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      await response?.arrayBuffer();
      return response?.status === 200 ? true : undefined;
    },
    250,
  );
  const registered = await fetch(`${base}/v1/activities`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'soak',
      triggers: [{ type: 'event', event_type: EVENT_TYPE }],
      tasks: [{ type: 'noop' }],
    }),
  });
  if (registered.status !== 201)
    throw new Error(`registering the activity answered ${registered.status}: ${await registered.text()}`);

  const errors = new Map<string, number>();
  const noteError = (what: string) => errors.set(what, (errors.get(what) ?? 0) + 1);
  /** Posts one new event; its latency, or undefined after an error (counted). */
  const post = async (eventId: string): Promise<number | undefined> => {
    const started = performance.now();
    try {
      const response = await fetch(`${base}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          event_id: eventId,
          event_type: EVENT_TYPE,
          source: 'soak',
          occurred_at: new Date().toISOString(),
          data: { eventId },
        }),
        signal: AbortSignal.timeout(60_000),
      });
      const body = (await response.json()) as { status?: string; runs?: Array<{ status?: string }> };
      if (response.status !== 202) noteError(`HTTP ${response.status}`);
      else if (body.status !== 'accepted') noteError(`answered ${body.status ?? '?'}`);
      else if (body.runs?.[0]?.status !== 'started')
        noteError(`run ${body.runs?.[0]?.status ?? 'missing'} at once (left to the dispatcher)`);
      else return performance.now() - started;
    } catch (error) {
      noteError(`request failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    return undefined;
  };
  const finishedRuns = async (): Promise<number> =>
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM activity_runs WHERE status <> 'running'`)).rows[0]
      ?.n ?? 0;
  const drain = async (expect: number, ms: number) =>
    waitFor(
      `${expect} runs to finish`,
      ms,
      async () => {
        check();
        return (await finishedRuns()) >= expect ? true : undefined;
      },
      250,
    );

  // Warm both processes before anything is measured.
  log('warming up (20 events)…');
  for (let i = 0; i < 20; i++) await post(`warm-${i}`);
  await drain(20, 120_000);
  errors.clear();
  let expectedRuns = 20;

  // 1. Capacity: end-to-end runs per second with `concurrency` senders.
  let capacity: number | undefined;
  if (givenRate === undefined) {
    log(`capacity: ${capacityEvents} events from ${concurrency} senders, until their runs finish…`);
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < capacityEvents) await post(`capacity-${next++}`);
      }),
    );
    expectedRuns += capacityEvents;
    await drain(expectedRuns, 600_000);
    capacity = capacityEvents / ((performance.now() - started) / 1000);
    log(`capacity: ${capacity.toFixed(1)} runs/s end to end`);
  }
  const rate = givenRate ?? capacity! / 2;
  const capacityErrors = new Map(errors);
  errors.clear();

  // 2. The soak: open loop at `rate`, samples every `sampleS`.
  const total = Math.floor(rate * minutes * 60);
  log(`soak: ${total} events at ${rate.toFixed(1)}/s for ${minutes} min, sampling every ${sampleS} s…`);
  const samples: Sample[] = [];
  const latencies: Array<{ atS: number; ms: number }> = [];
  let answered = 0;
  let inFlight = 0;
  let skippedForInFlight = 0;
  const t0 = performance.now();
  const elapsedS = () => (performance.now() - t0) / 1000;
  const takeSample = async () => {
    samples.push({
      atS: elapsedS(),
      apiMb: memoryMb(api.child.pid).rss,
      workerMb: memoryMb(worker.child.pid).rss,
      answered,
      runsFinished: (await finishedRuns()) - expectedRuns,
    });
    const last = samples.at(-1)!;
    log(
      `  ${last.atS.toFixed(0).padStart(4)} s: API ${last.apiMb.toFixed(0)} MB, worker ${last.workerMb.toFixed(0)} MB, answered ${last.answered}, runs finished ${last.runsFinished}`,
    );
  };
  await takeSample();
  let nextSampleAt = sampleS;
  const pending = new Set<Promise<void>>();
  for (let i = 0; i < total; i++) {
    const dueS = i / rate;
    while (elapsedS() < dueS) {
      if (elapsedS() >= nextSampleAt) {
        nextSampleAt += sampleS;
        check();
        await takeSample();
      }
      await sleep(Math.min(20, Math.max(1, (dueS - elapsedS()) * 1000)));
    }
    if (Date.now() > overallDeadline) throw new Error('the overall deadline passed during the soak');
    if (inFlight >= MAX_IN_FLIGHT) {
      // The stack cannot keep up: counted, not queued without bound.
      skippedForInFlight++;
      noteError(`not sent: ${MAX_IN_FLIGHT} requests already in flight`);
      continue;
    }
    inFlight++;
    const request = post(`soak-${i}`).then((ms) => {
      inFlight--;
      answered++;
      if (ms !== undefined) latencies.push({ atS: dueS, ms });
    });
    pending.add(request);
    void request.finally(() => pending.delete(request));
  }
  await Promise.all(pending);
  await takeSample();
  const soakSeconds = elapsedS();

  // 3. Drain and check.
  const sent = total - skippedForInFlight;
  log(`draining: every run of the ${sent} events sent must finish…`);
  const drained = await drain(expectedRuns + sent, 600_000).then(
    () => true,
    (error: unknown) => (log(String(error)), false),
  );
  const { rows: stored } = await db.query<{ events: number; runs: number; succeeded: number; doubled: number }>(
    `SELECT (SELECT count(*) FROM events WHERE event_id LIKE 'soak-%')::int AS events,
            (SELECT count(*) FROM activity_runs WHERE event_id LIKE 'soak-%')::int AS runs,
            (SELECT count(*) FROM activity_runs WHERE event_id LIKE 'soak-%' AND status = 'succeeded')::int AS succeeded,
            (SELECT count(*) FROM (SELECT event_id FROM activity_runs GROUP BY event_id HAVING count(*) > 1) d)::int AS doubled`,
  );
  const totals = stored[0]!;
  const load1 = loadavg();

  // ------------------------------------------------------------ report
  const f = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
  const warm = samples.filter((s) => s.atS >= warmupMin * 60);
  const first = warm[0];
  const last = warm.at(-1);
  const perMin = (key: 'apiMb' | 'workerMb') => slope(warm.map((s) => [s.atS / 60, s[key]]));
  const errorCount = [...errors.values()].reduce((a, b) => a + b, 0);
  const checks: Array<[string, boolean]> = [
    ['every soak event answered 202 with its run started', errorCount === 0],
    [`every event sent is stored (${totals.events} of ${sent})`, totals.events === sent],
    [
      `exactly one run per event, all succeeded (${totals.runs} runs, ${totals.succeeded} succeeded, ${totals.doubled} events with more than one)`,
      totals.runs === sent && totals.succeeded === sent && totals.doubled === 0,
    ],
    ['every run finished after the soak', drained],
    ['the API and the worker never exited', alive(api) && alive(worker)],
  ];
  const out: string[] = [];
  out.push('');
  out.push(`activity-core soak — commit ${gitCommit()}, ${new Date().toISOString()}`);
  out.push(
    `machine: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${f(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}; load average (1/5/15 min) at start ${load0.map((l) => f(l, 2)).join(' ')}, at end ${load1.map((l) => f(l, 2)).join(' ')}`,
  );
  out.push(
    `stack: Temporal dev server (in-memory SQLite) + embedded Postgres + API + 1 worker on this machine, ${mode}; RATE_LIMIT_MAX=0, LOG_LEVEL=warn, other settings default; API and worker started as \`npm run start:api\` / \`start:worker\` start them (API ${[...Object.entries(API_PROCESS_ENV).map(([k, v]) => `${k}=${v}`), ...API_NODE_FLAGS].join(' ')}; worker ${[...Object.entries(WORKER_PROCESS_ENV).map(([k, v]) => `${k}=${v}`), ...WORKER_NODE_FLAGS].join(' ')}); one activity, one \`noop\` task`,
  );
  out.push(
    capacity === undefined
      ? `rate: ${f(rate, 1)} events/s (--rate)`
      : `capacity: ${f(capacity, 1)} runs/s end to end (${capacityEvents} events from ${concurrency} senders until their last run finished${capacityErrors.size > 0 ? `; ${[...capacityErrors].map(([what, n]) => `${n}× ${what}`).join(', ')}` : ''}); soak rate: half, ${f(rate, 1)} events/s`,
  );
  out.push(
    `soak: ${f(soakSeconds / 60, 1)} min, ${sent} events sent (open loop), warm-up ${warmupMin} min excluded from growth, samples every ${sampleS} s`,
  );
  out.push('');
  out.push('| | API (VmRSS) | worker (VmRSS) |');
  out.push('|---|---|---|');
  out.push(`| first sample | ${f(samples[0]?.apiMb ?? NaN)} MB | ${f(samples[0]?.workerMb ?? NaN)} MB |`);
  out.push(
    `| after warm-up (${f(first?.atS ?? NaN)} s) | ${f(first?.apiMb ?? NaN)} MB | ${f(first?.workerMb ?? NaN)} MB |`,
  );
  out.push(`| end (${f(last?.atS ?? NaN)} s) | ${f(last?.apiMb ?? NaN)} MB | ${f(last?.workerMb ?? NaN)} MB |`);
  out.push(
    `| growth after warm-up (end − after warm-up) | ${f((last?.apiMb ?? NaN) - (first?.apiMb ?? NaN), 1)} MB | ${f((last?.workerMb ?? NaN) - (first?.workerMb ?? NaN), 1)} MB |`,
  );
  out.push(
    `| trend after warm-up (least squares) | ${f(perMin('apiMb'), 2)} MB/min | ${f(perMin('workerMb'), 2)} MB/min |`,
  );
  out.push(
    `| peak | ${f(Math.max(...samples.map((s) => s.apiMb)))} MB | ${f(Math.max(...samples.map((s) => s.workerMb)))} MB |`,
  );
  out.push('');
  out.push('| minute | answers | latency p50 / p99 (ms) | API MB | worker MB | runs behind at its end |');
  out.push('|---|---|---|---|---|---|');
  for (let minute = 0; minute < Math.ceil(soakSeconds / 60); minute++) {
    const inMinute = latencies.filter((l) => l.atS >= minute * 60 && l.atS < (minute + 1) * 60).map((l) => l.ms);
    const sample = [...samples].reverse().find((s) => s.atS <= (minute + 1) * 60 + sampleS / 2);
    out.push(
      `| ${minute + 1} | ${inMinute.length} | ${f(percentile(inMinute, 50))} / ${f(percentile(inMinute, 99))} | ${f(sample?.apiMb ?? NaN)} | ${f(sample?.workerMb ?? NaN)} | ${sample === undefined ? 'n/a' : sample.answered - sample.runsFinished} |`,
    );
  }
  out.push('');
  out.push(
    `errors during the soak: ${errorCount === 0 ? 'none' : [...errors].map(([what, n]) => `${n}× ${what}`).join('; ')}`,
  );
  for (const [what, ok] of checks) out.push(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  out.push('');
  out.push('samples (s, API MB, worker MB, answered, runs finished):');
  out.push(samples.map((s) => `${f(s.atS)},${f(s.apiMb)},${f(s.workerMb)},${s.answered},${s.runsFinished}`).join(' '));
  console.log(out.join('\n'));
  return checks.every(([, ok]) => ok);
}

try {
  if (!(await main())) process.exitCode = 1;
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cleanup();
}
