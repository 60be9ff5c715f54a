import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from './harness';
import {
  everySeconds,
  isoOf,
  settledFires,
  listRuns,
  registerActivity,
  utc,
  waitForRun,
  type FireView,
  type RunView,
} from './schedule-helpers';
import {
  cronRunWorkflowId,
  manualRunWorkflowId,
  parseScheduledFor,
  temporalScheduleId,
} from '@activity-core/contracts/ids';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const noop = [{ type: 'noop' }];

describe('backfill', () => {
  test('a backfill over a range that already has runs creates only the missing ones, and repeating it starts nothing', async () => {
    const activity = await registerActivity(stack, {
      name: 'backfilled',
      triggers: [{ type: 'cron', cron: everySeconds(2), misfire_grace: '10s' }],
      tasks: noop,
    });
    const created = new Date();
    // Two on-time runs exist; then stop the schedule so the range is stable.
    const first = await waitForRun(stack, activity.id, () => true);
    const second = await waitForRun(stack, activity.id, (run) => run.scheduled_for! > first.scheduled_for!);
    const paused = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/pause`,
      payload: { note: 'backfill test' },
    });
    expect(paused.statusCode).toBe(200);
    // Resume is not needed for a backfill; it is an explicit operator action.
    const existing = await listRuns(stack, activity.id);

    // From 10 s before the schedule existed to the second run: 5+ new fire times and the existing runs.
    const start = new Date(Math.floor((created.getTime() - 10_000) / 2000) * 2000);
    const end = new Date(second.scheduled_for!);
    const backfill = () =>
      stack.api.server.inject({
        method: 'POST',
        url: `/v1/activities/${activity.id}/schedules/backfill`,
        payload: { start: start.toISOString(), end: end.toISOString() },
      });
    const response = await backfill();
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    const expected: string[] = [];
    for (let at = start.getTime(); at <= end.getTime(); at += 2000) expected.push(utc(new Date(at)));
    expect(body.fires.map((fire: { scheduled_for: string }) => fire.scheduled_for)).toEqual(expected);
    const existingTimes = new Set(existing.map((run) => run.scheduled_for));
    for (const fire of body.fires) {
      expect(fire.workflow_id).toBe(cronRunWorkflowId(activity.id, parseScheduledFor(fire.scheduled_for)));
      expect(fire.status).toBe(existingTimes.has(fire.scheduled_for) ? 'duplicate' : 'started');
    }
    expect(body.duplicate).toBe(existing.filter((run) => run.scheduled_for! <= utc(end)).length);
    expect(body.started).toBe(expected.length - body.duplicate);
    expect(body.started).toBeGreaterThanOrEqual(5);

    // Exactly one run per nominal time; the backfilled ones say so and carry their window.
    const inRangeOf = (runs: RunView[]) => runs.filter((run) => expected.includes(run.scheduled_for!));
    const runs = await waitFor('every backfilled run recorded', async () => {
      const all = await listRuns(stack, activity.id);
      return inRangeOf(all).length >= expected.length ? all : undefined;
    });
    const inRange = inRangeOf(runs);
    expect(inRange.map((run) => run.scheduled_for)).toEqual(expected);
    for (const run of inRange) {
      expect(run.trigger_type).toBe(existingTimes.has(run.scheduled_for) ? 'cron' : 'backfill');
      expect(run.window_start).toBe(new Date(new Date(run.scheduled_for!).getTime() - 2000).toISOString());
      expect(run.window_end).toBe(isoOf(run.scheduled_for!));
    }

    // Safe to repeat: nothing new starts.
    const again = await backfill();
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ started: 0, duplicate: expected.length });
    expect(inRangeOf(await listRuns(stack, activity.id))).toHaveLength(inRange.length);

    // The fire log says which times ran by backfill and which were already there.
    const fires = await settledFires(stack, activity.id);
    const byTime = new Map(fires.map((fire) => [fire.scheduled_for, fire]));
    expect(byTime.get(expected[0]!)).toMatchObject({ reason: 'backfill', status: 'started' });
    expect(byTime.get(first.scheduled_for!)).toMatchObject({ reason: 'on_time', status: 'started' });
    const why = await stack.api.server.inject({
      method: 'GET',
      url: `/v1/activities/${activity.id}/fires/${expected[0]}`,
    });
    expect(why.json().explanation).toContain('by a backfill');
  });

  test('a backfill of fire times a year old starts their runs and records how late they are', async () => {
    const activity = await registerActivity(stack, {
      name: 'backfill-a-year-back',
      triggers: [{ type: 'cron', cron: '0 9 1 * *' }],
      tasks: noop,
    });
    const year = new Date().getUTCFullYear() - 1;
    const response = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/backfill`,
      payload: { start: `${year}-01-01T00:00:00Z`, end: `${year}-02-28T00:00:00Z` },
    });
    // Lateness past 24.8 days once overflowed a 32-bit column: a 500 for any backfill older than that.
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ started: 2, duplicate: 0 });
    const fires = await stack.sql.query<{ late_by_ms: string }>(
      'SELECT late_by_ms::text FROM schedule_fires WHERE activity_id = $1 ORDER BY scheduled_for',
      [activity.id],
    );
    expect(fires.rows).toHaveLength(2);
    for (const fire of fires.rows) expect(Number(fire.late_by_ms)).toBeGreaterThan(2 ** 31);
  });

  test('a backfill that reaches into the future, over too many fire times, or over times the schedule has not decided is a 400 naming the field', async () => {
    const activity = await registerActivity(stack, {
      name: 'backfill-limits',
      triggers: [{ type: 'cron', cron: everySeconds(1) }],
      tasks: noop,
    });
    await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/pause`,
      payload: {},
    });
    const future = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/backfill`,
      payload: { start: new Date(Date.now() - 5000).toISOString(), end: new Date(Date.now() + 60_000).toISOString() },
    });
    expect(future.statusCode).toBe(400);
    expect(future.json().errors[0].path).toBe('end');
    const huge = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/backfill`,
      payload: { start: new Date(Date.now() - 3600_000).toISOString(), end: new Date(Date.now() - 1000).toISOString() },
    });
    expect(huge.statusCode).toBe(400);
    expect(huge.json().detail).toContain('more than 1000 fire times');
    // Fire times after the pause are the schedule's to decide on resume (its misfire policy), not a backfill's.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const undecided = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/backfill`,
      payload: { start: new Date(Date.now() - 2500).toISOString(), end: new Date(Date.now() - 500).toISOString() },
    });
    expect(undecided.statusCode, undecided.body).toBe(400);
    expect(undecided.json().errors[0].path).toBe('end');
    expect(undecided.json().detail).toContain('not decided yet');
    expect((await listRuns(stack, activity.id)).filter((run) => run.trigger_type === 'backfill')).toEqual([]);
  });
});

