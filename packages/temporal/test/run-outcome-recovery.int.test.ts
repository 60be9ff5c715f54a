import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { createDatabase, createRunsRepository, type Database } from '@activity-core/db';
import { createRunOutcomeRecovery } from '@activity-core/temporal/client';
import { silentLogger, startStack, type TestStack } from '../../../test/harness';

let stack: TestStack;
let database: Database;

beforeAll(async () => {
  stack = await startStack();
  database = createDatabase({ url: stack.config.databaseUrl, max: 2 });
});
afterAll(async () => {
  await database?.close();
  await stack?.close();
});

function recovery() {
  return createRunOutcomeRecovery({
    client: stack.client,
    runs: createRunsRepository(database.db),
    logger: silentLogger,
    minAgeMs: 0,
    recheckAfterMs: 60_000,
  });
}

async function fire(name: string, extra: object): Promise<{ workflowId: string; runId: string }> {
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name,
      triggers: [{ type: 'event', event_type: `${name}.go` }],
      tasks: [{ type: 'delay', config: { duration: '1h' } }],
      ...extra,
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  await stack.api.server.inject({
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
  const workflowId = eventRunWorkflowId(created.json().id, `evt_${name}`);
  return { workflowId, runId: runIdFor(workflowId) };
}

async function run(runId: string) {
  return (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json();
}

describe('runs that cannot record their own end', () => {
  test('a run terminated in the Temporal UI is recorded as cancelled, with the reason', async () => {
    const { workflowId, runId } = await fire('terminated', {});
    await expect.poll(async () => (await run(runId)).status, { timeout: 15_000 }).toBe('running');
    await stack.client.workflow.getHandle(workflowId).terminate('operator pressed terminate');

    const settled = await recovery().recoverOnce();
    expect(settled).toContainEqual(expect.objectContaining({ runId, status: 'cancelled' }));
    expect(await run(runId)).toMatchObject({ status: 'cancelled', error: { type: 'terminated' } });
  });

  test('a run over its run_timeout is recorded as failed with timed_out, and its task as cancelled', async () => {
    const { workflowId, runId } = await fire('too-slow', { run_timeout: '8s' });
    // The run has its row and a running task before its timeout ends it.
    await expect.poll(async () => (await run(runId)).tasks?.[0]?.status, { timeout: 7_000 }).toBe('running');
    await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
    const settled = await recovery().recoverOnce();
    expect(settled).toContainEqual(expect.objectContaining({ runId, status: 'failed' }));
    expect(await run(runId)).toMatchObject({
      status: 'failed',
      error: { type: 'timed_out', message: 'the run exceeded its run_timeout' },
    });
    // The parent's close asked its task to cancel; the task recorded that itself.
    await expect.poll(async () => (await run(runId)).tasks[0].status, { timeout: 15_000 }).toBe('cancelled');
  });

  test('a healthy long run is left running and marked as checked, so it is not asked about again at once', async () => {
    const { runId } = await fire('healthy', {});
    await expect.poll(async () => (await run(runId)).tasks?.[0]?.status, { timeout: 15_000 }).toBe('running');
    const first = await recovery().recoverOnce();
    expect(first.find((s) => s.runId === runId)).toBeUndefined();
    const row = await stack.sql.query('SELECT status, checked_at FROM activity_runs WHERE run_id = $1', [runId]);
    expect(row.rows[0].status).toBe('running');
    expect(row.rows[0].checked_at).not.toBeNull();
    const due = await createRunsRepository(database.db).listRunningToCheck(
      new Date(Date.now() - 60_000),
      new Date(),
      100,
    );
    expect(due.map((r) => r.runId)).not.toContain(runId);
  });
});
