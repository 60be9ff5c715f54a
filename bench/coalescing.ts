/**
 * Debounce under load (docs/coalescing.md): `--rate` events/s for `--seconds`
 * over `--keys` keys of a debounced activity (trailing, `--period`), then the
 * same number of events of an activity without debounce. Checks that the
 * debounced phase started exactly one run per key, that every event was
 * merged or started (nothing lost), and prints the process CPU per event of
 * each phase and their ratio.
 *
 *   npm run bench:coalescing -- [--rate 1000] [--seconds 10] [--keys 100] [--period 2]
 *
 * Starts its own Temporal dev server and embedded Postgres, the API and one
 * worker in this process (bench/in-process-stack.ts): the CPU figures include
 * the worker's share (the undebounced phase runs one workflow per event, the
 * debounced phase one per key), so they are an upper bound for the API's
 * per-event cost of debounce, not the API alone.
 */
import { startInProcessStack } from './in-process-stack';
import pg from 'pg';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive whole number`);
  return value;
}
const rate = flag('rate', 1000);
const seconds = flag('seconds', 10);
const keys = flag('keys', 100);
const period = flag('period', 2);
const total = rate * seconds;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const stack = await startInProcessStack();
try {
  const { address, databaseUrl } = stack;
  const sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const register = async (name: string, trigger: object): Promise<string> => {
    const response = await fetch(`${address}/v1/activities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, triggers: [trigger], tasks: [{ type: 'noop' }] }),
    });
    if (response.status !== 201) throw new Error(`registering ${name}: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { id: string }).id;
  };
  const debounced = await register('bench-debounced', {
    type: 'event',
    event_type: 'bench.debounced',
    debounce: { key: 'data.key', period: `${period}s`, max_wait: `${seconds * 2 + period}s` },
  });
  await register('bench-plain', { type: 'event', event_type: 'bench.plain' });

  /** Sends `total` events at `rate`/s (in 10 ms ticks); returns the CPU µs the process spent meanwhile and how many failed. */
  const phase = async (
    eventType: string,
    prefix: string,
  ): Promise<{ cpuUs: number; failed: number; wallMs: number }> => {
    const cpu = process.cpuUsage();
    const begun = performance.now();
    let failed = 0;
    const inFlight: Promise<void>[] = [];
    for (let sent = 0; sent < total;) {
      const due = Math.min(total, Math.floor(((performance.now() - begun) / 1000) * rate) + 1);
      for (; sent < due; sent++) {
        const n = sent;
        inFlight.push(
          fetch(`${address}/v1/events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              event_id: `${prefix}-${n}`,
              event_type: eventType,
              source: 'bench',
              occurred_at: new Date().toISOString(),
              data: { key: `k${n % keys}`, n },
            }),
          }).then(
            async (response) => {
              await response.arrayBuffer();
              if (response.status !== 202) failed++;
            },
            () => void failed++,
          ),
        );
      }
      await sleep(10);
    }
    await Promise.all(inFlight);
    const used = process.cpuUsage(cpu);
    return { cpuUs: used.user + used.system, failed, wallMs: performance.now() - begun };
  };

  const d = await phase('bench.debounced', 'deb');
  // Every event merged or started, one run per key.
  const settleBy = Date.now() + 120_000;
  let counted: Record<string, number> = {};
  for (;;) {
    const rows = await sql.query(
      'SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome',
      [debounced],
    );
    counted = Object.fromEntries(rows.rows.map((row) => [row.outcome, row.n]));
    if ((counted.merged ?? 0) + (counted.started ?? 0) >= total - d.failed || Date.now() > settleBy) break;
    await sleep(500);
  }
  // Every window closed and its run recorded.
  const windowsOf = async () =>
    (
      await sql.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE state = 'open')::int AS open FROM coalesce_windows WHERE activity_id = $1`,
        [debounced],
      )
    ).rows[0] as { n: number; open: number };
  const runsOf = async () =>
    (await sql.query('SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1', [debounced])).rows[0] as {
      n: number;
    };
  let windows = await windowsOf();
  let runs = await runsOf();
  while ((windows.open > 0 || runs.n < windows.n) && Date.now() < settleBy) {
    await sleep(500);
    [windows, runs] = [await windowsOf(), await runsOf()];
  }
  const p = await phase('bench.plain', 'plain');

  const perEvent = (cpuUs: number) => cpuUs / total;
  console.log(`events per phase: ${total} (${rate}/s for ${seconds} s over ${keys} keys, period ${period} s)`);
  console.log(
    `debounced: sent in ${(d.wallMs / 1000).toFixed(1)} s, ${d.failed} failed, routes ${JSON.stringify(counted)}, windows ${windows.n}, runs ${runs.n} (want ${keys}; more windows than keys means some key went quiet for longer than the period while sending)`,
  );
  console.log(
    `debounced CPU per event: ${perEvent(d.cpuUs).toFixed(0)} µs; undebounced: ${perEvent(p.cpuUs).toFixed(0)} µs (${p.failed} failed); ratio ${(d.cpuUs / p.cpuUs).toFixed(2)} (target ≤ 1.5)`,
  );
  const lost = total - d.failed - (counted.merged ?? 0) - (counted.started ?? 0);
  console.log(
    d.failed === 0 && lost === 0 && runs.n === windows.n && runs.n === keys
      ? 'OK: nothing lost, one run per key'
      : `NOT OK: ${d.failed} refused, ${lost} accepted events unaccounted, ${runs.n} runs for ${windows.n} windows of ${keys} keys`,
  );
  await sql.end();
} finally {
  await stack.stop();
}
