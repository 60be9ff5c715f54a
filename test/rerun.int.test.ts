import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, rerunWorkflowId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { recordGoldenHistory } from './golden-histories';
import { startHttpTarget } from './http-target';
import {
  createTestDatabase,
  silentLogger,
  startStack,
  testConfig,
  waitFor,
  workflowBundle,
  type TestStack,
  testPool,
} from './harness';
import { killHard, spawnApiProcess, stopGracefully, type SpawnedProcess } from './worker-process';

const event = (id: string, type: string) => ({
  event_id: id,
  event_type: type,
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: {},
});

async function countExecutions(client: Client, workflowId: string): Promise<number> {
  let count = 0;
  for await (const _ of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) count++;
  return count;
}

describe('re-running runs', () => {
  let stack: TestStack;
  let target: Awaited<ReturnType<typeof startHttpTarget>>;
  const seen = new Map<string, number>();

  beforeAll(async () => {
    [stack, target] = await Promise.all([
      startStack(),
      startHttpTarget((request) => {
        const path = request.url.split('?')[0] ?? '';
        const count = (seen.get(path) ?? 0) + 1;
        seen.set(path, count);
        // `/flaky/...` fails (permanently, 400) the first time it is called, then succeeds.
        if (path.startsWith('/flaky') && count === 1) return { status: 400, body: { error: 'not yet' } };
        if (path.startsWith('/always-fails')) return { status: 400, body: { error: 'never' } };
        if (path.startsWith('/token')) return { status: 200, body: { token: `tok-${count}` } };
        return { status: 200, body: { ok: true, path } };
      }),
    ]);
  });
  afterAll(async () => {
    await stack?.close();
    await target?.close();
  });

  const api = async (method: 'GET' | 'POST', url: string, payload?: unknown, headers: Record<string, string> = {}) => {
    const response = await stack.api.server.inject({
      method,
      url,
      headers,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: response.statusCode, json: response.json(), headers: response.headers };
  };

  async function activity(name: string, eventType: string, tasks: unknown[]): Promise<string> {
    const created = await api('POST', '/v1/activities', {
      name,
      triggers: [{ type: 'event', event_type: eventType }],
      tasks,
    });
    expect(created.status).toBe(201);
    return created.json.id as string;
  }

  async function failedRun(activityId: string, eventType: string, eventId: string): Promise<string> {
    expect((await api('POST', '/v1/events', event(eventId, eventType))).status).toBe(202);
    const runId = runIdFor(eventRunWorkflowId(activityId, eventId));
    await waitFor(`run ${eventId} failed`, async () =>
      (await api('GET', `/v1/runs/${runId}`)).json.status === 'failed' ? true : undefined,
    );
    return runId;
  }

  const settled = (runId: string) =>
    waitFor(`run ${runId} ended`, async () => {
      const run = await api('GET', `/v1/runs/${runId}`);
      return run.status === 200 && run.json.status !== 'running' ? run.json : undefined;
    });

  test('a failed run re-run from the start runs every task again under rerun-<run_id>:1 and succeeds', async () => {
    const activityId = await activity('rerun-start', 'rerun.start', [
      { type: 'http', config: { url: `${target.url}/start-first` } },
      { type: 'http', config: { url: `${target.url}/flaky/start` } },
    ]);
    const original = await failedRun(activityId, 'rerun.start', 'evt_rerun_start');

    const rerun = await api(
      'POST',
      `/v1/runs/${original}/rerun`,
      { from: 'start' },
      { 'idempotency-key': 'rerun-start-1' },
    );
    expect(rerun.status).toBe(202);
    const workflowId = rerunWorkflowId(original, 1);
    expect(rerun.json).toMatchObject({
      workflow_id: workflowId,
      run_id: runIdFor(workflowId),
      rerun_of: original,
      attempt: 1,
      from: 'start',
      from_task_index: 0,
      status: 'started',
      key: 'rerun-start-1',
      key_generated: false,
    });
    const done = await settled(rerun.json.run_id);
    expect(done.status).toBe('succeeded');
    expect(done.tasks.map((task: { task_index: number; status: string }) => [task.task_index, task.status])).toEqual([
      [0, 'succeeded'],
      [1, 'succeeded'],
    ]);
    expect(seen.get('/start-first')).toBe(2);

    // The re-run carries the trigger of the original and names it in the Temporal UI.
    const description = await stack.client.workflow.getHandle(workflowId).describe();
    expect(description.typedSearchAttributes.get({ name: 'RerunOf', type: 'KEYWORD' } as never)).toBe(original);
    expect(description.typedSearchAttributes.get({ name: 'TriggerType', type: 'KEYWORD' } as never)).toBe('event');
  });

  test('the same Idempotency-Key twice is one re-run: the second request starts nothing', async () => {
    const activityId = await activity('rerun-key', 'rerun.key', [
      { type: 'http', config: { url: `${target.url}/flaky/key` } },
    ]);
    const original = await failedRun(activityId, 'rerun.key', 'evt_rerun_key');
    const first = await api('POST', `/v1/runs/${original}/rerun`, undefined, { 'idempotency-key': 'same-key' });
    const second = await api('POST', `/v1/runs/${original}/rerun`, undefined, { 'idempotency-key': 'same-key' });
    expect(first.json.status).toBe('started');
    expect(second.status).toBe(202);
    expect(second.json).toMatchObject({ workflow_id: first.json.workflow_id, attempt: 1, status: 'duplicate' });
    await settled(first.json.run_id);
    expect(await countExecutions(stack.client, first.json.workflow_id)).toBe(1);
    const rows = await stack.sql.query('SELECT attempt FROM run_reruns WHERE rerun_of = $1', [original]);
    expect(rows.rows).toEqual([{ attempt: 1 }]);

    // Without a key every request is a new attempt: rerun-<run_id>:2.
    const third = await api('POST', `/v1/runs/${original}/rerun`);
    expect(third.json).toMatchObject({
      workflow_id: rerunWorkflowId(original, 2),
      attempt: 2,
      status: 'started',
      key_generated: true,
    });
    await settled(third.json.run_id);

    // GET shows the chain, from the original and from a re-run.
    const fromOriginal = await api('GET', `/v1/runs/${original}`);
    expect(fromOriginal.json).toMatchObject({ rerun_of: null, rerun_attempt: null });
    expect(
      fromOriginal.json.reruns.map((link: { attempt: number; workflow_id: string; status: string }) => [
        link.attempt,
        link.workflow_id,
        link.status,
      ]),
    ).toEqual([
      [1, rerunWorkflowId(original, 1), 'succeeded'],
      [2, rerunWorkflowId(original, 2), 'succeeded'],
    ]);
    const fromRerun = await api('GET', `/v1/runs/${third.json.run_id}`);
    expect(fromRerun.json).toMatchObject({ rerun_of: original, rerun_attempt: 2 });
    expect(fromRerun.json.reruns).toHaveLength(2);
  });

  test('a re-run from the failed task skips the tasks that succeeded and sees their recorded results', async () => {
    const activityId = await activity('rerun-resume', 'rerun.resume', [
      { type: 'http', config: { url: `${target.url}/token` } },
      { type: 'http', config: { url: `${target.url}/flaky/resume/{{tasks.0.result.body.token}}` } },
    ]);
    const original = await failedRun(activityId, 'rerun.resume', 'evt_rerun_resume');
    expect(seen.get('/token')).toBe(1);

    const rerun = await api('POST', `/v1/runs/${original}/rerun`, { from: 'failed_task' });
    expect(rerun.status).toBe(202);
    expect(rerun.json).toMatchObject({ from: 'failed_task', from_task_index: 1, attempt: 1 });
    const done = await settled(rerun.json.run_id);
    expect(done.status).toBe('succeeded');
    // Task 0 was not called again; task 1 saw its recorded result (tok-1) in its URL.
    expect(seen.get('/token')).toBe(1);
    expect(
      target.requests.filter((request) => request.url.startsWith('/flaky/resume/')).map((request) => request.url),
    ).toEqual(['/flaky/resume/tok-1', '/flaky/resume/tok-1']);
    expect(done.tasks.map((task: { task_index: number }) => task.task_index)).toEqual([1]);
    expect(await countExecutions(stack.client, taskWorkflowId(rerun.json.run_id, 'http', 0))).toBe(0);
    // A golden history of the resumed shape (see recordGoldenHistory), replayed by test/history-replay.int.test.ts.
    const handle = stack.client.workflow.getHandle(rerun.json.workflow_id);
    await recordGoldenHistory('run-activity-workflow-resumed-rerun', await handle.fetchHistory(), handle.workflowId);
  });

  test('a run that is still running cannot be re-run (409), and unknown runs are 404', async () => {
    const activityId = await activity('rerun-busy', 'rerun.busy', [{ type: 'delay', config: { duration: '10m' } }]);
    expect((await api('POST', '/v1/events', event('evt_rerun_busy', 'rerun.busy'))).status).toBe(202);
    const runId = runIdFor(eventRunWorkflowId(activityId, 'evt_rerun_busy'));
    await waitFor('busy run recorded', async () =>
      (await api('GET', `/v1/runs/${runId}`)).status === 200 ? true : undefined,
    );
    const refused = await api('POST', `/v1/runs/${runId}/rerun`);
    expect(refused.status).toBe(409);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.json.detail).toContain('still running');
    await api('POST', `/v1/runs/${runId}/cancel`);
    expect((await api('POST', `/v1/runs/${runIdFor('nope')}/rerun`)).status).toBe(404);
  });

  test('a bulk re-run counts with dry_run, then re-runs each selected run once and records its progress', async () => {
    const activityId = await activity('rerun-bulk', 'rerun.bulk', [
      { type: 'http', config: { url: `${target.url}/flaky/bulk-{{event.event_id}}` } },
    ]);
    const since = new Date(Date.now() - 60_000).toISOString();
    const originals = [];
    for (const n of [1, 2, 3]) originals.push(await failedRun(activityId, 'rerun.bulk', `evt_bulk_${n}`));
    const filter = { activity_id: activityId, from: since, to: new Date(Date.now() + 60_000).toISOString() };

    const dry = await api('POST', '/v1/runs/rerun', { filter, dry_run: true });
    expect(dry.status).toBe(200);
    expect(dry.json).toEqual({ dry_run: true, total: 3 });
    expect((await stack.sql.query('SELECT count(*)::int AS n FROM bulk_reruns')).rows[0].n).toBe(0);

    const accepted = await api('POST', '/v1/runs/rerun', { filter }, { 'idempotency-key': 'bulk-1' });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.location).toBe(`/v1/runs/rerun/${accepted.json.id}`);
    expect(accepted.json).toMatchObject({ total: 3, filter: { activity_id: activityId, status: 'failed' } });
    const again = await api('POST', '/v1/runs/rerun', { filter }, { 'idempotency-key': 'bulk-1' });
    expect(again.json.id).toBe(accepted.json.id);

    const done = await waitFor('bulk re-run completed', async () => {
      const progress = await api('GET', `/v1/runs/rerun/${accepted.json.id}`);
      return progress.json.status === 'completed' ? progress.json : undefined;
    });
    expect(done).toMatchObject({ total: 3, processed: 3, started: 3, skipped: 0 });
    for (const original of originals) {
      const rows = await stack.sql.query('SELECT workflow_id, bulk_rerun_id FROM run_reruns WHERE rerun_of = $1', [
        original,
      ]);
      expect(rows.rows).toEqual([{ workflow_id: rerunWorkflowId(original, 1), bulk_rerun_id: accepted.json.id }]);
      expect((await settled(runIdFor(rerunWorkflowId(original, 1)))).status).toBe('succeeded');
    }

    // A second bulk re-run over the same runs skips them: each has a succeeded re-run.
    const second = await api('POST', '/v1/runs/rerun', { filter });
    const secondDone = await waitFor('second bulk re-run completed', async () => {
      const progress = await api('GET', `/v1/runs/rerun/${second.json.id}`);
      return progress.json.status === 'completed' ? progress.json : undefined;
    });
    expect(secondDone).toMatchObject({ total: 3, started: 0, skipped: 3, skipped_reasons: { rerun_active: 3 } });
  });

  test('a bulk filter is bounded: a range over 31 days or running runs are refused naming the field', async () => {
    const tooLong = await api('POST', '/v1/runs/rerun', {
      filter: { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z' },
      dry_run: true,
    });
    expect(tooLong.status).toBe(400);
    expect(JSON.stringify(tooLong.json)).toContain('filter.to');
    const running = await api('POST', '/v1/runs/rerun', {
      filter: { status: 'running', from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' },
    });
    expect(running.status).toBe(400);
    expect(JSON.stringify(running.json)).toContain('status');
  });

  test('a backfill with rerun_failed re-runs a failed fire time as a re-run of its run, not as a new cron run', async () => {
    const created = await api('POST', '/v1/activities', {
      name: 'rerun-backfill',
      triggers: [{ type: 'cron', cron: '0 0 * * *' }],
      tasks: [{ type: 'http', config: { url: `${target.url}/flaky/backfill-{{run.scheduled_for}}` } }],
    });
    expect(created.status).toBe(201);
    const activityId = created.json.id as string;
    const day = new Date(Date.now() - 86_400_000);
    day.setUTCHours(0, 0, 0, 0);
    const range = { start: day.toISOString(), end: day.toISOString() };
    const first = await api('POST', `/v1/activities/${activityId}/schedules/backfill`, range);
    expect(first.status).toBe(200);
    expect(first.json.started).toBe(1);
    const original = first.json.fires[0].run_id as string;
    expect((await settled(original)).status).toBe('failed');

    const plain = await api('POST', `/v1/activities/${activityId}/schedules/backfill`, range);
    expect(plain.json).toMatchObject({ started: 0, duplicate: 1 });
    expect(plain.json.reruns).toBeUndefined();

    const rerun = await api('POST', `/v1/activities/${activityId}/schedules/backfill`, {
      ...range,
      rerun_failed: true,
    });
    expect(rerun.status).toBe(200);
    expect(rerun.json).toMatchObject({ started: 0, duplicate: 1 });
    expect(rerun.json.reruns).toEqual([
      expect.objectContaining({
        rerun_of: original,
        workflow_id: rerunWorkflowId(original, 1),
        run_id: runIdFor(rerunWorkflowId(original, 1)),
        status: 'started',
      }),
    ]);
    const done = await settled(rerun.json.reruns[0].run_id);
    expect(done).toMatchObject({ status: 'succeeded', trigger_type: 'backfill', rerun_of: original });

    // Once its re-run has succeeded, the fire time is left alone.
    const afterwards = await api('POST', `/v1/activities/${activityId}/schedules/backfill`, {
      ...range,
      rerun_failed: true,
    });
    expect(afterwards.json.reruns).toEqual([expect.objectContaining({ rerun_of: original, status: 'skipped' })]);
  });
});

describe('a bulk re-run when the API that carries it out is killed', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let worker: WorkerApp;
  let api: ApiApp;
  let client: Client;
  let connection: Connection;
  let sql: pg.Pool;
  let target: Awaited<ReturnType<typeof startHttpTarget>>;
  let blackHole: Server;
  const spawned: SpawnedProcess[] = [];
  /** The target fails every request until the originals have failed; the re-runs then succeed. */
  let failing = true;

  beforeAll(async () => {
    database = await createTestDatabase();
    target = await startHttpTarget(() => (failing ? { status: 400 } : { status: 200, body: {} }));
    blackHole = createServer((socket) => socket.on('error', () => undefined));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const process of spawned) await killHard(process.child);
    await api?.close();
    await worker?.close();
    await connection?.close();
    await sql?.end();
    await database?.drop();
    await target?.close();
    blackHole?.close();
  });

  test('the restarted API resumes it from its record and starts every re-run exactly once', async () => {
    const config = testConfig(database.url);
    worker = await createWorkerApp(config, { logger: silentLogger, workflowBundle: await workflowBundle() });
    void worker.run();
    connection = await Connection.connect({ address: config.temporal.address });
    client = new Client({ connection, namespace: config.temporal.namespace });
    sql = testPool(database.url, 2);

    // Failed runs to re-run, made through an API that carries out no bulk re-runs itself.
    api = await createApiApp(config, { logger: false, dispatcherIntervalMs: 200, bulkReruns: false });
    const inject = async (method: 'GET' | 'POST', url: string, payload?: object) => {
      const response = await api.server.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
      return { status: response.statusCode, json: response.json() };
    };
    const created = await inject('POST', '/v1/activities', {
      name: 'bulk-crash',
      triggers: [{ type: 'event', event_type: 'bulk.crash' }],
      tasks: [{ type: 'http', config: { url: `${target.url}/fail` } }],
    });
    const activityId = created.json.id as string;
    const since = new Date(Date.now() - 60_000).toISOString();
    const originals: string[] = [];
    for (let n = 0; n < 6; n++) {
      await inject('POST', '/v1/events', event(`evt_crash_${n}`, 'bulk.crash'));
      originals.push(runIdFor(eventRunWorkflowId(activityId, `evt_crash_${n}`)));
    }
    await waitFor('six failed runs', async () => {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1 AND status = 'failed'`,
        [activityId],
      );
      return rows[0].n === 6 ? true : undefined;
    });
    failing = false;

    // API process A cannot reach Temporal: it accepts the bulk re-run and allocates re-runs, but cannot start them.
    const address = blackHole.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    const portA = 20_000 + Math.floor(Math.random() * 20_000);
    const first = spawnApiProcess(config, portA, { TEMPORAL_ADDRESS: `127.0.0.1:${address.port}` });
    spawned.push(first);
    await first.ready;
    const accepted = await fetch(`http://127.0.0.1:${portA}/v1/runs/rerun`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'crash-bulk' },
      body: JSON.stringify({
        filter: { activity_id: activityId, from: since, to: new Date(Date.now() + 60_000).toISOString() },
      }),
    });
    expect(accepted.status).toBe(202);
    const bulk = (await accepted.json()) as { id: string; total: number };
    expect(bulk.total).toBe(6);
    await waitFor('process A allocated re-runs', async () => {
      const { rows } = await sql.query('SELECT count(*)::int AS n FROM run_reruns WHERE bulk_rerun_id = $1', [bulk.id]);
      return rows[0].n > 0 ? true : undefined;
    });
    await killHard(first.child);
    const progressAtCrash = await sql.query('SELECT status, processed FROM bulk_reruns WHERE id = $1', [bulk.id]);
    expect(progressAtCrash.rows[0]).toMatchObject({ status: 'running' });

    // API process B (restarted, reaching Temporal) takes over once A's lease lapses, and finishes.
    const portB = portA + 1;
    const second = spawnApiProcess(config, portB);
    spawned.push(second);
    await second.ready;
    const done = await waitFor(
      'the bulk re-run completed after the restart',
      async () => {
        const response = await fetch(`http://127.0.0.1:${portB}/v1/runs/rerun/${bulk.id}`);
        const body = (await response.json()) as { status: string };
        return body.status === 'completed' ? body : undefined;
      },
      90_000,
    );
    expect(done).toMatchObject({ total: 6, processed: 6, started: 6, skipped: 0 });

    for (const original of originals) {
      const { rows } = await sql.query('SELECT attempt FROM run_reruns WHERE rerun_of = $1', [original]);
      expect(rows).toEqual([{ attempt: 1 }]);
      const workflowId = rerunWorkflowId(original, 1);
      await waitFor(`re-run of ${original} succeeded`, async () => {
        const run = await sql.query('SELECT status FROM activity_runs WHERE workflow_id = $1', [workflowId]);
        return run.rows[0]?.status === 'succeeded' ? true : undefined;
      });
      expect(await countExecutions(client, workflowId)).toBe(1);
    }
    await stopGracefully(second.child);
  }, 180_000);
});