describe('the same nominal time delivered twice', () => {
  test('Temporal re-delivering fire times that already ran (its own backfill of the schedule) starts no second run', async () => {
    const activity = await registerActivity(stack, {
      name: 'redelivered',
      triggers: [{ type: 'cron', cron: everySeconds(2), misfire_grace: '10s' }],
      tasks: noop,
    });
    const first = await waitForRun(stack, activity.id, () => true);
    const second = await waitForRun(stack, activity.id, (run) => run.scheduled_for! > first.scheduled_for!);
    const before = await listRuns(stack, activity.id);
    const firesBefore = (await settledFires(stack, activity.id)).filter(
      (fire) => fire.scheduled_for <= second.scheduled_for!,
    );

    const scheduleId = temporalScheduleId(activity.id, 0);
    // Count only ticks started by this backfill, for the two nominal times: the schedule keeps firing every 2 s.
    // (A strict bound one second on: the dev server's SQLite visibility compares datetimes as text, so `<=` misses equal ones.)
    const since = new Date();
    const redeliveredTicks = async () => {
      let count = 0;
      const query =
        `WorkflowType = 'ScheduleTickWorkflow' AND TemporalScheduledById = '${scheduleId}' AND ExecutionStatus = 'Completed'` +
        ` AND StartTime >= '${since.toISOString()}' AND TemporalScheduledStartTime < '${new Date(Date.parse(second.scheduled_for!) + 1000).toISOString()}'`;
      for await (const _ of stack.client.workflow.list({ query })) count += 1;
      return count;
    };
    await stack.client.schedule
      .getHandle(scheduleId)
      .backfill({ start: new Date(first.scheduled_for!), end: new Date(second.scheduled_for!), overlap: 'ALLOW_ALL' });
    // Both redelivered ticks ran to completion...
    await waitFor('the redelivered ticks to complete', async () =>
      (await redeliveredTicks()) >= 2 ? true : undefined,
    );
    const disabled = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/disable` });
    expect(disabled.statusCode).toBe(200);
    // ...and found those nominal times decided: no second run, no changed decision.
    const after = await listRuns(stack, activity.id);
    for (const at of [first.scheduled_for, second.scheduled_for]) {
      expect(after.filter((run) => run.scheduled_for === at)).toHaveLength(1);
    }
    expect(new Set(after.map((run) => run.workflow_id)).size).toBe(after.length);
    const identity = (runs: RunView[]) =>
      runs
        .filter((run) => run.scheduled_for! <= second.scheduled_for!)
        .map((run) => [run.run_id, run.workflow_id, run.trigger_type, run.window_start, run.window_end]);
    expect(identity(after)).toEqual(identity(before));
    const decisions = (fires: FireView[]) =>
      fires
        .filter((fire) => fire.scheduled_for <= second.scheduled_for!)
        .map((fire) => [fire.scheduled_for, fire.reason, fire.workflow_id, fire.window_start]);
    expect(decisions(await settledFires(stack, activity.id))).toEqual(decisions(firesBefore));
  });
});

describe('trigger now', () => {
  test('starts manual-{activity_id}:{Idempotency-Key}; the same key again is the same run', async () => {
    const activity = await registerActivity(stack, {
      name: 'manual',
      triggers: [{ type: 'cron', cron: '0 0 1 1 *' }],
      tasks: noop,
    });
    const trigger = (headers: Record<string, string> = {}) =>
      stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/schedules/trigger`, headers });

    const first = await trigger({ 'idempotency-key': 'ops-ticket-42' });
    expect(first.statusCode, first.body).toBe(202);
    expect(first.json()).toMatchObject({
      workflow_id: manualRunWorkflowId(activity.id, 'ops-ticket-42'),
      key: 'ops-ticket-42',
      key_generated: false,
      status: 'started',
    });
    await stack.client.workflow.getHandle(first.json().workflow_id).result();
    const again = await trigger({ 'idempotency-key': 'ops-ticket-42' });
    expect(again.json()).toMatchObject({
      workflow_id: first.json().workflow_id,
      run_id: first.json().run_id,
      status: 'duplicate',
    });
    // The draft standard's quoted form names the same key.
    expect((await trigger({ 'idempotency-key': '"ops-ticket-42"' })).json()).toMatchObject({
      workflow_id: first.json().workflow_id,
      status: 'duplicate',
    });

    const generated = await trigger();
    expect(generated.json()).toMatchObject({ key_generated: true, status: 'started' });
    expect(generated.json().workflow_id).toBe(manualRunWorkflowId(activity.id, generated.json().key));

    const runs = await waitFor('both manual runs recorded', async () => {
      const all = await listRuns(stack, activity.id);
      return all.length >= 2 ? all : undefined;
    });
    expect(runs.map((run) => run.trigger_type)).toEqual(['manual', 'manual']);
  });

  test('an activity without cron triggers has no schedule to pause (409), an unknown one is a 404', async () => {
    const activity = await registerActivity(stack, {
      name: 'event-only',
      triggers: [{ type: 'event', event_type: 'x.y' }],
      tasks: noop,
    });
    const pause = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/pause`,
      payload: {},
    });
    expect(pause.statusCode).toBe(409);
    const unknown = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities/00000000-0000-4000-8000-000000000000/schedules/pause',
    });
    expect(unknown.statusCode).toBe(404);
  });
});

describe("why did or didn't a time run", () => {
  test('a time before the schedule existed, a time that is no fire time and a future time each get their own answer', async () => {
    const activity = await registerActivity(stack, {
      name: 'explained',
      triggers: [{ type: 'cron', cron: '0 9 * * *', timezone: 'UTC' }],
      tasks: noop,
    });
    const explain = async (at: string) =>
      (await stack.api.server.inject({ method: 'GET', url: `/v1/activities/${activity.id}/fires/${at}` })).json()
        .explanation as string;
    const yesterday9 = new Date();
    yesterday9.setUTCDate(yesterday9.getUTCDate() - 1);
    yesterday9.setUTCHours(9, 0, 0, 0);
    expect(await explain(yesterday9.toISOString())).toContain("before trigger 0's schedule existed");
    expect(await explain(new Date(yesterday9.getTime() + 60_000).toISOString())).toContain('not a fire time');
    expect(await explain(new Date(yesterday9.getTime() + 2 * 86_400_000).toISOString())).toContain('in the future');
  });
});
