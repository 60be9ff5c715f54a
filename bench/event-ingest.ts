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
import { startInProcessStack } from './in-process-stack';
import pg from 'pg';

const total = Number(process.argv[2] ?? 500);
const concurrency = Number(process.argv[3] ?? 20);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

// DATABASE_POOL_SIZE=20: the accept path's parallelism is what this benchmark loads.
const stack = await startInProcessStack({ DATABASE_POOL_SIZE: '20' });
try {
  const { address, databaseUrl } = stack;

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
} finally {
  await stack.stop();
}
