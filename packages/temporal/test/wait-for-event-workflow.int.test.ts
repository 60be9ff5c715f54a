/**
 * The `wait_for_event` path of the task workflow on Temporal's time-skipping
 * test server, with stub effects: what the workflow returns for a signal,
 * a timeout, and a timeout that finds the wait already matched in Postgres
 * (the row decides). test/wait-for-event.int.test.ts proves the same against
 * the real stack.
 */
import { randomUUID } from 'node:crypto';
import {
  eventRunWorkflowId,
  type RunContext,
  runIdFor,
  taskWorkflowId,
  type TaskWorkflowInput,
} from '@activity-core/contracts';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Effects, EventWaitAnswer, RegisterEventWaitInput } from '../src/effects';
import { EVENT_WAIT_MATCHED_SIGNAL, TASK_WORKFLOW } from '../src/names';
import {
  startWorkflowTestEnvironment,
  stubEffects,
  until,
  type WorkflowTestEnvironment,
} from './workflow-test-environment';

const PAID = {
  event_id: 'evt-paid-42',
  event_type: 'order.paid',
  source: 'shop',
  occurred_at: '2026-03-01T09:05:00Z',
  data: { order_id: '42', amount: 1999 },
};

const registered: RegisterEventWaitInput[] = [];
const closed: Array<{ waitId: string; status: string }> = [];
/** What the stubs answer, by wait id (default: registered and waiting; closed as asked). */
const registerAnswers = new Map<string, EventWaitAnswer>();
const closeAnswers = new Map<string, EventWaitAnswer>();
/** Registrations held until the test lets them finish, by wait id. */
const heldRegistrations = new Map<string, Promise<void>>();

const effects: Effects = stubEffects({
  async recordTask() {},
  async registerEventWait(input) {
    registered.push(input);
    await heldRegistrations.get(input.waitId);
    return registerAnswers.get(input.waitId) ?? { status: 'waiting' };
  },
  async closeEventWait(input) {
    closed.push(input);
    return closeAnswers.get(input.waitId) ?? { status: input.status };
  },
});

let testEnv: WorkflowTestEnvironment;

beforeAll(async () => {
  testEnv = await startWorkflowTestEnvironment(effects);
});
afterAll(async () => {
  await testEnv?.close();
});

function waitTask(timeout: string): { waitId: string; input: TaskWorkflowInput } {
  const runWorkflowId = eventRunWorkflowId(randomUUID(), 'evt-created-42');
  const runId = runIdFor(runWorkflowId);
  const context: RunContext = {
    run: { run_id: runId, workflow_id: runWorkflowId, trigger_type: 'event' },
    activity: { id: randomUUID(), name: 'ship-when-paid', version: 1 },
    event: { ...PAID, event_id: 'evt-created-42', event_type: 'order.created', data: { order_id: '42' } },
    tasks: [],
  };
  return {
    waitId: taskWorkflowId(runId, 'wait_for_event', 0),
    input: {
      runId,
      runWorkflowId,
      index: 0,
      task: {
        type: 'wait_for_event',
        config: { event_type: 'order.paid', match: 'event.data.order_id == trigger.event.data.order_id', timeout },
        continue_on_failure: false,
      },
      context,
    },
  };
}

const start = (waitId: string, input: TaskWorkflowInput) =>
  testEnv.env.client.workflow.start(TASK_WORKFLOW, { workflowId: waitId, taskQueue: testEnv.taskQueue, args: [input] });

describe('a wait_for_event task workflow', () => {
  test('registers its wait with the trigger event and returns the envelope the signal brings', async () => {
    const { waitId, input } = waitTask('1d');
    const handle = await start(waitId, input);
    await until('the wait registered', () => registered.find((entry) => entry.waitId === waitId));
    await handle.signal(EVENT_WAIT_MATCHED_SIGNAL, { waitId, event: PAID });
    expect(await handle.result()).toEqual(PAID);
    expect(registered.find((entry) => entry.waitId === waitId)).toMatchObject({
      eventType: 'order.paid',
      taskIndex: 0,
      timeoutMs: 86_400_000,
      triggerEvent: { event_id: 'evt-created-42' },
    });
    expect(closed.filter((entry) => entry.waitId === waitId)).toEqual([]);
  });

  test('returns { status: timed_out } when the timeout passes, after closing the wait as timed_out', async () => {
    const { waitId, input } = waitTask('1d');
    expect(await (await start(waitId, input)).result()).toEqual({ status: 'timed_out' });
    expect(closed.filter((entry) => entry.waitId === waitId)).toEqual([{ waitId, status: 'timed_out' }]);
  });

  test('returns the event when its timeout finds the wait already matched in Postgres', async () => {
    const { waitId, input } = waitTask('1h');
    closeAnswers.set(waitId, { status: 'matched', eventId: PAID.event_id, event: PAID });
    expect(await (await start(waitId, input)).result()).toEqual(PAID);
  });

  test('does not wait when its registration finds the wait already matched (a repeated registration)', async () => {
    const { waitId, input } = waitTask('365d');
    registerAnswers.set(waitId, { status: 'matched', eventId: PAID.event_id, event: PAID });
    expect(await (await start(waitId, input)).result()).toEqual(PAID);
    expect(closed.filter((entry) => entry.waitId === waitId)).toEqual([]);
  });

  test('cancelled while registering, finishes the registration and closes the wait as cancelled', async () => {
    const { waitId, input } = waitTask('1d');
    let release = (): void => {};
    heldRegistrations.set(waitId, new Promise<void>((resolve) => (release = resolve)));
    const handle = await start(waitId, input);
    await until('the registration started', () => registered.find((entry) => entry.waitId === waitId));
    await handle.cancel();
    release();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(closed.filter((entry) => entry.waitId === waitId)).toEqual([{ waitId, status: 'cancelled' }]);
  });

  test('ignores a signal meant for another wait', async () => {
    const { waitId, input } = waitTask('2h');
    const handle = await start(waitId, input);
    await until('the wait registered', () => registered.find((entry) => entry.waitId === waitId));
    await handle.signal(EVENT_WAIT_MATCHED_SIGNAL, { waitId: 'task-other:wait_for_event:0', event: PAID });
    expect(await handle.result()).toEqual({ status: 'timed_out' });
  });
});
