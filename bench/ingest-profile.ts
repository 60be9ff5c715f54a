/**
 * Where one ingest request's time goes: every Postgres round trip and every Temporal start of a
 * request, counted and timed, for a new event, a duplicate and a webhook delivery.
 *
 *   npx tsx bench/ingest-profile.ts [--events 200] [--cpu-prof]
 *
 * Starts its own Temporal dev server and embedded Postgres, runs the real API app in this process
 * (createApiApp, every setting at its default, no worker: the runs are started and never run) and
 * sends requests one at a time through `server.inject`, so each Postgres query and each start RPC
 * belongs to exactly one request. `pg.Client.prototype.query` and `WorkflowClient.prototype.start`
 * are wrapped to time them, and the process's CPU time (`process.cpuUsage`) is divided among the
 * requests (it includes `server.inject`'s share, the client side). With `--cpu-prof` the measured phases are also CPU-profiled (the V8
 * inspector in this process) and the functions with the most self time are printed, by package.
 * Sequential requests show the cost of one request on an idle stack, not throughput under load:
 * that is `npm run bench:hot-path`.
 */
import { createHmac } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { Session, type Profiler } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@activity-core/config';
import { runMigrations } from '@activity-core/db';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  findTemporalCli,
  startEmbeddedPostgres,
  startTemporalDevServer,
  type RunningPostgres,
  type TemporalDevServer,
} from '@activity-core/dev-services';
import { WorkflowClient } from '@temporalio/client';
import pg from 'pg';
import { createApiApp, type ApiApp } from '../apps/api/src/app';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive integer`);
  return value;
}
const events = flag('events', 200);
const cpuProfile = process.argv.includes('--cpu-prof');
const log = (message: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);

// ---------------------------------------------------------------- instrumentation

interface Call {
  what: string;
  ms: number;
}
let calls: Call[] | undefined;

/** A query's shape: its SQL with literals and parameters left out, cut to a readable length. */
function shape(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/\$\d+/g, '?')
    .replace(/'[^']*'/g, "'…'")
    .trim()
    .slice(0, 110);
}

const originalQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0];
  const text = typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '?');
  const started = performance.now();
  const record = () => calls?.push({ what: `pg: ${shape(text)}`, ms: performance.now() - started });
  // pg.Pool#query calls the client with a callback (and gets no promise back): time the callback.
  const last = args.length - 1;
  const callback = args[last];
  if (typeof callback === 'function') {
    args[last] = (...results: unknown[]) => {
      record();
      return (callback as (...r: unknown[]) => unknown)(...results);
    };
  }
  const result = (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  if (
    typeof callback !== 'function' &&
    result !== undefined &&
    typeof (result as Promise<unknown>).then === 'function'
  ) {
    (result as Promise<unknown>).then(record, record);
  }
  return result;
} as typeof originalQuery;

const originalStart = WorkflowClient.prototype.start;
WorkflowClient.prototype.start = async function (this: WorkflowClient, ...args: Parameters<typeof originalStart>) {
  const started = performance.now();
  try {
    return await originalStart.apply(this, args);
  } finally {
    calls?.push({ what: 'temporal: StartWorkflowExecution', ms: performance.now() - started });
  }
} as typeof originalStart;

interface Summary {
  requests: number;
  /** CPU time (user + system) this process spent over all the requests: the API's own work, and the client's. */
  cpuMs: number;
  totalMs: number[];
  byWhat: Map<string, { count: number; ms: number }>;
}

/** Sends `count` requests one at a time; returns what each cost. */
async function measure(count: number, send: (i: number) => Promise<void>): Promise<Summary> {
  const summary: Summary = { requests: count, cpuMs: 0, totalMs: [], byWhat: new Map() };
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    calls = [];
    const started = performance.now();
    await send(i);
    summary.totalMs.push(performance.now() - started);
    for (const call of calls) {
      const entry = summary.byWhat.get(call.what) ?? { count: 0, ms: 0 };
      entry.count++;
      entry.ms += call.ms;
      summary.byWhat.set(call.what, entry);
    }
    calls = undefined;
  }
  const used = process.cpuUsage(cpu);
  summary.cpuMs = (used.user + used.system) / 1000;
  return summary;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

function report(title: string, summary: Summary): string[] {
  const n = summary.requests;
  const perRequest = [...summary.byWhat]
    .map(([what, entry]) => ({ what, count: entry.count / n, ms: entry.ms / n }))
    .sort((a, b) => b.ms - a.ms);
  const pgTrips = perRequest.filter((row) => row.what.startsWith('pg:')).reduce((sum, row) => sum + row.count, 0);
  const awaited = perRequest.reduce((sum, row) => sum + row.ms, 0);
  const mean = summary.totalMs.reduce((a, b) => a + b, 0) / n;
  const lines = [
    '',
    `## ${title} — ${n} requests one at a time: mean ${mean.toFixed(2)} ms, median ${median(summary.totalMs).toFixed(2)} ms; ${pgTrips.toFixed(2)} Postgres round trips and ${(summary.cpuMs / n).toFixed(2)} ms of this process's CPU per request`,
    '',
    '| per request | calls | ms (mean) | share |',
    '|---|---|---|---|',
  ];
  for (const row of perRequest)
    lines.push(
      `| \`${row.what.replace(/\|/g, '\\|')}\` | ${row.count.toFixed(2)} | ${row.ms.toFixed(2)} | ${((100 * row.ms) / mean).toFixed(0)}% |`,
    );
  lines.push(
    `| everything else (this process's CPU: HTTP, validation, JSON, drizzle, pg protocol) | | ${(mean - awaited).toFixed(2)} | ${((100 * (mean - awaited)) / mean).toFixed(0)}% |`,
  );
  return lines;
}

