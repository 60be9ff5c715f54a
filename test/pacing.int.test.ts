import { freePort } from '@activity-core/dev-services';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, testConfig, testPool } from './harness';
import { until } from './restartable-stack';
import { killHard, spawnApiProcess, spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';

/**
 * Pacing (docs/pacing.md) on the production shape: two API processes and two
 * worker processes (the real entry points) on one Temporal and one Postgres.
 * Events for one key arrive over both APIs at once; the throttle's bucket is
 * one row in Postgres that both share, so the runs start at the rate whichever
 * API took each event, and the rate limit drops exactly what is over it.
 */
const EVENTS = 100;
const SENDERS = 10;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let config: ReturnType<typeof testConfig>;
let apis: Array<{ process: SpawnedProcess; url: string; port: number }> = [];
let workers: SpawnedProcess[] = [];
let sql: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase();
  config = testConfig(database.url);
  const ports = [await freePort(), await freePort()];
  apis = ports.map((port) => ({
    process: spawnApiProcess(config, port),
    url: `http://127.0.0.1:${port}`,
    port,
  }));
  workers = [spawnWorkerProcess(config), spawnWorkerProcess(config)];
  await Promise.all([...apis.map((api) => api.process.ready), ...workers.map((worker) => worker.ready)]);
  sql = testPool(database.url, 2);
  // Four processes compiling their sources at once on a shared two-core machine can take minutes.
}, 300_000);

afterAll(async () => {
  await Promise.all([
    ...apis.map((api) => stopGracefully(api.process.child)),
    ...workers.map((worker) => stopGracefully(worker.child)),
  ]);
  await sql?.end();
  await database?.drop();
}, 120_000);

async function register(definition: Record<string, unknown>): Promise<string> {
  const response = await fetch(`${apis[0]!.url}/v1/activities`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(definition),
  });
  const body = (await response.json()) as { id: string };
  if (response.status !== 201) throw new Error(`registering: ${response.status} ${JSON.stringify(body)}`);
  return body.id;
}

interface Answer {
  status: 'accepted' | 'duplicate';
  runs: Array<{ run_id: string; workflow_id: string; status: string }>;
}

/** Posts until acknowledged, as a client honouring 503 does. */
async function post(api: number, eventType: string, eventId: string, account: string): Promise<Answer> {
  const body = JSON.stringify({
    event_id: eventId,
    event_type: eventType,
    source: 'pacing-tests',
    occurred_at: '2026-03-01T09:00:00Z',
    data: { account },
  });
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`${apis[api]!.url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    }).catch((error: unknown) => ({ status: 0, json: () => Promise.resolve(String(error)) }));
    const json = (await response.json()) as Answer;
    if (response.status === 202) return json;
    if ((response.status !== 503 && response.status !== 0) || attempt >= 40)
      throw new Error(`${eventId} via API ${api}: ${response.status} ${JSON.stringify(json)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** `EVENTS` events over both APIs from `SENDERS` senders at once; returns every answer. */
async function burst(eventType: string, prefix: string, account: string, apiOf = (i: number) => i % 2) {
  const jobs = Array.from({ length: EVENTS }, (_, i) => i);
  const answers: Answer[] = [];
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      for (let i = jobs.shift(); i !== undefined; i = jobs.shift())
        answers.push(await post(apiOf(i), eventType, `${prefix}-${i}`, account));
    }),
  );
  return answers;
}

async function routesOf(activityId: string) {
  return (
    await sql.query<{
      event_id: string;
      outcome: string;
      detail: string | null;
      not_before: Date | null;
      paced_at: Date | null;
      workflow_id: string;
    }>(
      `SELECT event_id, outcome, detail, not_before, paced_at, workflow_id FROM event_routes WHERE activity_id = $1 ORDER BY not_before NULLS FIRST`,
      [activityId],
    )
  ).rows;
}

async function runsOf(activityId: string) {
  return (
    await sql.query<{ workflow_id: string; status: string; started_at: Date }>(
      `SELECT workflow_id, status, started_at FROM activity_runs WHERE activity_id = $1 ORDER BY started_at`,
      [activityId],
    )
  ).rows;
}

