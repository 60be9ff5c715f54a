import { formatLocalTime, previousFireTime } from '@activity-core/scheduling';
import { ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from './harness';
import {
  disable,
  everySeconds,
  isoOf,
  settledFires,
  registerActivity,
  sleep,
  utc,
  waitForRun,
} from './schedule-helpers';
import { cronRunWorkflowId, parseScheduledFor, temporalScheduleId } from '@activity-core/contracts/ids';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const noop = [{ type: 'noop' }];

describe('registering a cron activity', () => {
  test('creates its Temporal Schedule at once, with a readable note, and answers with the next 5 fire times in UTC and local', async () => {
    const activity = await registerActivity(stack, {
      name: 'paris-weekday-report',
      triggers: [
        { type: 'cron', cron: '0 9 * * MON-FRI', timezone: 'Europe/Paris', misfire_policy: 'catchup', max_catchup: 10 },
      ],
      dedupe_key_strategy: 'catchup',
      tasks: noop,
    });
    const [schedule] = activity.schedules as Array<{
      schedule_id: string;
      next_fire_times: Array<{ utc: string; local: string }>;
    }>;
    expect(schedule?.schedule_id).toBe(temporalScheduleId(activity.id, 0));
    const times = schedule!.next_fire_times;
    expect(times).toHaveLength(5);
    for (const time of times) {
      // 09:00 on the Paris wall clock, whatever the season; the UTC form is the same instant.
      expect(time.local).toMatch(/T09:00:00\+0[12]:00$/);
      expect(time.utc).toMatch(/^\d{4}-\d\d-\d\dT0[78]:00:00\+00:00$/);
      expect(new Date(time.utc).getTime()).toBe(new Date(time.local).getTime());
      const weekday = new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Paris', weekday: 'short' }).format(
        new Date(time.utc),
      );
      expect(['Mon', 'Tue', 'Wed', 'Thu', 'Fri']).toContain(weekday);
    }

    // Temporal computes the same times on its own: the schedule and the API agree.
    const description = await stack.client.schedule.getHandle(schedule!.schedule_id).describe();
    expect(description.info.nextActionTimes.slice(0, 5).map(utc)).toEqual(times.map((time) => time.utc));
    expect(description.state.paused).toBe(false);
    expect(description.state.note).toContain('paris-weekday-report');
    expect(description.state.note).toContain('"0 9 * * MON-FRI" Europe/Paris');
    expect(description.spec.timezone).toBe('Europe/Paris');
    expect(description.action.workflowType).toBe('ScheduleTickWorkflow');
    expect(description.action.taskQueue).toBe(stack.config.temporal.taskQueue);
    expect(description.policies.overlap).toBe('BUFFER_ONE');

    const fetched = await stack.api.server.inject({ method: 'GET', url: `/v1/activities/${activity.id}` });
    expect(fetched.json().schedules[0].next_fire_times).toEqual(times);
  });

  test('editing the trigger updates the schedule, disabling pauses it, enabling resumes it, deleting removes it', async () => {
    const body = { name: 'lifecycle', triggers: [{ type: 'cron', cron: '0 6 * * *', timezone: 'UTC' }], tasks: noop };
    const activity = await registerActivity(stack, body);
    const handle = stack.client.schedule.getHandle(temporalScheduleId(activity.id, 0));

    const put = await stack.api.server.inject({
      method: 'PUT',
      url: `/v1/activities/${activity.id}`,
      payload: { ...body, triggers: [{ type: 'cron', cron: '30 7 * * *', timezone: 'America/New_York' }] },
    });
    expect(put.statusCode, put.body).toBe(200);
    let description = await handle.describe();
    expect(description.spec.timezone).toBe('America/New_York');
    expect(description.info.nextActionTimes[0]?.toISOString()).toBe(
      put.json().schedules[0].next_fire_times[0].utc.replace('+00:00', '.000Z'),
    );
    expect(formatLocalTime(description.info.nextActionTimes[0]!, 'America/New_York')).toMatch(/T07:30:00-0[45]:00$/);

    await disable(stack, activity.id);
    description = await handle.describe();
    expect(description.state.paused).toBe(true);
    expect(description.state.note).toContain('is disabled');

    const enabled = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/enable` });
    expect(enabled.statusCode).toBe(200);
    expect((await handle.describe()).state.paused).toBe(false);

    const removed = await stack.api.server.inject({ method: 'DELETE', url: `/v1/activities/${activity.id}` });
    expect(removed.statusCode).toBe(204);
    await expect(handle.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
  });
});

describe('invalid cron definitions are 400 problems that name the field', () => {
  const cases: Array<[string, object, string]> = [
    [
      'a dedupe_key_strategy that differs from the misfire_policy',
      { triggers: [{ type: 'cron', cron: '0 9 * * *', misfire_policy: 'skip' }], dedupe_key_strategy: 'catchup' },
      'dedupe_key_strategy',
    ],
    ['an invalid cron expression', { triggers: [{ type: 'cron', cron: '0 25 * * *' }] }, 'triggers[0].cron'],
    ['a cron with the wrong number of fields', { triggers: [{ type: 'cron', cron: '* * *' }] }, 'triggers[0].cron'],
    [
      'cron syntax Temporal Schedules do not support',
      { triggers: [{ type: 'cron', cron: '0 9 L * *' }] },
      'triggers[0].cron',
    ],
    [
      'an unknown timezone',
      { triggers: [{ type: 'cron', cron: '0 9 * * *', timezone: 'Mars/Olympus_Mons' }] },
      'triggers[0].timezone',
    ],
  ];
  test.each(cases)('%s', async (_, fields, path) => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: { name: `bad-${path.replace(/\W/g, '')}`, tasks: noop, ...fields },
    });
    expect(response.statusCode, response.body).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    const problem = response.json();
    expect(problem.errors.map((error: { path: string }) => error.path)).toContain(path);
  });
});

describe('run ids of cron fires', () => {
  test('a UTC trigger fires runs whose id is activity-{id}:{nominal time}+00:00 with the window since the previous nominal time', async () => {
    const activity = await registerActivity(stack, {
      name: 'every-two-seconds',
      triggers: [{ type: 'cron', cron: everySeconds(2), misfire_grace: '10s' }],
      tasks: noop,
    });
    const run = await waitForRun(stack, activity.id, () => true);
    await disable(stack, activity.id);

    expect(run.scheduled_for).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d[02468]\+00:00$/);
    expect(run.workflow_id).toBe(cronRunWorkflowId(activity.id, parseScheduledFor(run.scheduled_for ?? '')));
    expect(run.trigger_type).toBe('cron');
    expect(run.window_end).toBe(isoOf(run.scheduled_for!));
    expect(run.window_start).toBe(new Date(new Date(run.scheduled_for!).getTime() - 2000).toISOString());

    // The Temporal UI can filter runs by their nominal time.
    const description = await stack.client.workflow.getHandle(run.workflow_id).describe();
    expect(description.typedSearchAttributes.get({ name: 'ScheduledFor', type: 'DATETIME' } as never)).toEqual(
      new Date(run.scheduled_for!),
    );

    const fires = await settledFires(stack, activity.id);
    expect(fires.find((fire) => fire.scheduled_for === run.scheduled_for)).toMatchObject({
      status: 'started',
      reason: 'on_time',
      workflow_id: run.workflow_id,
    });
  });

  test('a trigger in a DST-observing timezone gets the UTC nominal instant in its id, not the wall-clock time', async () => {
    // A fixed Paris wall-clock time a few seconds from now, as a daily 6-field cron.
    const target = new Date(Math.ceil((Date.now() + 10_000) / 1000) * 1000);
    const local = formatLocalTime(target, 'Europe/Paris'); // e.g. 2026-11-22T15:04:05+01:00
    const [hour, minute, second] = local.slice(11, 19).split(':').map(Number);
    const cron = `${second} ${minute} ${hour} * * *`;
    const activity = await registerActivity(stack, {
      name: 'paris-daily',
      triggers: [{ type: 'cron', cron, timezone: 'Europe/Paris', misfire_grace: '10s' }],
      tasks: noop,
    });

    const run = await waitForRun(stack, activity.id, () => true);
    await disable(stack, activity.id);
    expect(run.workflow_id).toBe(cronRunWorkflowId(activity.id, target));
    expect(run.scheduled_for).toBe(utc(target));
    expect(local.slice(11, 19)).not.toBe(utc(target).slice(11, 19)); // Paris is never at UTC+0
    // The window reaches back to the previous Paris fire of the same wall-clock time (a day earlier).
    expect(run.window_start).toBe(previousFireTime({ cron, timezone: 'Europe/Paris' }, target)!.toISOString());
    expect(new Date(run.window_end!).getTime() - new Date(run.window_start!).getTime()).toBeGreaterThanOrEqual(
      23 * 3600_000,
    );
  });

  test('the tick workflow Temporal names itself is not the run: exactly one run per nominal time', async () => {
    const activity = await registerActivity(stack, {
      name: 'one-per-fire',
      triggers: [{ type: 'cron', cron: everySeconds(1), misfire_grace: '10s' }],
      tasks: noop,
    });
    await waitForRun(stack, activity.id, () => true);
    await sleep(2500);
    await disable(stack, activity.id);
    await sleep(500);
    const fires = await settledFires(stack, activity.id);
    const runs = fires.filter((fire) => fire.status === 'started');
    expect(runs.length).toBeGreaterThanOrEqual(2);
    // Every nominal second from the first fire on has one decision, and each run id is unique.
    const seconds = fires.map((fire) => new Date(fire.scheduled_for).getTime() / 1000);
    expect(seconds).toEqual(seconds.map((_, index) => seconds[0]! + index));
    expect(new Set(runs.map((fire) => fire.workflow_id)).size).toBe(runs.length);
    const ticks = [];
    for await (const execution of stack.client.workflow.list({
      query: `WorkflowType = 'ScheduleTickWorkflow' AND TemporalScheduledById = 'schedule-${activity.id}-0'`,
    })) {
      ticks.push(execution.workflowId);
    }
    expect(ticks.length).toBeGreaterThan(0);
    expect(ticks.every((id) => id.startsWith(`schedule-tick-${activity.id}-0-`) && id.endsWith('Z'))).toBe(true);
  });
});

describe('the API document', () => {
  test('lists the schedule operations with their schemas', async () => {
    const response = await stack.api.server.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const paths = Object.keys(response.json().paths);
    for (const path of [
      '/v1/activities/{id}/schedules',
      '/v1/activities/{id}/schedules/pause',
      '/v1/activities/{id}/schedules/resume',
      '/v1/activities/{id}/schedules/trigger',
      '/v1/activities/{id}/schedules/backfill',
      '/v1/activities/{id}/fires',
      '/v1/activities/{id}/fires/{scheduled_for}',
      '/v1/schedules/reconcile',
    ]) {
      expect(paths).toContain(path);
    }
  });
});
