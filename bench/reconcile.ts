/**
 * The on-demand schedule reconcile at scale: `POST /v1/schedules/reconcile`
 * with many cron activities (ADR 0072).
 *
 *   npm run bench:reconcile -- [count=10000] [senders=16] [--describe]
 *
 * Starts the whole stack in this process (bench/in-process-stack.ts: its own
 * Temporal dev server and embedded Postgres), registers `count` cron
 * activities over `POST /v1/activities` with `senders` requests in flight
 * (each fires once a year, so nothing fires meanwhile), waits until
 * Temporal's schedule listing shows every schedule (steady state), then
 * times the reconcile three times: the default (`compare=listing`), and with
 * `--describe` once more describing every schedule (`compare=describe`,
 * which answers 503 past the API's 10 s deadline with more than a few
 * hundred). Prints each answer's status, counts and time.
 */
import { Client, Connection } from '@temporalio/client';
import { listSchedules } from '@activity-core/schedule-manager';
import { startInProcessStack } from './in-process-stack';

const args = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const count = Number(args[0] ?? 10_000);
const senders = Number(args[1] ?? 16);
const describeToo = process.argv.includes('--describe');
if (!Number.isInteger(count) || count < 1 || !Number.isInteger(senders) || senders < 1)
  throw new Error('usage: npm run bench:reconcile -- [count=10000] [senders=16] [--describe]');

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

const stack = await startInProcessStack();
try {
  const started = Date.now();
  let next = 0;
  const register = async (): Promise<void> => {
    for (let n = next++; n < count; n = next++) {
      const response = await fetch(`${stack.address}/v1/activities`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `bench-reconcile-${n}`,
          triggers: [{ type: 'cron', cron: `${n % 60} ${Math.floor(n / 60) % 24} 1 1 *`, timezone: 'UTC' }],
          tasks: [{ type: 'noop' }],
        }),
      });
      if (response.status !== 201) throw new Error(`registering ${n}: ${response.status} ${await response.text()}`);
      if ((n + 1) % 1000 === 0) console.log(`  ${n + 1} registered`);
    }
  };
  await Promise.all(Array.from({ length: senders }, register));
  console.log(`registered ${count} cron activities in ${seconds(Date.now() - started)}`);

  // Steady state: every schedule in Temporal's listing (visibility trails the creates by a moment).
  const connection = await Connection.connect({ address: stack.temporalAddress });
  try {
    const client = new Client({ connection });
    for (;;) {
      let listed = 0;
      for await (const _ of listSchedules(client, 1000)) listed++;
      if (listed >= count) break;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  } finally {
    await connection.close();
  }

  const reconcile = async (compare: 'listing' | 'describe'): Promise<void> => {
    const at = Date.now();
    const response = await fetch(`${stack.address}/v1/schedules/reconcile?compare=${compare}`, { method: 'POST' });
    const took = Date.now() - at;
    const body = (await response.json()) as {
      created?: string[];
      updated?: string[];
      deleted?: string[];
      unchanged?: number;
      detail?: string;
    };
    const counts =
      response.status === 200
        ? `created ${body.created?.length} updated ${body.updated?.length} deleted ${body.deleted?.length} unchanged ${body.unchanged}`
        : (body.detail ?? '');
    console.log(`reconcile compare=${compare.padEnd(8)} ${response.status}  ${seconds(took).padStart(9)}  ${counts}`);
  };
  console.log(`\nPOST /v1/schedules/reconcile with ${count} cron activities (the API's deadline: 10 s)`);
  for (let round = 0; round < 3; round++) await reconcile('listing');
  if (describeToo) await reconcile('describe');
} finally {
  await stack.stop();
}
