import { eventRunWorkflowId } from '@activity-core/contracts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from './harness';
import { killHard, spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';

/**
 * `concurrency.on_limit: replace` (docs/concurrency.md): a newer run cancels
 * the run holding its key's slot and takes it. With the worker SIGKILLed
 * while newer runs arrive, exactly one of them ends up running and the old
 * one is recorded as cancelled by a newer run.
 */
let stack: TestStack;
const workers: SpawnedProcess[] = [];

beforeAll(async () => {
  // The API in-process; the worker is a separate process this test can kill.
  stack = await startStack({ worker: false });
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((worker) => stopGracefully(worker.child)));
  await stack?.close();
}, 60_000);

async function post(eventId: string): Promise<void> {
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: 'sync.requested',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: { customer: 'acme' },
    },
  });
  expect(posted.statusCode, posted.body).toBe(202);
}

async function runs(): Promise<Map<string, { status: string; cancelled_by_run: string | null }>> {
  const { rows } = await stack.sql.query<{ workflow_id: string; status: string; cancelled_by_run: string | null }>(
    `SELECT workflow_id, status, cancelled_by_run FROM activity_runs`,
  );
  return new Map(rows.map((row) => [row.workflow_id, row]));
}

describe('concurrency on_limit replace', () => {
  test('newer runs cancel the run holding the slot across a worker SIGKILL: exactly one newer run ends up running, the old one is recorded cancelled by a newer run', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'customer-sync',
        triggers: [{ type: 'event', event_type: 'sync.requested' }],
        tasks: [{ type: 'delay', config: { duration: '1h' } }],
        concurrency: { limit: 1, key: 'data.customer', on_limit: 'replace' },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const activityId = created.json().id as string;
    const id = (eventId: string) => eventRunWorkflowId(activityId, eventId);

    workers.push(spawnWorkerProcess(stack.config));
    await workers[0]!.ready;
    await post('sync-0');
    await waitFor('the first run to hold the slot', async () =>
      (await runs()).get(id('sync-0'))?.status === 'running' ? true : undefined,
    );

    // A newer run arrives, and the worker dies while it is being handled; two more arrive while no worker runs.
    await post('sync-1');
    await killHard(workers[0]!.child);
    await post('sync-2');
    await post('sync-3');
    workers.push(spawnWorkerProcess(stack.config));
    await workers[1]!.ready;

    const newer = [id('sync-1'), id('sync-2'), id('sync-3')];
    const settled = await waitFor(
      'the old run cancelled and one newer run running',
      async () => {
        const all = await runs();
        const old = all.get(id('sync-0'));
        const statuses = newer.map((workflowId) => all.get(workflowId)?.status);
        const running = statuses.filter((status) => status === 'running').length;
        const ended = statuses.filter((status) => status === 'skipped' || status === 'cancelled').length;
        return old?.status === 'cancelled' && running === 1 && ended === 2 ? all : undefined;
      },
      // Alone this settles in about 15 s; in the full suite (a respawned worker on a loaded machine) it took longer than 90 s.
      180_000,
    );
    const old = settled.get(id('sync-0'))!;
    expect(newer).toContain(old.cancelled_by_run);

    // Temporal agrees: the one newer run is open, every other run of the key is closed.
    const survivor = newer.find((workflowId) => settled.get(workflowId)!.status === 'running')!;
    for (const workflowId of [id('sync-0'), ...newer]) {
      const description = await stack.client.workflow.getHandle(workflowId).describe();
      if (workflowId === survivor) expect(description.status.name, workflowId).toBe('RUNNING');
      else expect(description.status.name, workflowId).not.toBe('RUNNING');
    }
    await stack.client.workflow.getHandle(survivor).cancel();
  }, 300_000);
});
