/**
 * Task graphs on the real stack: do branches really run at once, and does a
 * fan-out finish with one task row per item?
 *
 *   npm run bench:task-graph -- [--rounds 9]
 *
 * Starts its own Temporal dev server and embedded Postgres, the API and one
 * in-process worker (as bench/event-ingest.ts does), registers three
 * activities and, alternating them round by round on an idle stack, measures
 * accepted → succeeded for one event each:
 *   - one `noop` task (the baseline: a straight-line run);
 *   - ten `noop` tasks that need nothing (`depends_on: []`), run at once;
 *   - ten `noop` tasks in a straight line (what the ten cost without parallelism);
 *   - one `delay` of 300 ms, and ten of them that need nothing (tasks that wait,
 *     where running at once shows as time not spent).
 * Prints the medians and the ratios of the ten parallel and the ten in line to
 * the one-task run. Then runs one `for_each` of 200 items with `max_parallel`
 * 20 and prints its time and the number of task rows it left.
 */
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { startInProcessStack } from './in-process-stack';
import pg from 'pg';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive whole number`);
  return value;
}
const rounds = flag('rounds', 9);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

const stack = await startInProcessStack();
try {
  const { address, databaseUrl } = stack;
  const sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });

  const register = async (name: string, eventType: string, tasks: object[]): Promise<string> => {
    const response = await fetch(`${address}/v1/activities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, triggers: [{ type: 'event', event_type: eventType }], tasks, max_parallel: 20 }),
    });
    if (response.status !== 201) throw new Error(`registering ${name}: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { id: string }).id;
  };
  /** accepted → succeeded, in ms, for one event. */
  const runOnce = async (
    activityId: string,
    eventType: string,
    eventId: string,
    data: object = {},
  ): Promise<number> => {
    const started = performance.now();
    const response = await fetch(`${address}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event_id: eventId,
        event_type: eventType,
        source: 'bench',
        occurred_at: new Date().toISOString(),
        data,
      }),
    });
    if (response.status !== 202) throw new Error(`event ${eventId}: ${response.status}`);
    const runId = runIdFor(eventRunWorkflowId(activityId, eventId));
    for (;;) {
      const { rows } = await sql.query<{ status: string }>('SELECT status FROM activity_runs WHERE run_id = $1', [
        runId,
      ]);
      const status = rows[0]?.status;
      if (status === 'succeeded') return performance.now() - started;
      if (status === 'failed' || status === 'cancelled') throw new Error(`run ${runId} ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };

  const one = await register('bench-one', 'bench.one', [{ type: 'noop' }]);
  const parallel = await register(
    'bench-parallel',
    'bench.parallel',
    Array.from({ length: 10 }, (_, i) => ({ type: 'noop', key: `t${i}`, depends_on: [] })),
  );
  const line = await register(
    'bench-line',
    'bench.line',
    Array.from({ length: 10 }, () => ({ type: 'noop' })),
  );
  const oneWait = await register('bench-one-wait', 'bench.one-wait', [
    { type: 'delay', config: { duration: '300ms' } },
  ]);
  const parallelWait = await register(
    'bench-parallel-wait',
    'bench.parallel-wait',
    Array.from({ length: 10 }, (_, i) => ({
      type: 'delay',
      key: `t${i}`,
      depends_on: [],
      config: { duration: '300ms' },
    })),
  );
  const fanOut = await register('bench-fan-out', 'bench.fan', [
    { type: 'noop', key: 'each', for_each: 'event.data.items', max_parallel: 20 },
  ]);

  // Warm-up: the first run of each pays for worker caches and connections.
  await runOnce(one, 'bench.one', 'warm-one');
  await runOnce(parallel, 'bench.parallel', 'warm-parallel');
  await runOnce(line, 'bench.line', 'warm-line');
  const times = {
    one: [] as number[],
    parallel: [] as number[],
    line: [] as number[],
    oneWait: [] as number[],
    parallelWait: [] as number[],
  };
  for (let round = 0; round < rounds; round++) {
    times.one.push(await runOnce(one, 'bench.one', `one-${round}`));
    times.parallel.push(await runOnce(parallel, 'bench.parallel', `parallel-${round}`));
    times.line.push(await runOnce(line, 'bench.line', `line-${round}`));
    times.oneWait.push(await runOnce(oneWait, 'bench.one-wait', `one-wait-${round}`));
    times.parallelWait.push(await runOnce(parallelWait, 'bench.parallel-wait', `parallel-wait-${round}`));
  }
  const base = median(times.one);
  console.log(`accepted → succeeded, idle stack, median of ${rounds} rounds (alternating):`);
  console.log(`  1 noop task                 ${base.toFixed(0)} ms  (baseline)`);
  console.log(
    `  10 noop tasks in parallel   ${median(times.parallel).toFixed(0)} ms  ${(median(times.parallel) / base).toFixed(2)}× the baseline`,
  );
  console.log(
    `  10 noop tasks in a line     ${median(times.line).toFixed(0)} ms  ${(median(times.line) / base).toFixed(2)}× the baseline`,
  );

  const waitBase = median(times.oneWait);
  console.log(`  1 delay task of 300 ms      ${waitBase.toFixed(0)} ms  (baseline for tasks that wait)`);
  console.log(
    `  10 delay tasks in parallel  ${median(times.parallelWait).toFixed(0)} ms  ${(median(times.parallelWait) / waitBase).toFixed(2)}× that baseline (in a line they would take 10 × 300 ms of waiting alone)`,
  );

  const items = Array.from({ length: 200 }, (_, i) => i);
  const fanMs = await runOnce(fanOut, 'bench.fan', 'fan-1', { items });
  const runId = runIdFor(eventRunWorkflowId(fanOut, 'fan-1'));
  const { rows } = await sql.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM task_instances WHERE run_id = $1 AND item_index IS NOT NULL AND status = 'succeeded'",
    [runId],
  );
  console.log(`for_each of 200 items, max_parallel 20: ${fanMs.toFixed(0)} ms, ${rows[0]?.n} succeeded item rows`);
  await sql.end();
} finally {
  await stack.stop();
}
