/**
 * Event ingest and end-to-end run throughput on the real stack.
 *
 *   npm run bench:events -- [events=500] [concurrency=20]
 *
 * Starts its own Temporal dev server and embedded Postgres (nothing else
 * needs to run), the API on a loopback port and one in-process worker, then
 * POSTs distinct events over HTTP and waits until every run has finished.
 * Prints accept latency percentiles, accept throughput and run throughput.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@activity-core/config';
import { runMigrations } from '@activity-core/db';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  findTemporalCli,
  startEmbeddedPostgres,
  startTemporalDevServer,
} from '@activity-core/dev-services';
import { bundleWorkflows } from '@activity-core/temporal/worker';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pg from 'pg';
import { createApiApp } from '../apps/api/src/app';
import { createWorkerApp } from '../apps/worker/src/worker-app';

const total = Number(process.argv[2] ?? 500);
const concurrency = Number(process.argv[3] ?? 20);
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

Runtime.install({ logger: new DefaultLogger('WARN') });

const scratch = await mkdtemp(join(tmpdir(), 'activity-core-bench-'));
const { chmod } = await import('node:fs/promises');
await chmod(scratch, 0o755);
const cli = findTemporalCli(process.cwd(), process.env.TEMPORAL_CLI_PATH, process.env.PATH);
if (cli === undefined) throw new Error('Temporal CLI not found; run npm test or npm start once to install it');
const [postgres, temporal, bundle] = await Promise.all([
  startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }),
  startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }),
  bundleWorkflows(),
]);
try {
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE bench');
  await admin.end();
  const databaseUrl = postgres.urlFor('bench');
  await runMigrations(databaseUrl);
  // RATE_LIMIT_MAX=0: the benchmark sends from one address and measures ingest, not the limiter.
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    LOG_LEVEL: 'silent',
    MIGRATE_ON_START: 'false',
    PORT: '0',
    DATABASE_POOL_SIZE: '20',
    RATE_LIMIT_MAX: '0',
  });
  const api = await createApiApp(config, { logger: false });
  const worker = await createWorkerApp(config, { logger: quiet, workflowBundle: bundle });
  void worker.run();
  const address = await api.server.listen({ host: '127.0.0.1', port: 0 });

  await fetch(`${address}/v1/activities`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'bench',
      triggers: [{ type: 'event', event_type: 'bench.tick' }],
      tasks: [{ type: 'noop' }, { type: 'noop' }],
    }),
  });

  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const t0 = performance.now();
        const response = await fetch(`${address}/v1/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            event_id: `bench-${i}`,
            event_type: 'bench.tick',
            source: 'bench',
            occurred_at: new Date().toISOString(),
            data: { i },
          }),
        });
        await response.arrayBuffer();
        if (response.status !== 202) throw new Error(`event ${i} answered ${response.status}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const acceptedMs = performance.now() - started;

  const probe = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  for (;;) {
    const { rows } = await probe.query("SELECT count(*)::int AS n FROM activity_runs WHERE status = 'succeeded'");
    if (rows[0].n >= total) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const doneMs = performance.now() - started;
  await probe.end();

  latencies.sort((a, b) => a - b);
  console.log(`events: ${total}, concurrency: ${concurrency}, 1 API process, 1 worker, tasks per run: 2 (noop)`);
  console.log(`accept (POST /v1/events → 202, stored + run started):`);
  console.log(`  throughput ${(total / (acceptedMs / 1000)).toFixed(1)} events/s`);
  console.log(
    `  latency p50 ${percentile(latencies, 50).toFixed(1)} ms, p95 ${percentile(latencies, 95).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1)?.toFixed(1)} ms`,
  );
  console.log(
    `end to end: all ${total} runs succeeded after ${(doneMs / 1000).toFixed(1)} s (${(total / (doneMs / 1000)).toFixed(1)} runs/s)`,
  );

  // Redeliver every event: the duplicate path (one read of the stored decision, no Temporal call).
  const dupLatencies: number[] = [];
  let nextDup = 0;
  const dupStarted = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (nextDup < total) {
        const i = nextDup++;
        const t0 = performance.now();
        const response = await fetch(`${address}/v1/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            event_id: `bench-${i}`,
            event_type: 'bench.tick',
            source: 'bench',
            occurred_at: new Date().toISOString(),
            data: { i },
          }),
        });
        const body = (await response.json()) as { status?: string };
        if (response.status !== 202 || body.status !== 'duplicate')
          throw new Error(`redelivery ${i} answered ${response.status} ${body.status}`);
        dupLatencies.push(performance.now() - t0);
      }
    }),
  );
  const dupMs = performance.now() - dupStarted;
  dupLatencies.sort((a, b) => a - b);
  console.log(`redelivery (every event again → 202 duplicate):`);
  console.log(
    `  throughput ${(total / (dupMs / 1000)).toFixed(1)} events/s, latency p50 ${percentile(dupLatencies, 50).toFixed(1)} ms, p95 ${percentile(dupLatencies, 95).toFixed(1)} ms`,
  );
  const counter = new pg.Client({ connectionString: databaseUrl });
  await counter.connect();
  const { rows: runCount } = await counter.query('SELECT count(*)::int AS n FROM activity_runs');
  await counter.end();
  console.log(`runs in Postgres after ${total * 2} deliveries: ${runCount[0].n}`);

  await worker.close();
  await api.close();
} finally {
  await temporal.stop();
  await postgres.stop();
  await rm(scratch, { recursive: true, force: true });
}
