import { runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { recordGoldenHistory } from './golden-histories';
import { startHttpTarget } from './http-target';
import { startStack, waitFor, workflowBundle, type TestStack } from './harness';
import { killHard, spawnWorkerProcess, type SpawnedProcess } from './worker-process';

/**
 * A run's bookkeeping (logRun, recordTask, setRunStatus) runs as local
 * activities: inside the workflow task, recorded as markers, never as a
 * server round trip. These tests hold a bookkeeping write inside Postgres
 * (a row lock taken by the test) to reach the two moments local activities
 * add: a worker dying in the middle of one, and a write that cannot finish
 * within the local retry window.
 */
const EventType = temporal.api.enums.v1.EventType;
/** Bounds on waits, not expectations: spawned workers bundle the workflows at start, on a shared machine. */
const PATIENCE = 180_000;

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
/** Requests to a gated path wait until the test opens its gate. */
const gates = new Map<string, { opened: Promise<void>; open: () => void }>();
const workers: SpawnedProcess[] = [];

function gate(path: string): () => void {
  let open = () => undefined as void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.set(path, { opened, open });
  return open;
}

beforeAll(async () => {
  [stack, target] = await Promise.all([
    // The API in-process; workers are separate processes this test can kill.
    startStack({ worker: false }),
    startHttpTarget(async (request) => {
      await gates.get(request.url)?.opened;
      return { status: 200, body: { ok: true } };
    }),
  ]);
});
afterAll(async () => {
  for (const open of gates.values()) open.open();
  await Promise.all(workers.map((worker) => killHard(worker.child)));
  await stack?.close();
  await target?.close();
});

async function startWorker(): Promise<SpawnedProcess> {
  const worker = spawnWorkerProcess(stack.config);
  workers.push(worker);
  await worker.ready;
  return worker;
}

async function fire(name: string, tasks: object[]): Promise<{ workflowId: string; runId: string }> {
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: { name, triggers: [{ type: 'event', event_type: `${name}.go` }], tasks },
  });
  expect(created.statusCode, created.body).toBe(201);
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: `evt_${name}`,
      event_type: `${name}.go`,
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    },
  });
  expect(posted.statusCode, posted.body).toBe(202);
  const workflowId = `activity-${created.json().id}:evt_${name}`;
  return { workflowId, runId: runIdFor(workflowId) };
}

/** Holds a row lock in an open transaction until released: writes to that row wait for it. */
async function lockRow(sql: string, params: unknown[]): Promise<{ release(): Promise<void> }> {
  const client: pg.PoolClient = await stack.sql.connect();
  await client.query('BEGIN');
  const locked = await client.query(sql, params);
  expect(locked.rowCount).toBe(1);
  return {
    release: async () => {
      await client.query('ROLLBACK');
      client.release();
    },
  };
}

