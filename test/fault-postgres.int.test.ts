import { runMigrations } from '@activity-core/db';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testConfig } from './harness';
import { startFaultStack, type ApiCall, type FaultStack } from './fault-stack';
import { createDatabaseOn, createRestartablePostgres, type RestartablePostgres } from './restartable-postgres';
import { checkInvariants, describeState, drained, sleep, startLoad, until } from './restartable-stack';
import type { SpawnedProcess } from './worker-process';

/**
 * Postgres goes away under load — a clean restart, and a crash mid-transaction
 * like a failover — while the API and a worker run as separate processes,
 * events arrive, runs with delay and http tasks execute and a cron fires.
 * Afterwards: no process exited, and the promise holds.
 */
const EVENT_TYPE = 'fault.pg';
const TASKS = [{ type: 'delay', config: { duration: '1s' } }, { type: 'http', config: { url: '' } }, { type: 'noop' }];
/**
 * How long the clean restart keeps Postgres away. Longer than the pools' 5 s
 * connect timeout (packages/db createDatabase), so requests that wait for a
 * connection time out while it is down and the pools must recover on their own.
 */
const RESTART_OUTAGE_MS = 8_000;
/** How long the crashed Postgres stays down: long enough for open transactions to fail, short like a failover. */
const CRASH_OUTAGE_MS = 1_500;

let postgres: RestartablePostgres;
let stack: FaultStack;
let api: SpawnedProcess;
let worker: SpawnedProcess;
let apiUrl: string;
let sql: pg.Pool;
let eventActivityId: string;
let cronActivityId: string;
let call: ApiCall;
let httpKeys: FaultStack['httpKeys'];
let alive: FaultStack['alive'];
const acked = new Set<string>();

beforeAll(async () => {
  postgres = await createRestartablePostgres();
  await postgres.start();
  const url = await createDatabaseOn(postgres, 'faults');
  await runMigrations(url);
  stack = await startFaultStack({
    name: 'pg-fault',
    config: testConfig(url),
    databaseUrl: url,
    eventType: EVENT_TYPE,
    tasks: TASKS,
  });
  ({ api, worker, apiUrl, sql, eventActivityId, cronActivityId, call, httpKeys, alive } = stack);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await postgres?.dispose();
}, 60_000);

async function readiness(): Promise<{ status: number; json: any }> {
  return await call('GET', '/readyz');
}

async function settleAndCheck(): Promise<void> {
  await until(
    'every acknowledged event to run and every run to end',
    () => drained({ sql, acked, eventActivityId }),
    360_000,
    () => describeState(sql),
  );
  alive();
  expect(
    await checkInvariants({
      sql,
      acked,
      eventActivityId,
      tasksPerRun: TASKS.length,
      httpKeys: httpKeys(),
      cronActivityId,
    }),
  ).toEqual([]);
}

describe('Postgres goes away under load', () => {
  test('a restart longer than the pool connect timeout: no process exits, readiness follows Postgres, every acknowledged event runs exactly once', async () => {
    const load = startLoad({
      apiUrl,
      eventType: EVENT_TYPE,
      prefix: 'restart',
      count: 60,
      senders: 3,
      gapMs: 50,
      batchAt: 30,
      batchSize: 10,
      apiExited: api.exited,
    });
    await until('the first events to be acknowledged', async () => load.acked.size >= 15, 60_000);

    const downAt = Date.now();
    await postgres.stop();
    const notReady = await (async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const ready = await readiness().catch(() => undefined);
        if (ready?.status === 503 || Date.now() > deadline) return ready;
        await sleep(200);
      }
    })();
    // Down for RESTART_OUTAGE_MS in all, with requests arriving all along.
    await sleep(Math.max(0, RESTART_OUTAGE_MS - (Date.now() - downAt)));
    alive();
    await postgres.start();
    await until('the API to be ready again without a restart', async () => (await readiness()).status === 200, 60_000);

    await load.done;
    for (const id of load.acked) acked.add(id);
    expect(load.refused.get(503) ?? 0).toBeGreaterThan(0);
    await settleAndCheck();

    // Readiness said "not ready" while Postgres was away, naming only a coarse reason.
    expect(notReady?.status).toBe(503);
    expect(notReady?.json.checks.postgres).toEqual({ status: 'failing', reason: 'unreachable' });
    expect(JSON.stringify(notReady?.json)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|terminat/i);
    // Operators can see it: one "lost" and one "regained" per process, in the logs and the API's metrics.
    for (const output of [api.output(), worker.output()]) {
      expect(output).toContain('postgres lost');
      expect(output).toContain('postgres regained');
    }
    const metrics = await (await fetch(`${apiUrl}/metrics`)).text();
    expect(metrics).toMatch(/activity_core_dependency_transitions_total\{dependency="postgres",to="lost"\} [1-9]/);
    expect(metrics).toMatch(/activity_core_dependency_transitions_total\{dependency="postgres",to="regained"\} [1-9]/);
    expect(metrics).toMatch(/activity_core_dependency_up\{dependency="postgres"\} 1/);
    // The cron kept firing across the outage.
    const cronRuns = await sql.query('SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1', [
      cronActivityId,
    ]);
    expect(cronRuns.rows[0].n).toBeGreaterThan(0);
  }, 480_000);

  test('a crash with transactions open (a failover): no process exits and every acknowledged event still runs exactly once', async () => {
    const load = startLoad({
      apiUrl,
      eventType: EVENT_TYPE,
      prefix: 'crash',
      count: 40,
      senders: 4,
      gapMs: 0,
      batchAt: 20,
      batchSize: 10,
      apiExited: api.exited,
    });
    await until('the first events to be acknowledged', async () => load.acked.size >= 10, 60_000);
    await postgres.crash();
    await sleep(CRASH_OUTAGE_MS);
    alive();
    await postgres.start();

    await load.done;
    for (const id of load.acked) acked.add(id);
    // The cron stops, so "every run ended" has an end.
    expect((await call('DELETE', `/v1/activities/${cronActivityId}`)).status).toBe(204);
    await settleAndCheck();
    expect((await readiness()).status).toBe(200);
  }, 480_000);
});