describe('pacing on two API processes and two workers', () => {
  test('a throttle of 10 per second starts 100 runs of one key one interval apart, over at least 9 s, none lost and none twice, while an API process and a worker process are killed and restarted', async () => {
    const activityId = await register({
      name: 'partner-sync',
      triggers: [{ type: 'event', event_type: 'partner.sync' }],
      tasks: [{ type: 'noop' }],
      throttle: { limit: 10, period: '1s', key: 'data.account' },
    });
    const answers = await burst('partner.sync', 'sync', 'acme');
    // Every event acknowledged with its one run, started in Temporal at once (its id is taken) and delayed there.
    expect(answers.every((answer) => answer.status === 'accepted' && answer.runs.length === 1)).toBe(true);
    expect(answers.filter((answer) => answer.runs[0]!.status === 'started').length).toBe(EVENTS);
    // Every event delivered again, over the other API: a duplicate, and no second slot taken from the bucket.
    const again = await burst('partner.sync', 'sync', 'acme', (i) => (i + 1) % 2);
    expect(again.every((answer) => answer.status === 'duplicate')).toBe(true);

    // The bucket is in Postgres: an API process killed while runs wait changes nothing, and its replacement shares it.
    await killHard(apis[0]!.process.child);
    apis[0]!.process = spawnApiProcess(config, apis[0]!.port);
    // A worker killed while delayed runs wait: Temporal holds the delays, the other worker and the replacement run them.
    await killHard(workers[0]!.child);
    workers[0] = spawnWorkerProcess(config);
    await Promise.all([apis[0]!.process.ready, workers[0].ready]);

    const routes = await routesOf(activityId);
    expect(routes).toHaveLength(EVENTS);
    expect(routes.every((route) => route.outcome === 'started')).toBe(true);
    // What the throttle promises whatever the arrival times: the runs of one key are due one interval (100 ms) apart
    // at least — a run not delayed is due when it was decided. (How many are delayed depends on how fast the events
    // arrived: on an idle machine the 100 posts take about a second and 99 are delayed.)
    const due = routes.map((route) => (route.not_before ?? route.paced_at!).getTime()).sort((a, b) => a - b);
    for (let i = 1; i < due.length; i++) expect(due[i]! - due[i - 1]!).toBeGreaterThanOrEqual(95);
    const delayed = routes.filter((route) => route.not_before !== null);
    expect(delayed.length).toBeGreaterThan(0);
    expect(delayed[0]!.detail).toMatch(/^delayed by throttle \(10 per 1s, burst 1\) until .+Z for key "acme"$/);

    await until(
      'every throttled run to finish',
      async () => (await runsOf(activityId)).filter((run) => run.status === 'succeeded').length === EVENTS,
      60_000,
    );
    const runs = await runsOf(activityId);
    expect(new Set(runs.map((run) => run.workflow_id)).size).toBe(EVENTS);
    const spread = runs[runs.length - 1]!.started_at.getTime() - runs[0]!.started_at.getTime();
    expect(spread).toBeGreaterThanOrEqual(9_000);
    // No run began before its time.
    const dueOf = new Map(routes.map((route) => [route.workflow_id, route.not_before]));
    for (const run of runs) {
      const notBefore = dueOf.get(run.workflow_id);
      if (notBefore !== null && notBefore !== undefined)
        expect(run.started_at.getTime()).toBeGreaterThanOrEqual(notBefore.getTime() - 5);
    }
  }, 180_000);

  // 10 per hour rather than per minute: the bucket admits one more run every period / limit (6 min here, 6 s at
  // 10/min), so the count is exact only if the 100 posts finish within that; a loaded shared machine can take longer.
  test('a rate limit of 10 per hour starts 10 of 100 events for one key and records the other 90 as dropped with the limit and the key', async () => {
    const activityId = await register({
      name: 'partner-notify',
      triggers: [{ type: 'event', event_type: 'partner.notify' }],
      tasks: [{ type: 'noop' }],
      rate_limit: { limit: 10, period: '1h', key: 'data.account' },
    });
    const answers = await burst('partner.notify', 'notify', 'globex');
    expect(answers.every((answer) => answer.status === 'accepted')).toBe(true);
    // A dropped event has no run in its answer.
    expect(answers.filter((answer) => answer.runs.length === 1).length).toBe(10);

    // Every event routed: nothing is left for a dispatcher to start later.
    await until(
      'every event routed',
      async () =>
        (
          await sql.query(
            `SELECT 1 FROM events WHERE event_type = 'partner.notify' AND routing_state = 'pending' LIMIT 1`,
          )
        ).rowCount === 0,
      30_000,
    );
    const routes = await routesOf(activityId);
    expect(routes.filter((route) => route.outcome === 'started')).toHaveLength(10);
    const dropped = routes.filter((route) => route.outcome === 'dropped');
    expect(dropped).toHaveLength(90);
    expect(dropped[0]!.detail).toBe('dropped by rate_limit: 10 per 1h reached for key "globex"');

    // The decision log says the same over HTTP.
    const event = (await (await fetch(`${apis[1]!.url}/v1/events/${dropped[0]!.event_id}`)).json()) as {
      routes: Array<{ outcome: string; detail: string }>;
    };
    expect(event.routes[0]).toMatchObject({ outcome: 'dropped', detail: dropped[0]!.detail });

    await until(
      'the 10 runs within the limit to finish',
      async () => (await runsOf(activityId)).filter((run) => run.status === 'succeeded').length === 10,
      30_000,
    );
    expect(await runsOf(activityId)).toHaveLength(10);

    // Another key has a bucket of its own.
    const other = await post(1, 'partner.notify', 'notify-initech-0', 'initech');
    expect(other.runs).toHaveLength(1);

    // The counters of both APIs together count every dropped run once (the first API was replaced before this test, so its counter starts here).
    let total = 0;
    for (const api of apis) {
      const text = await (await fetch(`${api.url}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('activity_core_runs_dropped_total{activity="partner-notify",reason="rate_limit"}'));
      total += line === undefined ? 0 : Number(line.split(' ').pop());
    }
    expect(total).toBe(90);
  }, 180_000);
});