/** A worker's statement on `table` waiting for a lock: the bookkeeping write is in flight, held by the test. */
async function workerWriteWaiting(table: string): Promise<true | undefined> {
  const { rows } = await stack.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'activity-core-worker' AND wait_event_type = 'Lock' AND query ILIKE $1`,
    [`%"${table}"%`],
  );
  return (rows[0]?.n ?? 0) > 0 ? true : undefined;
}

async function historyOf(workflowId: string): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  return (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

const scheduledActivities = (events: temporal.api.history.v1.IHistoryEvent[]) =>
  events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
const markers = (events: temporal.api.history.v1.IHistoryEvent[]) =>
  events.filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED);
const timedOutTasks = (events: temporal.api.history.v1.IHistoryEvent[]) =>
  events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT);

describe('a worker killed in the middle of a local bookkeeping write', () => {
  test('is replaced, the write is repeated by the next worker, and the run records one row per task and finishes', async () => {
    const openHttp = gate('/held-http');
    const first = await startWorker();
    const { workflowId, runId } = await fire('la-crash', [
      { type: 'http', config: { url: `${target.url}/held-http` } },
      { type: 'noop' },
    ]);
    const httpTask = taskWorkflowId(runId, 'http', 0);

    // 1. The http task's "succeeded" write: its row is locked before the request is answered.
    await waitFor(
      'the http request to arrive',
      async () => (target.requests.some((r) => r.url === '/held-http') ? true : undefined),
      PATIENCE,
    );
    const taskLock = await lockRow('SELECT 1 FROM task_instances WHERE workflow_id = $1 FOR UPDATE', [httpTask]);
    openHttp();
    await waitFor(
      'the task\'s "succeeded" write to wait on the lock',
      () => workerWriteWaiting('task_instances'),
      PATIENCE,
    );
    await killHard(first.child);
    await taskLock.release();

    // 2. The run's final status write, in the next worker.
    const runLock = await lockRow('SELECT 1 FROM activity_runs WHERE run_id = $1 FOR UPDATE', [runId]);
    const second = await startWorker();
    await waitFor(
      "the run's final status write to wait on the lock",
      () => workerWriteWaiting('activity_runs'),
      PATIENCE,
    );
    await killHard(second.child);
    await runLock.release();

    await startWorker();
    const outcome = await stack.client.workflow.getHandle(workflowId).result();
    expect(outcome).toMatchObject({ runId, status: 'succeeded' });

    // The external call happened once; every child was started once; one row per run and task.
    expect(target.requests.filter((r) => r.url === '/held-http')).toHaveLength(1);
    const run = await historyOf(workflowId);
    const children = run
      .filter((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)
      .map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId);
    expect(children).toEqual([httpTask, taskWorkflowId(runId, 'noop', 1)]);
    expect(
      (await stack.sql.query('SELECT status FROM activity_runs WHERE workflow_id = $1', [workflowId])).rows,
    ).toEqual([{ status: 'succeeded' }]);
    const tasks = await stack.sql.query(
      'SELECT task_index, status FROM task_instances WHERE run_id = $1 ORDER BY task_index',
      [runId],
    );
    expect(tasks.rows).toEqual([
      { task_index: 0, status: 'succeeded' },
      { task_index: 1, status: 'succeeded' },
    ]);

    // The bookkeeping was local (markers, no bookkeeping activity), and each killed worker's
    // workflow task timed out and was done again by the next one.
    const http = await historyOf(httpTask);
    expect(scheduledActivities(run)).toEqual([]);
    expect(scheduledActivities(http)).toEqual(['httpTask']);
    expect(markers(run).length).toBeGreaterThanOrEqual(3); // the patch, logRun, setRunStatus
    expect(markers(http).length).toBeGreaterThanOrEqual(3); // the patch, recordTask ×2
    expect(timedOutTasks(http).length).toBeGreaterThanOrEqual(1);
    expect(timedOutTasks(run).length).toBeGreaterThanOrEqual(1);
  }, 600_000);
});

describe('a bookkeeping write that cannot finish within the local retry window', () => {
  test('is handed to an ordinary activity retried by Temporal, and the run finishes once the write can', async () => {
    const openHttp = gate('/held-fallback');
    await startWorker();
    const { workflowId, runId } = await fire('la-fallback', [
      { type: 'http', config: { url: `${target.url}/held-fallback` } },
    ]);
    await waitFor(
      'the http request to arrive',
      async () => (target.requests.some((r) => r.url === '/held-fallback') ? true : undefined),
      PATIENCE,
    );
    // The run's final status write waits on this lock for longer than the 30 s local window.
    const runLock = await lockRow('SELECT 1 FROM activity_runs WHERE run_id = $1 FOR UPDATE', [runId]);
    try {
      openHttp();
      await waitFor(
        'the final status write to be handed to an ordinary activity',
        async () => (scheduledActivities(await historyOf(workflowId)).includes('setRunStatus') ? true : undefined),
        PATIENCE,
      );
      // Still held: nothing was recorded and the run is not over.
      expect((await stack.sql.query('SELECT status FROM activity_runs WHERE run_id = $1', [runId])).rows).toEqual([
        { status: 'running' },
      ]);
    } finally {
      await runLock.release();
    }
    const outcome = await stack.client.workflow.getHandle(workflowId).result();
    expect(outcome).toMatchObject({ runId, status: 'succeeded' });
    expect(
      (await stack.sql.query('SELECT status FROM activity_runs WHERE workflow_id = $1', [workflowId])).rows,
    ).toEqual([{ status: 'succeeded' }]);
    expect((await stack.sql.query('SELECT status FROM task_instances WHERE run_id = $1', [runId])).rows).toEqual([
      { status: 'succeeded' },
    ]);

    // The local attempt's failure is in the history (a marker) before the ordinary activity.
    const run = await historyOf(workflowId);
    expect(scheduledActivities(run)).toEqual(['setRunStatus']);
    const lastMarker = markers(run).at(-1);
    const fallback = run.find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(Number(lastMarker?.eventId)).toBeLessThan(Number(fallback?.eventId));
    expect(lastMarker?.markerRecordedEventAttributes?.failure).toBeTruthy();
    // Replayed, the failed marker leads to the same fallback (the SDK hands the failure over differently then).
    await expect(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, { events: run }, workflowId),
    ).resolves.toBeUndefined();
    await recordGoldenHistory('run-activity-workflow-bookkeeping-fallback', { events: run }, workflowId);
  }, 600_000);
});
