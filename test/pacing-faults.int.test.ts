import { freePort } from '@activity-core/dev-services';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, testConfig, testPool } from './harness';
import { createRestartableTemporal } from './restartable-temporal';
import { until } from './restartable-stack';
import { killHard, spawnApiProcess, spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';

/**
 * Throttled runs across faults (docs/pacing.md, ADR 0067). A run over the
 * throttle's rate is started at once with Temporal's start delay, so while it
 * waits it lives in Temporal, not in any process of ours: a worker SIGKILLed
 * and Temporal restarted while runs are delayed lose none and run none twice,
 * and no run begins before the time its event's route promised. Events that
 * arrive while Temporal is away are acknowledged (stored), paced once, and
 * started when it is back.
 */
const EVENT_TYPE = 'partner.sync';
const BEFORE_OUTAGE = 10;
const DURING_OUTAGE = 3;
/** The throttle: one run every 2 s, no burst; ten events span 18 s of start times. */
const THROTTLE = { limit: 1, period: '2s', burst: 1, key: 'data.account' };
const OUTAGE_MS = 6_000;

let temporal: Awaited<ReturnType<typeof createRestartableTemporal>>;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let config: ReturnType<typeof testConfig>;
let api: SpawnedProcess;
const workers: SpawnedProcess[] = [];
let base: string;
let sql: pg.Pool;

beforeAll(async () => {
  temporal = await createRestartableTemporal();
  await temporal.start();
  database = await createTestDatabase();
  config = testConfig(database.url, { TEMPORAL_ADDRESS: temporal.address });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  api = spawnApiProcess(config, port);
  workers.push(spawnWorkerProcess(config));
  await Promise.all([api.ready, workers[0]!.ready]);
  sql = testPool(database.url, 2);
}, 180_000);

afterAll(async () => {
  for (const proc of [api, ...workers])
    if (proc !== undefined && proc.exited() === null) await stopGracefully(proc.child);
  await sql?.end();
  await database?.drop();
  await temporal?.dispose();
}, 120_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Posts until acknowledged (202), as a client honouring 503 does. */
async function post(eventId: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; ;) {
    const response = await fetch(`${base}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event_id: eventId,
        event_type: EVENT_TYPE,
        source: 'pacing-faults',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { account: 'acme' },
      }),
    }).catch(() => undefined);
    const status = response?.status;
    await response?.arrayBuffer();
    if (status === 202) return;
    if (status !== undefined && status !== 503) throw new Error(`${eventId} answered ${status}`);
    if (Date.now() > deadline) throw new Error(`${eventId} was not acknowledged within 60 s`);
    await sleep(250);
  }
}

describe('throttled runs across faults', () => {
  test('runs delayed by a throttle survive a worker SIGKILL and a Temporal restart: every one runs once, none before its promised time', async () => {
    const registered = await fetch(`${base}/v1/activities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'throttle-faults',
        triggers: [{ type: 'event', event_type: EVENT_TYPE }],
        tasks: [{ type: 'noop' }],
        throttle: THROTTLE,
      }),
    });
    expect(registered.status, await registered.clone().text()).toBe(201);
    const activityId = ((await registered.json()) as { id: string }).id;

    for (let i = 0; i < BEFORE_OUTAGE; i++) await post(`before-${i}`);
    // Every route is decided and its run handed to Temporal (most of them delayed) before anything fails.
    await until(
      'every route to be started with its pacing decision',
      async () => {
        const { rows } = await sql.query(
          `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND outcome = 'started' AND paced_at IS NOT NULL`,
          [activityId],
        );
        return rows[0].n === BEFORE_OUTAGE;
      },
      60_000,
    );
    const delayed = await sql.query(
      `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND not_before > now() + interval '4 seconds'`,
      [activityId],
    );
    // Most runs are still waiting when the faults come.
    expect(delayed.rows[0].n).toBeGreaterThanOrEqual(BEFORE_OUTAGE - 4);

    await killHard(workers[0]!.child);
    expect(workers[0]!.exited()).toBe('SIGKILL');
    await temporal.stop();
    // Events keep arriving while Temporal is away: stored and acknowledged, started once it is back.
    for (let i = 0; i < DURING_OUTAGE; i++) await post(`during-${i}`);
    await sleep(OUTAGE_MS);
    await temporal.start();
    const replacement = spawnWorkerProcess(config);
    workers.push(replacement);
    await replacement.ready;

    const total = BEFORE_OUTAGE + DURING_OUTAGE;
    await until(
      'every run to succeed',
      async () => {
        const { rows } = await sql.query(
          `SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
          [activityId],
        );
        return rows[0].n >= total;
      },
      240_000,
    );
    expect(api.exited()).toBeNull();

    const routes = (
      await sql.query(
        `SELECT event_id, outcome, workflow_id, not_before, paced_at FROM event_routes WHERE activity_id = $1`,
        [activityId],
      )
    ).rows as Array<{
      event_id: string;
      outcome: string;
      workflow_id: string;
      not_before: Date | null;
      paced_at: Date;
    }>;
    const runs = (
      await sql.query(`SELECT workflow_id, status, started_at FROM activity_runs WHERE activity_id = $1`, [activityId])
    ).rows as Array<{ workflow_id: string; status: string; started_at: Date }>;

    // One route per event, every one started; one run per route, none twice, all succeeded.
    expect(routes).toHaveLength(total);
    expect(routes.every((route) => route.outcome === 'started')).toBe(true);
    expect(runs).toHaveLength(total);
    expect(new Set(runs.map((run) => run.workflow_id))).toEqual(new Set(routes.map((route) => route.workflow_id)));
    expect(runs.every((run) => run.status === 'succeeded')).toBe(true);
    // No run began before the time its route promised (the throttle held through the faults).
    for (const route of routes) {
      const run = runs.find((candidate) => candidate.workflow_id === route.workflow_id)!;
      if (route.not_before !== null)
        expect(run.started_at.getTime(), route.event_id).toBeGreaterThanOrEqual(route.not_before.getTime());
    }
    // The throttle's schedule continued across the outage: the events that arrived during it were given
    // start times after every one given before it, one period apart.
    const notBefore = (prefix: string) =>
      routes
        .filter((route) => route.event_id.startsWith(prefix))
        // No not_before: the bucket let it through at once, when it was paced.
        .map((route) => (route.not_before ?? route.paced_at).getTime())
        .sort((a, b) => a - b);
    const [before, during] = [notBefore('before-'), notBefore('during-')];
    expect(during[0]!).toBeGreaterThanOrEqual(before.at(-1)! + 2_000 - 5);
    for (const times of [before, during])
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(2_000 - 5);
  });
});