async function hottest(session: Session, run: () => Promise<void>): Promise<string[]> {
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  await run();
  const { profile } = (await session.post('Profiler.stop')) as { profile: Profiler.Profile };
  const self = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) self.set(samples[i]!, (self.get(samples[i]!) ?? 0) + (deltas[i] ?? 0));
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0;
    total += us;
    const url = node.callFrame.url;
    const pkg =
      url === ''
        ? `(${node.callFrame.functionName || 'native'})`
        : (/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
          (url.startsWith('node:')
            ? 'node core'
            : url.includes('/packages/') || url.includes('/apps/')
              ? 'activity-core'
              : url));
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    const fn = `${node.callFrame.functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/main\//, '')}:${node.callFrame.lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  }
  const top = (map: Map<string, number>, k: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([name, us]) => `| ${name} | ${(us / 1000).toFixed(0)} ms | ${((100 * us) / total).toFixed(1)}% |`);
  return [
    '',
    `## CPU profile of the measured phases (${(total / 1000).toFixed(0)} ms sampled in this process)`,
    '',
    '| package | self time | share |',
    '|---|---|---|',
    ...top(byPackage, 12),
    '',
    '| function | self time | share |',
    '|---|---|---|',
    ...top(byFunction, 20),
  ];
}

// ---------------------------------------------------------------- the run

let scratch: string | undefined;
let postgres: RunningPostgres | undefined;
let temporal: TemporalDevServer | undefined;
let app: ApiApp | undefined;

