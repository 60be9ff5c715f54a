import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { batchRunWorkflowId } from '@activity-core/contracts';
import { waitFor, type TestStack } from './harness';
import { startStackOnRestartableTemporal } from './restartable-temporal';
import { freePort } from '@activity-core/dev-services';
import { killHard, spawnApiProcess, type SpawnedProcess } from './worker-process';

/**
 * Batching across faults (docs/coalescing.md "Batching", ADR 0070): a batch's
 * members are rows in Postgres and its timer a Temporal workflow, so a worker
 * killed while batches are open, and while batches fill up and close, changes
 * nothing: the same batches, the same runs, every member once. A batch closed
 * by the byte cap while Temporal is down still runs at once when it is back.
 */
let faults: Awaited<ReturnType<typeof startStackOnRestartableTemporal>>;
let temporal: (typeof faults)['temporal'];
let stack: TestStack;
let workers: SpawnedProcess[];

beforeAll(async () => {
  faults = await startStackOnRestartableTemporal();
  ({ temporal, stack, processes: workers } = faults);
}, 120_000);

afterAll(async () => {
  await faults?.close();
}, 60_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const startWorker = (): SpawnedProcess => faults.startWorker();

async function post(from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: `kill_${String(n).padStart(3, '0')}`,
        event_type: 'order.killed',
        source: 'shop',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { shop: 's-1', n },
      },
    });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().status).toBe('accepted');
  }
}

async function outcomes(activityId: string): Promise<Record<string, number>> {
  const result = await stack.sql.query(
    'SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome',
    [activityId],
  );
  return Object.fromEntries(result.rows.map((row) => [row.outcome, row.n]));
}

