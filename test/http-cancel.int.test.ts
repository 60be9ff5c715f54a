import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, httpTaskAttemptId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { recordGoldenHistory } from './golden-histories';
import { startStack, waitFor, type TestStack } from './harness';
import { disable, everySeconds, registerActivity } from './schedule-helpers';

interface HeldRequest {
  /** The `run` query parameter: which run made the call. */
  run: string;
  headers: Record<string, string | string[] | undefined>;
  arrivedAt: number;
  /** When the target saw the connection close without having answered: the caller aborted. */
  abortedAt?: number;
}

/**
 * An http target that never answers: it holds every request until the caller
 * gives up, notes when each one's connection closes, and counts how many
 * calls were open at once.
 */
async function startHoldingTarget() {
  const requests: HeldRequest[] = [];
  let open = 0;
  let maxOpen = 0;
  const server: Server = createServer((req, res) => {
    const held: HeldRequest = {
      run: new URL(req.url ?? '/', 'http://x').searchParams.get('run') ?? '',
      headers: req.headers,
      arrivedAt: Date.now(),
    };
    requests.push(held);
    open += 1;
    maxOpen = Math.max(maxOpen, open);
    res.on('close', () => {
      open -= 1;
      held.abortedAt = Date.now();
    });
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    of: (runId: string) => requests.filter((request) => request.run === runId),
    open: () => open,
    maxOpen: () => maxOpen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const heldTask = (url: string) => ({
  type: 'http',
  config: { url: `${url}/held?run={{run.run_id}}`, timeout: '5m' },
  retry: { max_attempts: 3, initial_interval: '100ms' },
});

async function runRow(stack: TestStack, runId: string): Promise<{ status: string } | undefined> {
  const result = await stack.sql.query('SELECT status FROM activity_runs WHERE run_id = $1', [runId]);
  return result.rows[0] as { status: string } | undefined;
}

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

describe('cancelling a run whose http request is in flight', () => {
  test('the run records cancelled only after the request was aborted, and the request is not tried again', async () => {
    const target = await startHoldingTarget();
    try {
      const activity = await registerActivity(stack, {
        name: 'http-cancel-api',
        triggers: [{ type: 'event', event_type: 'http-cancel.go' }],
        tasks: [heldTask(target.url)],
      });
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_id: 'evt_http_cancel',
          event_type: 'http-cancel.go',
          source: 'tests',
          occurred_at: '2026-03-01T09:00:00Z',
          data: {},
        },
      });
      const workflowId = eventRunWorkflowId(activity.id, 'evt_http_cancel');
      const runId = runIdFor(workflowId);
      await waitFor('the request to be held by the target', async () =>
        target.of(runId).length > 0 ? true : undefined,
      );
      const cancel = await stack.api.server.inject({ method: 'POST', url: `/v1/runs/${runId}/cancel` });
      expect(cancel.statusCode, cancel.body).toBe(202);
      expect(cancel.json()).toEqual({ run_id: runId, cancel_requested: true });

      // Whenever the run is seen cancelled, the target has already seen the request abandoned.
      const abortedWhenCancelled = await waitFor(
        'the run to record cancelled',
        async () => {
          const abortedAt = target.of(runId)[0]?.abortedAt;
          return (await runRow(stack, runId))?.status === 'cancelled' ? { abortedAt } : undefined;
        },
        60_000,
      );
      expect(
        abortedWhenCancelled.abortedAt,
        'the run recorded cancelled while its request was still open',
      ).toBeDefined();
      await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
      const tasks = await stack.sql.query('SELECT status, attempt_count FROM task_instances WHERE run_id = $1', [
        runId,
      ]);
      expect(tasks.rows).toEqual([{ status: 'cancelled', attempt_count: 1 }]);

      // One attempt, with the usual headers, and no retry after the cancellation: once the task workflow
      // (the run's only child) has closed, no attempt can follow.
      const child = (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events?.find(
        (event) => event.startChildWorkflowExecutionInitiatedEventAttributes,
      )?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
      await waitFor('the task workflow to close', async () =>
        (await stack.client.workflow.getHandle(child!).describe()).status.name !== 'RUNNING' ? true : undefined,
      );
      const requests = target.of(runId);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.headers['idempotency-key']).toBe(taskWorkflowId(runId, 'http', 0));
      expect(requests[0]!.headers['x-activity-attempt-id']).toBe(
        httpTaskAttemptId(taskWorkflowId(runId, 'http', 0), 1),
      );
      expect(target.open()).toBe(0);

      // A golden history of the task whose http attempt was cancelled and waited for (see recordGoldenHistory).
      const task = stack.client.workflow.getHandle(taskWorkflowId(runId, 'http', 0));
      await recordGoldenHistory('task-workflow-http-cancelled', await task.fetchHistory(), task.workflowId);
    } finally {
      await target.close();
    }
  }, 120_000);

  test("cancel_other: the next run calls the target only after the cancelled run's request was aborted", async () => {
    const target = await startHoldingTarget();
    const activity = await registerActivity(stack, {
      name: 'http-cancel-other',
      triggers: [{ type: 'cron', cron: everySeconds(2), overlap: 'cancel_other' }],
      tasks: [heldTask(target.url)],
    });
    const id = activity.id;
    const runsOf = async () =>
      (
        await stack.sql.query(
          'SELECT run_id, workflow_id, status, cancelled_by_run FROM activity_runs WHERE activity_id = $1 ORDER BY scheduled_for',
          [id],
        )
      ).rows as Array<{ run_id: string; workflow_id: string; status: string; cancelled_by_run: string | null }>;
    try {
      // Every poll: a run seen `cancelled` must have had its request aborted already, and no two calls are open.
      const cancelledWhileOpen = new Set<string>();
      const outcome = await waitFor(
        'the first run cancelled and a later run calling the target (or two calls open at once)',
        async () => {
          const runs = await runsOf();
          for (const run of runs) {
            if (run.status === 'cancelled' && target.of(run.run_id).some((request) => request.abortedAt === undefined))
              cancelledWhileOpen.add(run.run_id);
          }
          // The first run to call the target (fires that start together may take the slot in either order).
          const a = runs.find((run) => run.run_id === target.requests[0]?.run);
          const b = runs.find((run) => run !== a && target.of(run.run_id).length > 0);
          if (target.maxOpen() > 1 || cancelledWhileOpen.size > 0) return { runs, first: a, next: b };
          return a?.status === 'cancelled' && b !== undefined ? { runs, first: a, next: b } : undefined;
        },
        90_000,
      );
      await disable(stack, id);
      const summary = JSON.stringify(
        outcome.runs.map((run) => ({ ...run, calls: target.of(run.run_id).length })),
        null,
        1,
      );
      expect(target.maxOpen(), `two calls were open at once: ${summary}`).toBe(1);
      expect([...cancelledWhileOpen], 'a run recorded cancelled while its request was still open').toEqual([]);
      const { first, next } = outcome;
      expect(first!.cancelled_by_run).not.toBeNull();
      const [old] = target.of(first!.run_id);
      const [replacing] = target.of(next!.run_id);
      expect(old?.abortedAt).toBeDefined();
      expect(replacing!.arrivedAt).toBeGreaterThanOrEqual(old!.abortedAt!);
    } finally {
      await disable(stack, id).catch(() => undefined);
      for (const run of await runsOf()) {
        if (run.status !== 'running' && run.status !== 'waiting_for_slot') continue;
        await stack.client.workflow
          .getHandle(run.workflow_id)
          .cancel()
          .catch(() => undefined);
      }
      await target.close();
    }
  }, 180_000);
});
