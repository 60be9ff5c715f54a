import {
  eventRunWorkflowId,
  manualRunWorkflowId,
  runIdFor,
  runOutcomeEventId,
  taskWorkflowId,
} from '@activity-core/contracts';
import {
  createDatabase,
  createDefinitionsRepository,
  createEventsRepository,
  createRunOutcomesRepository,
  createRunsRepository,
  type Database,
} from '@activity-core/db';
import { createEventIngest } from '@activity-core/router';
import { createRunOutcomeRecovery, createRunStarter } from '@activity-core/temporal/client';
import { createRunOutcomeAnnouncer } from '@activity-core/temporal/worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp } from '../apps/api/src/app';
import { createRunRecordEffects } from '../packages/temporal/src/effects/run-records';
import { startHttpTarget } from './http-target';
import { silentLogger, startStack, waitFor, type TestStack } from './harness';

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  // `/fail` always answers 500; everything else 200.
  target = await startHttpTarget((request) =>
    request.url.startsWith('/fail') ? { status: 500, body: { error: 'down' } } : { status: 200, body: { ok: true } },
  );
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

type InjectOptions = { method: 'GET' | 'POST'; url: string; payload?: object; headers?: Record<string, string> };
const inject = (options: InjectOptions) => stack.api.server.inject(options);

async function register(definition: object): Promise<string> {
  const created = await inject({ method: 'POST', url: '/v1/activities', payload: definition });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().id as string;
}

async function post(eventId: string, eventType: string): Promise<void> {
  const posted = await inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: eventType,
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    },
  });
  expect(posted.statusCode, posted.body).toBe(202);
}

/**
 * Waits for the run workflow to exist (a route may be started by the dispatcher
 * a moment later) and then to close: by then its last bookkeeping activity
 * (status write and announcement) has completed.
 */
async function closed(workflowId: string): Promise<void> {
  const handle = stack.client.workflow.getHandle(workflowId);
  await waitFor(`workflow ${workflowId}`, async () => (await handle.describe()).status.name, 60_000);
  await handle.result().catch(() => undefined);
}

const failingHttp = (path: string) => ({
  type: 'http',
  config: { url: `${target.url}${path}` },
  retry: { max_attempts: 1 },
});

/** A run-failed alert for one activity, as an operator would write it: a webhook call per failure. */
const alerter = (name: string, watched: string[], path: string) => ({
  name,
  triggers: [
    {
      type: 'event',
      event_type: 'activity_core.run.failed',
      source: 'activity-core',
      filter: watched.map((activity) => `data.activity_name == "${activity}"`).join(' || '),
    },
  ],
  tasks: [
    path.startsWith('/fail')
      ? failingHttp(path)
      : {
          type: 'http',
          config: {
            url: `${target.url}${path}`,
            body: {
              text: 'run {{event.data.run_id}} of {{event.data.activity_name}} failed: {{event.data.error.message}}',
            },
          },
        },
  ],
});

async function storedEvent(eventId: string) {
  const shown = await inject({ method: 'GET', url: `/v1/events/${encodeURIComponent(eventId)}` });
  return shown.statusCode === 200 ? shown.json() : undefined;
}

/** The worker's own wiring, on the same database and Temporal: the announcer behind setRunStatus and the run outcome recovery. */
function workerWiring() {
  const database: Database = createDatabase({ url: stack.config.databaseUrl, max: 2 });
  const runs = createRunsRepository(database.db);
  const ingest = createEventIngest({
    definitions: createDefinitionsRepository(database.db),
    events: createEventsRepository(database.db),
    starter: createRunStarter({ client: stack.client, taskQueue: stack.config.temporal.taskQueue }),
    runs,
    logger: silentLogger,
    eventDataLimits: stack.config.eventData,
  });
  const announcer = createRunOutcomeAnnouncer({
    outcomes: createRunOutcomesRepository(database.db),
    emit: (envelope, origin) => ingest.ingest(envelope, 'system', origin),
  });
  return { database, runs, announcer };
}