describe('batching across faults', () => {
  test('a worker SIGKILLed while a batch is open: a new worker still makes 3 runs of 50, 50 and 20 events, each once', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'batch-worker-kill',
        triggers: [
          { type: 'event', event_type: 'order.killed', batch: { key: 'data.shop', max_size: 50, timeout: '3s' } },
        ],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(response.statusCode, response.body).toBe(201);
    const activityId: string = response.json().id;
    const first = startWorker();
    await first.ready;
    await post(1, 30);
    // The batch's workflow is started (the opener's route moved on from pending) and sleeping on its timer.
    await waitFor('the batch workflow to be started', async () =>
      (await outcomes(activityId)).pending === undefined ? true : undefined,
    );
    await killHard(first.child);
    expect(first.exited()).toBe('SIGKILL');
    // Without a worker: the first batch fills (event 50 closes it and wakes its workflow), a second fills, a third opens.
    await post(31, 120);
    const second = startWorker();
    await second.ready;
    await waitFor(
      'every event batched and 3 runs finished',
      async () => {
        const runs = await stack.sql.query(
          `SELECT 1 FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
          [activityId],
        );
        return (await outcomes(activityId)).batched === 120 && runs.rowCount === 3 ? true : undefined;
      },
      90_000,
    );
    expect(await outcomes(activityId)).toEqual({ batched: 120 });
    const windows = await stack.sql.query(
      `SELECT id, member_count, first_event_id FROM coalesce_windows WHERE activity_id = $1
       ORDER BY opened_at, first_event_id`,
      [activityId],
    );
    expect(windows.rows.map((row) => [row.first_event_id, row.member_count])).toEqual([
      ['kill_001', 50],
      ['kill_051', 50],
      ['kill_101', 20],
    ]);
    const members = await stack.sql.query(
      `SELECT workflow_id, count(*)::int AS n, count(DISTINCT window_position)::int AS places FROM event_routes
       WHERE activity_id = $1 GROUP BY workflow_id`,
      [activityId],
    );
    const runs = await stack.sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [activityId]);
    const expected = windows.rows.map((row) => batchRunWorkflowId(activityId, row.id));
    expect(runs.rows.map((row) => row.workflow_id).sort()).toEqual([...expected].sort());
    expect(Object.fromEntries(members.rows.map((row) => [row.workflow_id, [row.n, row.places]]))).toEqual(
      Object.fromEntries(expected.map((id, index) => [id, index < 2 ? [50, 50] : [20, 20]])),
    );
  });

  test('a batch closed by the byte cap while Temporal is down runs as soon as Temporal is back, not at its timeout', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'batch-temporal-down',
        triggers: [
          { type: 'event', event_type: 'order.down', batch: { max_size: 100, timeout: '1h', max_bytes: 2048 } },
        ],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(response.statusCode, response.body).toBe(201);
    const activityId: string = response.json().id;
    if (workers.every((worker) => worker.exited() !== null)) await startWorker().ready;
    const send = async (n: number) => {
      const answer = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_id: `down_${n}`,
          event_type: 'order.down',
          source: 'shop',
          occurred_at: '2026-03-01T09:00:00Z',
          // A little over 800 bytes of JSON each: two fit in 2048, a third does not.
          data: { n, pad: 'x'.repeat(700) },
        },
      });
      expect(answer.statusCode, answer.body).toBe(202);
    };
    await send(1);
    await waitFor('the batch workflow to be started', async () =>
      (await outcomes(activityId)).pending === undefined ? true : undefined,
    );
    // ...and asleep on its one-hour timer, so only a wake can make it look at its batch again.
    const opened = await stack.sql.query('SELECT workflow_id FROM coalesce_windows WHERE activity_id = $1', [
      activityId,
    ]);
    await waitFor(
      'the batch workflow to wait on its timer',
      async () => {
        const history = await stack.client.workflow.getHandle(opened.rows[0].workflow_id).fetchHistory();
        return history.events!.some((event) => event.timerStartedEventAttributes) ? true : undefined;
      },
      60_000,
    );
    await temporal.stop();
    await send(2);
    // Closes the first batch (2 events) without itself and opens the next; neither can be woken yet. The closed
    // batch's first event is recorded in its run already; its last waits for the run to start.
    await send(3);
    expect(await outcomes(activityId)).toEqual({ batched: 1, coalescing: 1, pending: 1 });
    await temporal.start();
    // The dispatcher retries down_3's routing, which wakes both batches: the first one's run starts now.
    await waitFor(
      "the first batch's run finished and its events batched",
      async () => {
        const runs = await stack.sql.query(
          `SELECT workflow_id FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
          [activityId],
        );
        const counted = await outcomes(activityId);
        return runs.rowCount === 1 && counted.batched === 2 && counted.coalescing === 1 ? runs.rows : undefined;
      },
      120_000,
    );
    const windows = await stack.sql.query(
      `SELECT id, state, member_count FROM coalesce_windows WHERE activity_id = $1 ORDER BY opened_at, first_event_id`,
      [activityId],
    );
    expect(windows.rows.map((row) => [row.state, row.member_count])).toEqual([
      ['closed', 2],
      ['open', 1],
    ]);
    const runs = await stack.sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [activityId]);
    expect(runs.rows).toEqual([{ workflow_id: batchRunWorkflowId(activityId, windows.rows[0].id) }]);
  }, 300_000);

  test('an API process SIGKILLed with events in flight: every stored event is in one batch at one place, one run per batch', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'batch-api-kill',
        triggers: [{ type: 'event', event_type: 'order.apikill', batch: { max_size: 10, timeout: '3s' } }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(response.statusCode, response.body).toBe(201);
    const activityId: string = response.json().id;
    if (workers.every((worker) => worker.exited() !== null)) await startWorker().ready;
    const port = await freePort();
    const api = spawnApiProcess(stack.config, port);
    workers.push(api);
    await api.ready;
    const send = (n: number) =>
      fetch(`http://127.0.0.1:${port}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          event_id: `ak_${String(n).padStart(2, '0')}`,
          event_type: 'order.apikill',
          source: 'shop',
          data: { n },
        }),
      }).then(
        (answer) => answer.status,
        () => 0,
      );
    // Twenty events in flight at once, and the API killed while they are.
    const inFlight = Array.from({ length: 20 }, (_, n) => send(n + 1));
    await sleep(30);
    await killHard(api.child);
    const acked = (await Promise.all(inFlight)).filter((status) => status === 202).length;
    // Ten more through the in-process API, whose dispatcher also takes over the killed process's events.
    for (let n = 21; n <= 30; n++) {
      const answer = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_id: `ak_${n}`,
          event_type: 'order.apikill',
          source: 'shop',
          occurred_at: '2026-03-01T09:00:00Z',
          data: { n },
        },
      });
      expect(answer.statusCode, answer.body).toBe(202);
    }
    const stored = (
      await stack.sql.query('SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1', [activityId])
    ).rows[0].n as number;
    expect(stored).toBeGreaterThanOrEqual(acked + 10);
    // Events the killed process stored but never put in a batch are joined by the dispatcher once their lease ends.
    const windows = await waitFor(
      'every stored event batched, every batch closed and its run finished',
      async () => {
        if ((await outcomes(activityId)).batched !== stored) return undefined;
        const rows = await stack.sql.query(
          `SELECT w.id, w.state, w.member_count, w.run_workflow_id, r.status FROM coalesce_windows w
           LEFT JOIN activity_runs r ON r.workflow_id = w.run_workflow_id WHERE w.activity_id = $1`,
          [activityId],
        );
        return rows.rows.every((row) => row.state === 'closed' && row.status === 'succeeded') ? rows.rows : undefined;
      },
      120_000,
    );
    expect(windows.reduce((sum, window) => sum + window.member_count, 0)).toBe(stored);
    expect(windows.every((window) => window.member_count <= 10)).toBe(true);
    const places = await stack.sql.query(
      `SELECT window_id, count(*)::int AS n, count(DISTINCT window_position)::int AS distinct_places,
         min(window_position) AS first, max(window_position) AS last
       FROM event_routes WHERE activity_id = $1 GROUP BY window_id`,
      [activityId],
    );
    for (const row of places.rows) expect(row).toMatchObject({ distinct_places: row.n, first: 1, last: row.n });
    const runs = await stack.sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [activityId]);
    expect(runs.rows.map((run) => run.workflow_id).sort()).toEqual(
      windows.map((window) => batchRunWorkflowId(activityId, window.id)).sort(),
    );
  }, 300_000);
});
