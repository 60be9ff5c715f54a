import { freePort } from '@activity-core/dev-services';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestDatabase, testConfig, testPool } from './harness';
import { until } from './restartable-stack';
import { spawnApiProcess, spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';

/**
 * Scale-out: two API processes and two worker processes (the real entry
 * points) on one Temporal and one Postgres. Every event is delivered three
 * times at once, over both APIs, while other events arrive; the runs are
 * executed by whichever worker polls first. Afterwards: exactly one run per
 * (activity, event), every task recorded once, no acknowledged event lost.
 */
const EVENTS = 100;
const COPIES = 3;
const SENDERS = 12;
const EVENT_TYPE = 'scale.out';
const TASKS = [{ type: 'noop' }, { type: 'noop' }];

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let apis: Array<{ process: SpawnedProcess; url: string }> = [];
let workers: SpawnedProcess[] = [];
let sql: pg.Pool;
let connection: Connection;
let namespace: string;

beforeAll(async () => {
  database = await createTestDatabase();
  const config = testConfig(database.url);
  namespace = config.temporal.namespace;
  const ports = [await freePort(), await freePort()];
  apis = ports.map((port) => ({ process: spawnApiProcess(config, port), url: `http://127.0.0.1:${port}` }));
  workers = [spawnWorkerProcess(config), spawnWorkerProcess(config)];
  await Promise.all([...apis.map((api) => api.process.ready), ...workers.map((worker) => worker.ready)]);
  sql = testPool(database.url, 2);
  connection = await Connection.connect({ address: config.temporal.address });
  // Four processes compiling their sources at once on a shared two-core machine can take minutes.
}, 300_000);

afterAll(async () => {
  await Promise.all([
    ...apis.map((api) => stopGracefully(api.process.child)),
    ...workers.map((worker) => stopGracefully(worker.child)),
  ]);
  await sql?.end();
  await connection?.close();
  await database?.drop();
}, 120_000);

function alive(): void {
  for (const [i, api] of apis.entries())
    if (api.process.exited() !== null)
      throw new Error(`API ${i} exited (${String(api.process.exited())}):\n${api.process.output()}`);
  for (const [i, worker] of workers.entries())
    if (worker.exited() !== null)
      throw new Error(`worker ${i} exited (${String(worker.exited())}):\n${worker.output()}`);
}

interface Answer {
  api: number;
  eventId: string;
  status: 'accepted' | 'duplicate';
  runs: Array<{ run_id: string; workflow_id: string; status: string }>;
}

/** Posts until acknowledged, as a client honouring 503 does; anything but 202 or 503 fails the test. */
async function post(api: number, eventId: string): Promise<Answer> {
  const body = JSON.stringify({
    event_id: eventId,
    event_type: EVENT_TYPE,
    source: 'scale-tests',
    occurred_at: '2026-03-01T09:00:00Z',
    data: { eventId },
  });
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(`${apis[api]!.url}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const json = (await response.json()) as Omit<Answer, 'api' | 'eventId'>;
    if (response.status === 202) return { api, eventId, status: json.status, runs: json.runs };
    if (response.status !== 503 || attempt >= 20)
      throw new Error(`${eventId} via API ${api}: ${response.status} ${JSON.stringify(json)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('two API processes and two workers on one Temporal and one Postgres', () => {
  test('concurrent duplicate and distinct deliveries over both APIs give exactly one run per event, each task recorded once, nothing lost', async () => {
    const created = await fetch(`${apis[0]!.url}/v1/activities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'scale-out', triggers: [{ type: 'event', event_type: EVENT_TYPE }], tasks: TASKS }),
    });
    expect(created.status).toBe(201);
    const activityId = ((await created.json()) as { id: string }).id;

    // Each event's copies go out together, alternating which API gets the first; the senders overlap, so
    // distinct events and copies of one event race on both processes at once.
    const jobs = Array.from({ length: EVENTS }, (_, i) => i);
    const answers: Answer[] = [];
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        for (let i = jobs.shift(); i !== undefined; i = jobs.shift()) {
          const eventId = `scale-${i}`;
          answers.push(
            ...(await Promise.all(
              Array.from({ length: COPIES }, (_, copy) => post((i + copy) % apis.length, eventId)),
            )),
          );
        }
      }),
    );
    alive();

    // Every delivery acknowledged; per event exactly one `accepted`, the other copies `duplicate`, all naming one run.
    expect(answers).toHaveLength(EVENTS * COPIES);
    const byEvent = new Map<string, Answer[]>();
    for (const answer of answers) byEvent.set(answer.eventId, [...(byEvent.get(answer.eventId) ?? []), answer]);
    expect(byEvent.size).toBe(EVENTS);
    for (const [eventId, copies] of byEvent) {
      expect(
        copies.filter((copy) => copy.status === 'accepted'),
        eventId,
      ).toHaveLength(1);
      expect(new Set(copies.flatMap((copy) => copy.runs.map((run) => run.run_id))).size, eventId).toBe(1);
    }
    const acceptedBy = [0, 1].map(
      (api) => answers.filter((answer) => answer.api === api && answer.status === 'accepted').length,
    );
    expect(
      acceptedBy.every((n) => n > 0),
      `accepted per API: ${acceptedBy.join(', ')}`,
    ).toBe(true);

    await until(
      'every run and task to end',
      async () => {
        alive();
        const { rows } = await sql.query(
          `SELECT (SELECT count(*) FROM events WHERE routing_state = 'pending')::int AS pending,
                  (SELECT count(*) FROM activity_runs WHERE status = 'running')::int AS running,
                  (SELECT count(*) FROM activity_runs)::int AS runs,
                  (SELECT count(*) FROM task_instances WHERE status = 'running')::int AS tasks_running`,
        );
        const row = rows[0] as { pending: number; running: number; runs: number; tasks_running: number };
        return row.pending === 0 && row.running === 0 && row.tasks_running === 0 && row.runs >= EVENTS;
      },
      600_000,
    );

    // Nothing lost: every event stored, routed, its one route started.
    const events = await sql.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE routing_state = 'routed')::int AS routed FROM events WHERE event_id LIKE 'scale-%'`,
    );
    expect(events.rows[0]).toEqual({ n: EVENTS, routed: EVENTS });
    // `duplicate` only if an inline start outlived its deadline and the dispatcher found the run already started.
    const routes = await sql.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE outcome IN ('started', 'duplicate'))::int AS settled FROM event_routes`,
    );
    expect(routes.rows[0]).toEqual({ n: EVENTS, settled: EVENTS });

    // Exactly one run per (activity, event), each succeeded, with exactly one row per task.
    const runs = await sql.query(
      `SELECT event_id, count(*)::int AS n, bool_and(status = 'succeeded') AS ok FROM activity_runs WHERE activity_id = $1 GROUP BY event_id`,
      [activityId],
    );
    expect(runs.rows).toHaveLength(EVENTS);
    expect(runs.rows.filter((row) => row.n !== 1 || row.ok !== true)).toEqual([]);
    const tasks = await sql.query(
      `SELECT r.run_id, count(t.id)::int AS n, count(DISTINCT t.task_index)::int AS indexes, coalesce(bool_and(t.status = 'succeeded'), false) AS ok
         FROM activity_runs r LEFT JOIN task_instances t ON t.run_id = r.run_id GROUP BY r.run_id`,
    );
    expect(
      tasks.rows.filter((row) => row.n !== TASKS.length || row.indexes !== TASKS.length || row.ok !== true),
    ).toEqual([]);

    // Temporal agrees: one run workflow per event, and both workers executed runs.
    const client = new Client({ connection, namespace });
    const workflowIds: string[] = [];
    for await (const execution of client.workflow.list({ query: `ActivityId = "${activityId}"` }))
      workflowIds.push(execution.workflowId);
    expect(workflowIds).toHaveLength(EVENTS);
    expect(new Set(workflowIds).size).toBe(EVENTS);
    const identities = new Map<string, number>();
    for (const workflowId of workflowIds) {
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      for (const event of history.events ?? []) {
        const identity = event.workflowTaskStartedEventAttributes?.identity;
        if (identity) identities.set(identity, (identities.get(identity) ?? 0) + 1);
      }
    }
    const workerPids = workers.map((worker) => `${worker.child.pid}@`);
    const perWorker = workerPids.map((pid) =>
      [...identities].filter(([identity]) => identity.startsWith(pid)).reduce((sum, [, n]) => sum + n, 0),
    );
    expect(
      perWorker.every((n) => n > 0),
      `workflow tasks per worker: ${perWorker.join(', ')} (identities ${[...identities.keys()].join(', ')})`,
    ).toBe(true);
    console.info(
      `[scale-out] ${EVENTS} events × ${COPIES} copies: accepted by API 0 / 1: ${acceptedBy.join(' / ')}; workflow tasks by worker 0 / 1: ${perWorker.join(' / ')}`,
    );
    // Bounded waits inside; this only caps the whole on a loaded machine.
  }, 900_000);
});