describe('run failure hooks', () => {
  test('a failed run is announced once as activity_core.run.failed, with the run, the failed task and the error, and a subscribed activity runs once', async () => {
    const failingId = await register({
      name: 'hooks-failing',
      triggers: [{ type: 'event', event_type: 'hooks.go' }],
      tasks: [{ type: 'noop' }, failingHttp('/fail/hooks')],
    });
    const alerterId = await register(alerter('hooks-alert', ['hooks-failing'], '/alert'));
    await post('hooks-1', 'hooks.go');
    const workflowId = eventRunWorkflowId(failingId, 'hooks-1');
    const runId = runIdFor(workflowId);
    await closed(workflowId);

    const eventId = `run-failed:${runId}`;
    await expect.poll(() => storedEvent(eventId), { timeout: 30_000, interval: 250 }).toBeDefined();
    const event = (await storedEvent(eventId))!;
    expect(event).toMatchObject({
      event_id: eventId,
      envelope: { event_id: eventId, event_type: 'activity_core.run.failed', source: 'activity-core', subject: runId },
      id_origin: 'system',
      credential: `system:${runId}`,
      hops: 1,
    });
    const run = (await inject({ method: 'GET', url: `/v1/runs/${runId}` })).json();
    expect(event.envelope.data).toEqual({
      run_id: runId,
      workflow_id: workflowId,
      status: 'failed',
      activity_id: failingId,
      activity_name: 'hooks-failing',
      activity_version: 1,
      trigger_type: 'event',
      trigger_event_id: 'hooks-1',
      scheduled_for: null,
      error: { message: expect.stringContaining('task 1 (http) failed'), type: null },
      failed_task: {
        index: 1,
        type: 'http',
        workflow_id: taskWorkflowId(runId, 'http', 1),
        error: { message: expect.any(String), type: 'http_status_500' },
      },
      started_at: new Date(run.started_at).toISOString(),
      finished_at: new Date(run.finished_at).toISOString(),
      duration_seconds: expect.any(Number),
    });
    expect(event.envelope.occurred_at).toBe(event.envelope.data.finished_at);
    expect(event.routes).toEqual([
      expect.objectContaining({ activity_id: alerterId, outcome: expect.stringMatching(/^(started|pending)$/) }),
    ]);

    const alertWorkflow = eventRunWorkflowId(alerterId, eventId);
    await closed(alertWorkflow);
    expect((await inject({ method: 'GET', url: `/v1/runs/${runIdFor(alertWorkflow)}` })).json().status).toBe(
      'succeeded',
    );
    const alerts = target.requests.filter((request) => request.url === '/alert');
    expect(alerts).toHaveLength(1);
    expect(JSON.parse(alerts[0]!.body)).toEqual({
      text: expect.stringMatching(new RegExp(`^run ${runId} of hooks-failing failed: task 1 \\(http\\) failed`)),
    });

    const alertRuns = await stack.sql.query('SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1', [
      alerterId,
    ]);
    expect(alertRuns.rows[0].n).toBe(1);
  });

  test('an alerting activity that always fails is not announced itself: one system event per original failure, no cascade', async () => {
    const doomedId = await register({
      name: 'hooks-doomed',
      triggers: [{ type: 'event', event_type: 'hooks.doom' }],
      tasks: [failingHttp('/fail/doomed')],
    });
    // It watches its own failures too: were its end announced, it would trigger itself forever.
    const brokenAlerterId = await register(
      alerter('hooks-broken-alert', ['hooks-doomed', 'hooks-broken-alert'], '/fail/alert'),
    );
    await post('hooks-doom-1', 'hooks.doom');
    const doomedRun = runIdFor(eventRunWorkflowId(doomedId, 'hooks-doom-1'));
    await closed(eventRunWorkflowId(doomedId, 'hooks-doom-1'));
    const alertWorkflow = eventRunWorkflowId(brokenAlerterId, runOutcomeEventId(doomedRun, 'failed'));
    await expect
      .poll(
        async () =>
          (await stack.sql.query('SELECT status FROM activity_runs WHERE workflow_id = $1', [alertWorkflow])).rows[0]
            ?.status,
        { timeout: 30_000, interval: 250 },
      )
      .toBe('failed');
    // Its workflow closed: its status write, and the announcement decision with it, are done.
    await closed(alertWorkflow);

    expect(await storedEvent(`run-failed:${runIdFor(alertWorkflow)}`)).toBeUndefined();
    const runs = await stack.sql.query('SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1', [
      brokenAlerterId,
    ]);
    expect(runs.rows[0].n).toBe(1);
    const announced = await stack.sql.query(
      "SELECT subject FROM events WHERE event_type = 'activity_core.run.failed' AND subject = ANY($1)",
      [[doomedRun, runIdFor(alertWorkflow)]],
    );
    expect(announced.rows).toEqual([{ subject: doomedRun }]);
  });

  test('a cancelled run is announced as activity_core.run.cancelled, without a failed task', async () => {
    const slowId = await register({
      name: 'hooks-slow',
      triggers: [{ type: 'event', event_type: 'hooks.slow' }],
      tasks: [{ type: 'delay', config: { duration: '1h' } }],
    });
    await post('hooks-slow-1', 'hooks.slow');
    const workflowId = eventRunWorkflowId(slowId, 'hooks-slow-1');
    const runId = runIdFor(workflowId);
    await expect
      .poll(
        async () =>
          (await stack.sql.query('SELECT status FROM task_instances WHERE run_id = $1', [runId])).rows[0]?.status,
        { timeout: 30_000, interval: 250 },
      )
      .toBe('running');
    const cancelled = await inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` });
    expect(cancelled.statusCode, cancelled.body).toBe(202);
    await closed(workflowId);

    const event = await storedEvent(`run-cancelled:${runId}`);
    expect(event).toMatchObject({
      envelope: { event_type: 'activity_core.run.cancelled', source: 'activity-core' },
      id_origin: 'system',
      credential: `system:${runId}`,
      hops: 1,
    });
    expect(event.envelope.data).toMatchObject({
      run_id: runId,
      status: 'cancelled',
      activity_name: 'hooks-slow',
      failed_task: null,
      error: null,
    });
    expect(await storedEvent(`run-failed:${runId}`)).toBeUndefined();
  });

  test('a status write repeated after the attempt that wrote it died before announcing emits the event exactly once', async () => {
    const failingId = await register({
      name: 'hooks-crashed',
      triggers: [{ type: 'event', event_type: 'hooks.crash' }],
      tasks: [{ type: 'noop' }],
    });
    const alerterId = await register(alerter('hooks-crash-alert', ['hooks-crashed'], '/alert-crash'));
    const { database, runs, announcer } = workerWiring();
    try {
      const records = createRunRecordEffects({ runs, announcer });

      const workflowId = manualRunWorkflowId(failingId, 'crash-1');
      const runId = runIdFor(workflowId);
      await records.logRun({ runId, workflowId, activityId: failingId, activityVersion: 1, triggerType: 'manual' });
      const error = {
        message: 'task 0 (noop) failed: boom',
        task_index: 0,
        task_workflow_id: taskWorkflowId(runId, 'noop', 0),
      };
      // The first attempt: the status is written, then the worker is SIGKILLed before it announces.
      await runs.setRunStatus(runId, 'failed', error);
      expect(await storedEvent(`run-failed:${runId}`)).toBeUndefined();

      // Temporal retries the activity (and a replay or reset repeats it once more).
      await records.setRunStatus({ runId, status: 'failed', error });
      await records.setRunStatus({ runId, status: 'failed', error });

      const rows = await stack.sql.query(
        "SELECT event_id, credential, hops FROM events WHERE subject = $1 AND event_type = 'activity_core.run.failed'",
        [runId],
      );
      expect(rows.rows).toEqual([{ event_id: `run-failed:${runId}`, credential: `system:${runId}`, hops: 1 }]);
      const alertWorkflow = eventRunWorkflowId(alerterId, runOutcomeEventId(runId, 'failed'));
      await closed(alertWorkflow);
      const alertRuns = await stack.sql.query('SELECT status FROM activity_runs WHERE activity_id = $1', [alerterId]);
      expect(alertRuns.rows).toEqual([{ status: 'succeeded' }]);
      expect(target.requests.filter((request) => request.url === '/alert-crash')).toHaveLength(1);
    } finally {
      await database.close();
    }
  });

  test('a run terminated in Temporal is announced as cancelled by the run outcome recovery that records its end', async () => {
    const slowId = await register({
      name: 'hooks-terminated',
      triggers: [{ type: 'event', event_type: 'hooks.terminate' }],
      tasks: [{ type: 'delay', config: { duration: '1h' } }],
    });
    await post('hooks-terminate-1', 'hooks.terminate');
    const workflowId = eventRunWorkflowId(slowId, 'hooks-terminate-1');
    const runId = runIdFor(workflowId);
    await expect
      .poll(
        async () =>
          (await stack.sql.query('SELECT status FROM activity_runs WHERE run_id = $1', [runId])).rows[0]?.status,
        { timeout: 30_000, interval: 250 },
      )
      .toBe('running');
    // Terminate skips the workflow's own bookkeeping: the row stays `running` until the run outcome recovery reads the outcome.
    await stack.client.workflow.getHandle(workflowId).terminate('test: terminated by an operator');
    const { database, runs, announcer } = workerWiring();
    try {
      const recovery = createRunOutcomeRecovery({
        client: stack.client,
        runs,
        logger: silentLogger,
        announcer,
        minAgeMs: 0,
        recheckAfterMs: 60_000,
      });
      const settled = await recovery.recoverOnce();
      expect(settled).toEqual(expect.arrayContaining([expect.objectContaining({ runId, status: 'cancelled' })]));
    } finally {
      await database.close();
    }
    const event = await storedEvent(`run-cancelled:${runId}`);
    expect(event).toMatchObject({
      envelope: { event_type: 'activity_core.run.cancelled', source: 'activity-core' },
      credential: `system:${runId}`,
    });
    expect(event.envelope.data).toMatchObject({
      run_id: runId,
      status: 'cancelled',
      error: { type: 'terminated' },
      failed_task: null,
    });
  });

  test('the OpenAPI document publishes the data of the system events', async () => {
    const document = (await inject({ method: 'GET', url: '/openapi.json' })).json();
    const schema = document.components.schemas.RunOutcomeEventData;
    expect(schema).toMatchObject({ type: 'object', properties: { status: { enum: ['failed', 'cancelled'] } } });
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['run_id', 'activity_id', 'failed_task', 'error', 'started_at', 'finished_at']),
    );
    expect(document.components.schemas.StoredEvent.properties.id_origin.enum).toContain('system');
  });

  test('clients cannot post a system event: the activity-core source and the run-outcome ids are refused, and no definition may emit the type', async () => {
    const runId = runIdFor('activity-x:forged');
    const forgedId = await inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: `run-failed:${runId}`,
        event_type: 'hooks.forged',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    expect(forgedId.statusCode, forgedId.body).toBe(400);
    expect(forgedId.json().errors).toEqual([
      expect.objectContaining({ path: 'event_id', message: expect.stringContaining("run's end") }),
    ]);

    const forgedKey = await inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'idempotency-key': `run-cancelled:${runId}` },
      payload: { event_type: 'hooks.forged', source: 'tests', occurred_at: '2026-03-01T09:00:00Z', data: {} },
    });
    expect(forgedKey.statusCode, forgedKey.body).toBe(400);

    const forgedSource = await inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_type: 'activity_core.run.failed',
        source: 'activity-core',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    expect(forgedSource.statusCode, forgedSource.body).toBe(400);
    expect(forgedSource.json().errors).toEqual([expect.objectContaining({ path: 'source' })]);

    const forgingDefinition = await inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'hooks-forger',
        triggers: [{ type: 'event', event_type: 'hooks.forge' }],
        tasks: [{ type: 'emit_event', config: { event_type: 'activity_core.run.failed' } }],
      },
    });
    expect(forgingDefinition.statusCode, forgingDefinition.body).toBe(400);
    expect(forgingDefinition.json().errors).toEqual([expect.objectContaining({ path: 'tasks[0].config.event_type' })]);
  });
});

/** The value of one sample in a Prometheus text exposition, or undefined when the sample is absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',').filter((part) => part.length > 0);
    if (wanted.every((label) => present.includes(label)) && present.length === wanted.length) return Number(match[3]);
  }
  return undefined;
}

describe('run outcome metrics', () => {
  test('runs_finished_total and the duration histogram count every finished run by activity and status, from any API process', async () => {
    const meteredId = await register({
      name: 'hooks-metered',
      triggers: [{ type: 'event', event_type: 'hooks.meter' }],
      tasks: [{ type: 'noop' }],
    });
    const brokenId = await register({
      name: 'hooks-metered-broken',
      triggers: [{ type: 'event', event_type: 'hooks.meter' }],
      tasks: [failingHttp('/fail/metered')],
    });
    for (const id of ['meter-1', 'meter-2', 'meter-3']) await post(id, 'hooks.meter');
    for (const id of ['meter-1', 'meter-2', 'meter-3']) {
      await closed(eventRunWorkflowId(meteredId, id));
      await closed(eventRunWorkflowId(brokenId, id));
    }
    const expected = await stack.sql.query(
      `SELECT activity_id::text AS activity, status, count(*)::int AS n, sum(extract(epoch FROM finished_at - started_at))::float8 AS total
         FROM activity_runs WHERE activity_id = ANY($1) GROUP BY 1, 2`,
      [[meteredId, brokenId]],
    );
    expect(
      expected.rows
        .map((row: { activity: string; status: string; n: number }) => [row.activity, row.status, row.n])
        .sort(),
    ).toEqual(
      [
        [brokenId, 'failed', 3],
        [meteredId, 'succeeded', 3],
      ].sort(),
    );

    // The serving process and a second one started afterwards (a restart, or another replica) report the same numbers.
    const second = await createApiApp(stack.config, { logger: false });
    try {
      for (const api of [stack.api, second]) {
        const text = (await api.server.inject({ method: 'GET', url: '/metrics' })).body;
        for (const row of expected.rows as Array<{ activity: string; status: string; n: number; total: number }>) {
          const labels = { activity: row.activity, status: row.status };
          expect(sample(text, 'activity_core_runs_finished_total', labels)).toBe(row.n);
          expect(sample(text, 'activity_core_run_duration_seconds_count', labels)).toBe(row.n);
          expect(sample(text, 'activity_core_run_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(row.n);
          expect(sample(text, 'activity_core_run_duration_seconds_bucket', { ...labels, le: '86400' })).toBe(row.n);
          expect(sample(text, 'activity_core_run_duration_seconds_sum', labels)).toBeCloseTo(row.total, 6);
        }
        expect(
          sample(text, 'activity_core_runs_finished_total', { activity: meteredId, status: 'failed' }),
        ).toBeUndefined();
        expect(text).toContain('# TYPE activity_core_run_duration_seconds histogram');
        expect(text).toContain('# TYPE activity_core_runs_finished_total counter');
      }
    } finally {
      await second.close();
    }
  });
});
