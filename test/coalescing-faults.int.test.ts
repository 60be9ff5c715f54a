import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId } from '@activity-core/contracts';
import { waitFor, type TestStack } from './harness';
import { startStackOnRestartableTemporal } from './restartable-temporal';
import { freePort } from '@activity-core/dev-services';
import { killHard, spawnApiProcess, type SpawnedProcess } from './worker-process';

/**
 * Debounce across faults (docs/coalescing.md, ADR 0066): a worker SIGKILLed
 * mid-burst and Temporal restarted mid-burst change nothing about the
 * outcome — one run per burst with its last event, every other event merged
 * into it once, no event lost.
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

async function register(name: string, eventType: string): Promise<string> {
  const response = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name,
      triggers: [
        { type: 'event', event_type: eventType, debounce: { key: 'data.contact', period: '1s', max_wait: '60s' } },
      ],
      tasks: [{ type: 'noop' }],
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

/** Posts events `from`..`to` of one contact, 40 ms apart (50 events span 2 s), each accepted. */
async function burst(eventType: string, prefix: string, contact: string, from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: `${prefix}_${String(n).padStart(2, '0')}`,
        event_type: eventType,
        source: 'crm',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { contact, n },
      },
    });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().status).toBe('accepted');
    await sleep(40);
  }
}

async function outcomes(activityId: string): Promise<Record<string, number>> {
  const result = await stack.sql.query(
    'SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome',
    [activityId],
  );
  return Object.fromEntries(result.rows.map((row) => [row.outcome, row.n]));
}

/** Waits until every route of the activity is merged or started, then returns its runs. */
async function settled(
  activityId: string,
  events: number,
  expectedRuns: number,
): Promise<Array<{ workflow_id: string; status: string }>> {
  await waitFor(
    'every event merged or started, and the runs finished',
    async () => {
      const counted = await outcomes(activityId);
      const runs = await stack.sql.query(
        `SELECT 1 FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
        [activityId],
      );
      return (counted.merged ?? 0) + (counted.started ?? 0) === events && runs.rowCount! >= expectedRuns
        ? true
        : undefined;
    },
    90_000,
  );
  const runs = await stack.sql.query('SELECT workflow_id, status FROM activity_runs WHERE activity_id = $1', [
    activityId,
  ]);
  return runs.rows;
}

describe('debounce across faults', () => {
  test('a worker SIGKILLed mid-burst: a new worker still makes the burst one run with its last event, 49 merged', async () => {
    const activityId = await register('debounce-worker-kill', 'contact.killed');
    const first = startWorker();
    await first.ready;
    await burst('contact.killed', 'evt_kill', 'c-1', 1, 25);
    // The window's workflow is started (the opener's route moved on from pending) and sleeping on its timer.
    await waitFor('the window workflow to be started', async () =>
      (await outcomes(activityId)).pending === undefined ? true : undefined,
    );
    await killHard(first.child);
    expect(first.exited()).toBe('SIGKILL');
    await burst('contact.killed', 'evt_kill', 'c-1', 26, 50);
    // The window falls due while no worker runs.
    await sleep(1_500);
    expect(await outcomes(activityId)).toEqual({ coalescing: 50 });
    const second = startWorker();
    await second.ready;
    const runs = await settled(activityId, 50, 1);
    expect(runs).toEqual([{ workflow_id: eventRunWorkflowId(activityId, 'evt_kill_50'), status: 'succeeded' }]);
    expect(await outcomes(activityId)).toEqual({ merged: 49, started: 1 });
  });

  test('an API process SIGKILLed mid-burst with events in flight: every stored event ends merged or started once, one run per window', async () => {
    const activityId = await register('debounce-api-kill', 'contact.apikill');
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
          event_id: `evt_ak_${String(n).padStart(2, '0')}`,
          event_type: 'contact.apikill',
          source: 'crm',
          data: { contact: 'c-1', n },
        }),
      }).then(
        (response) => response.status,
        () => 0,
      );
    // Twenty events in flight at once, and the API killed while they are.
    const inFlight = Array.from({ length: 20 }, (_, n) => send(n + 1));
    await sleep(30);
    await killHard(api.child);
    const statuses = await Promise.all(inFlight);
    const acked = statuses.filter((status) => status === 202).length;
    // The in-process API (its dispatcher) takes over; more events of the key arrive through it.
    await burst('contact.apikill', 'evt_ak', 'c-1', 21, 30);
    const stored = (
      await stack.sql.query('SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1', [activityId])
    ).rows[0].n as number;
    expect(stored).toBeGreaterThanOrEqual(acked + 10);
    await settled(activityId, stored, 1);
    // Events the killed process stored but never put in a window are joined by the dispatcher once their inline
    // lease ends: if the burst's window closed meanwhile they form a later burst (a window and a run of their own).
    const windows = await waitFor(
      'every window closed and its run finished',
      async () => {
        const rows = await stack.sql.query(
          `SELECT w.state, w.member_count, w.run_workflow_id, r.status FROM coalesce_windows w
         LEFT JOIN activity_runs r ON r.workflow_id = w.run_workflow_id WHERE w.activity_id = $1`,
          [activityId],
        );
        return rows.rows.every((row) => row.state === 'closed' && row.status === 'succeeded') ? rows.rows : undefined;
      },
      90_000,
    );
    const runs = await stack.sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [activityId]);
    expect(runs.rows.map((run) => run.workflow_id).sort()).toEqual(
      windows.map((window) => window.run_workflow_id).sort(),
    );
    expect(windows.reduce((sum, window) => sum + window.member_count, 0)).toBe(stored);
    expect(await outcomes(activityId)).toEqual({ merged: stored - windows.length, started: windows.length });
  });

  test('Temporal restarted mid-burst, and a burst that opens while Temporal is down: one run per burst, nothing lost', async () => {
    const activityId = await register('debounce-temporal-restart', 'contact.restart');
    if (workers.every((worker) => worker.exited() !== null)) await startWorker().ready;
    await burst('contact.restart', 'evt_tr_a', 'a', 1, 25);
    await waitFor('the window workflow to be started', async () =>
      (await outcomes(activityId)).pending === undefined ? true : undefined,
    );
    await temporal.stop();
    // Key a's burst goes on without Temporal; key b's burst opens without it (its window's workflow is started later).
    await Promise.all([
      burst('contact.restart', 'evt_tr_a', 'a', 26, 50),
      burst('contact.restart', 'evt_tr_b', 'b', 1, 50),
    ]);
    await temporal.start();
    const runs = await settled(activityId, 100, 2);
    expect(runs.map((run) => run.workflow_id).sort()).toEqual(
      [eventRunWorkflowId(activityId, 'evt_tr_a_50'), eventRunWorkflowId(activityId, 'evt_tr_b_50')].sort(),
    );
    expect(await outcomes(activityId)).toEqual({ merged: 98, started: 2 });
    const windows = await stack.sql.query(
      `SELECT key, member_count FROM coalesce_windows WHERE activity_id = $1 ORDER BY key`,
      [activityId],
    );
    expect(windows.rows).toEqual([
      { key: 'a', member_count: 50 },
      { key: 'b', member_count: 50 },
    ]);
  });
});