async function main(): Promise<void> {
  const cli = findTemporalCli(process.cwd(), process.env.TEMPORAL_CLI_PATH, process.env.PATH);
  if (cli === undefined) throw new Error('Temporal CLI not found; run `npm test` or `npm start` once to install it');
  scratch = await mkdtemp(join(tmpdir(), 'activity-core-ingest-profile-'));
  // Postgres may run as another user, who must reach its data directory.
  await chmod(scratch, 0o755);
  log('starting Postgres and the Temporal dev server…');
  // Each kept as soon as it runs, so a failure of the other still stops it.
  const starting = [
    startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }).then((running) => (postgres = running)),
    startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }).then(
      (running) => (temporal = running),
    ),
  ];
  await Promise.all(starting);
  if (postgres === undefined || temporal === undefined) throw new Error('unreachable');
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE profile');
  await admin.end();
  const databaseUrl = postgres.urlFor('profile');
  await runMigrations(databaseUrl);
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '0',
    TEMPORAL_TASK_QUEUE: 'profile-unpolled',
  });
  app = await createApiApp(config, { logger: false });
  const server = app.server;

  const registered = await server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: { name: 'profile', triggers: [{ type: 'event', event_type: 'profile.tick' }], tasks: [{ type: 'noop' }] },
  });
  if (registered.statusCode !== 201)
    throw new Error(`registering answered ${registered.statusCode}: ${registered.body}`);
  const secret = 'profile-secret-0123456789abcdef0123';
  const source = await server.inject({
    method: 'PUT',
    url: '/v1/webhook-sources/profile',
    payload: { name: 'profile', scheme: 'hmac_sha256', secret, allow_replay_without_timestamp: true },
  });
  if (source.statusCode >= 300)
    throw new Error(`registering the webhook source answered ${source.statusCode}: ${source.body}`);

  const post = async (id: string, expect: 'accepted' | 'duplicate'): Promise<void> => {
    const response = await server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: id,
        event_type: 'profile.tick',
        source: 'profile',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { id },
      },
    });
    if (response.statusCode !== 202 || response.json().status !== expect)
      throw new Error(`${id} answered ${response.statusCode} ${response.body}`);
  };
  const deliver = async (id: string, expect: 'accepted' | 'duplicate'): Promise<void> => {
    const body = JSON.stringify({ id, type: 'profile.tick', data: { id } });
    const signature = `${createHmac('sha256', secret).update(body).digest('hex')}`;
    const response = await server.inject({
      method: 'POST',
      url: '/v1/webhooks/profile',
      payload: body,
      headers: { 'content-type': 'application/json', 'x-signature': signature },
    });
    if (response.statusCode !== 202 || response.json().status !== expect)
      throw new Error(`delivery ${id} answered ${response.statusCode} ${response.body}`);
  };

  log('warming up…');
  for (let i = 0; i < 30; i++) {
    await post(`warm-${i}`, 'accepted');
    await post(`warm-${i}`, 'duplicate');
    await deliver(`warm-${i}`, 'accepted');
  }

  const out: string[] = [
    `# ingest profile — ${new Date().toISOString()}, node ${process.version}, ${events} requests per kind`,
  ];
  const phases = async () => {
    log(`new events ×${events}…`);
    out.push(
      ...report('POST /v1/events, new event → run started', await measure(events, (i) => post(`new-${i}`, 'accepted'))),
    );
    log(`duplicates ×${events}…`);
    out.push(...report('POST /v1/events, duplicate', await measure(events, (i) => post(`new-${i}`, 'duplicate'))));
    log(`webhook deliveries ×${events}…`);
    out.push(
      ...report(
        'POST /v1/webhooks/{source}, new delivery → run started',
        await measure(events, (i) => deliver(`d-${i}`, 'accepted')),
      ),
    );
    log(`webhook redeliveries ×${events}…`);
    out.push(
      ...report('POST /v1/webhooks/{source}, redelivery', await measure(events, (i) => deliver(`d-${i}`, 'duplicate'))),
    );
  };
  if (cpuProfile) {
    const session = new Session();
    session.connect();
    const cpu = await hottest(session, phases);
    out.push(...cpu);
    session.disconnect();
  } else {
    await phases();
  }
  console.log(out.join('\n'));
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await app?.close().catch(() => undefined);
  await temporal?.stop().catch(() => undefined);
  await postgres?.stop().catch(() => undefined);
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
}
