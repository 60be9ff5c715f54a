/**
 * ScheduleTickWorkflow on Temporal's time-skipping test server with a stub
 * `processScheduleTick`: what the workflow hands the activity (the nominal
 * time from `TemporalScheduledStartTime`, or none for a tick a resume
 * started), that it returns the activity's decision as it is, and that a tick
 * whose activity cannot decide yet is retried rather than lost. The decisions
 * themselves are the schedule manager's (its own tests and test/schedule*.int.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  startWorkflowTestEnvironment,
  stubEffects,
  type WorkflowTestEnvironment,
} from '../../test/workflow-test-environment';
import type { ProcessScheduleTickInput, ProcessScheduleTickResult, ScheduleTickInput } from '../effects';
import { SCHEDULE_TICK_WORKFLOW } from '../names';

const TemporalScheduledStartTime = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/** What the stub answers, by activity id; a number n means "fail n times first, then answer processed". */
const answers = new Map<string, ProcessScheduleTickResult | { failFirst: number }>();
const requests: ProcessScheduleTickInput[] = [];

const effects = stubEffects({
  async processScheduleTick(input) {
    requests.push(input);
    const answer = answers.get(input.activityId);
    if (answer === undefined) throw ApplicationFailure.nonRetryable(`no answer staged for ${input.activityId}`);
    if ('failFirst' in answer) {
      const attempts = requests.filter((r) => r.activityId === input.activityId).length;
      if (attempts <= answer.failFirst) throw new Error('Postgres is unreachable');
      return { status: 'processed', runs: [], skipped: {} };
    }
    return answer;
  },
});

let testEnv: WorkflowTestEnvironment;

beforeAll(async () => {
  testEnv = await startWorkflowTestEnvironment(effects);
  // A real server sets this system attribute on workflows a Schedule starts (the test server has no
  // Schedules): registered here so a test can start a tick the way a Schedule does.
  await testEnv.env.connection.operatorService.addSearchAttributes({
    namespace: testEnv.env.namespace ?? 'default',
    searchAttributes: {
      [TemporalScheduledStartTime.name]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
    },
  });
});

afterAll(async () => {
  await testEnv?.close();
});

function tickInput(): ScheduleTickInput {
  return { activityId: randomUUID(), triggerIndex: 1, definitionVersion: 3, revision: 'r1' };
}

async function runTick(
  input: ScheduleTickInput,
  options: { nominal?: Date; workflowId?: string } = {},
): Promise<ProcessScheduleTickResult> {
  return await testEnv.env.client.workflow.execute(SCHEDULE_TICK_WORKFLOW, {
    workflowId: options.workflowId ?? `schedule-tick-${input.activityId}`,
    taskQueue: testEnv.taskQueue,
    args: [input],
    // What a Temporal Schedule sets on every workflow it starts.
    ...(options.nominal === undefined
      ? {}
      : { typedSearchAttributes: [{ key: TemporalScheduledStartTime, value: options.nominal }] }),
  });
}

describe('ScheduleTickWorkflow', () => {
  test('a tick started by its schedule hands the activity its nominal time, trigger and workflow id, and returns the decision', async () => {
    const input = tickInput();
    const decision: ProcessScheduleTickResult = {
      status: 'processed',
      runs: [{ workflowId: `activity-${input.activityId}:2026-03-01T09:00:00+00:00`, status: 'started' }],
      skipped: { misfire_skip: 2 },
    };
    answers.set(input.activityId, decision);

    const result = await runTick(input, {
      nominal: new Date('2026-03-01T09:00:00Z'),
      workflowId: `schedule-tick-${input.activityId}-2026-03-01T09:00:00Z`,
    });

    expect(result).toEqual(decision);
    expect(requests.filter((r) => r.activityId === input.activityId)).toEqual([
      {
        activityId: input.activityId,
        triggerIndex: 1,
        nominalTime: '2026-03-01T09:00:00.000Z',
        tickWorkflowId: `schedule-tick-${input.activityId}-2026-03-01T09:00:00Z`,
      },
    ]);
  });

  test('a tick started without a nominal time (a resume) asks for everything due up to now', async () => {
    const input = tickInput();
    answers.set(input.activityId, { status: 'processed', runs: [], skipped: {} });

    await runTick(input);

    const [request] = requests.filter((r) => r.activityId === input.activityId);
    expect(request).toEqual({
      activityId: input.activityId,
      triggerIndex: 1,
      tickWorkflowId: `schedule-tick-${input.activityId}`,
    });
    expect(request).not.toHaveProperty('nominalTime');
  });

  test.each(['paused', 'orphaned'] as const)(
    'a tick the activity answers %s returns that answer unchanged',
    async (status) => {
      const input = tickInput();
      answers.set(input.activityId, { status, runs: [], skipped: { [status]: 1 } });

      await expect(runTick(input, { nominal: new Date('2026-03-01T10:00:00Z') })).resolves.toEqual({
        status,
        runs: [],
        skipped: { [status]: 1 },
      });
      expect(requests.filter((r) => r.activityId === input.activityId)).toHaveLength(1);
    },
  );

  test('a tick whose activity cannot decide yet (Postgres down) is retried until it can, not lost', async () => {
    const input = tickInput();
    answers.set(input.activityId, { failFirst: 3 });

    await expect(runTick(input, { nominal: new Date('2026-03-01T11:00:00Z') })).resolves.toEqual({
      status: 'processed',
      runs: [],
      skipped: {},
    });
    expect(requests.filter((r) => r.activityId === input.activityId)).toHaveLength(4);
  });
});
