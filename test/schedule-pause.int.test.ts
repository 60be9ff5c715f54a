import { describe, expect, test } from 'vitest';
import { startStack } from './harness';
import {
  everySeconds,
  isoOf,
  settledFires,
  listRuns,
  registerActivity,
  runsEndedThrough,
  sleep,
  utc,
  waitForRun,
} from './schedule-helpers';
import { temporalScheduleId } from '@activity-core/contracts/ids';

/**
 * Every 5 s with a 1 s grace; resume / enable happen 1.5 s after a nominal
 * time, so the missed ones are all late, and the next one is on time if the
 * worker gets to it within 4.5 s.
 */
const PERIOD_MS = 5000;
const PHASE_MS = 1500;

describe.concurrent('pausing and disabling', () => {
  test('resume after an operator pause of several periods applies the misfire policy to the fire times missed while paused', async () => {
    const stack = await startStack();
    try {
      const activity = await registerActivity(stack, {
        name: 'paused-catchup',
        triggers: [
          {
            type: 'cron',
            cron: everySeconds(PERIOD_MS / 1000),
            misfire_policy: 'catchup',
            max_catchup: 2,
            misfire_grace: '1s',
          },
        ],
        tasks: [{ type: 'noop' }],
      });
      await waitForRun(stack, activity.id, () => true);

      const paused = await stack.api.server.inject({
        method: 'POST',
        url: `/v1/activities/${activity.id}/schedules/pause`,
        payload: { note: 'vendor maintenance' },
      });
      expect(paused.statusCode, paused.body).toBe(200);
      expect(paused.json().schedules[0]).toMatchObject({
        paused: true,
        pause_note: 'vendor maintenance',
        next_fire_times: [],
      });
      const handle = stack.client.schedule.getHandle(temporalScheduleId(activity.id, 0));
      const description = await handle.describe();
      expect(description.state.paused).toBe(true);
      expect(description.state.note).toContain('vendor maintenance');

      const state = await stack.sql.query(
        'SELECT processed_through, last_window_end FROM schedule_states WHERE activity_id = $1',
        [activity.id],
      );
      const lastBefore = state.rows[0].last_window_end as Date;
      const processedThrough = state.rows[0].processed_through as Date;

      // A reconcile while paused keeps the pause: Postgres says paused.
      const reconciled = await stack.api.server.inject({ method: 'POST', url: '/v1/schedules/reconcile' });
      expect(reconciled.statusCode).toBe(200);
      expect((await handle.describe()).state.paused).toBe(true);

      // Four fire times pass while paused; resume 1.5 s after the fourth.
      const firstMissed = Math.floor(processedThrough.getTime() / PERIOD_MS) * PERIOD_MS + PERIOD_MS;
      const missed = Array.from({ length: 4 }, (_, index) => utc(new Date(firstMissed + index * PERIOD_MS)));
      const resumeAt = firstMissed + 3 * PERIOD_MS + PHASE_MS;
      await sleep(firstMissed + PERIOD_MS - Date.now());
      const whilePaused = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/activities/${activity.id}/fires/${missed[0]}`,
      });
      expect(whilePaused.json().explanation).toContain('paused by an operator');
      await sleep(resumeAt - Date.now());

      const resumed = await stack.api.server.inject({
        method: 'POST',
        url: `/v1/activities/${activity.id}/schedules/resume`,
        payload: {},
      });
      expect(resumed.statusCode, resumed.body).toBe(200);
      expect(resumed.json().schedules[0].paused).toBe(false);
      expect(resumed.json().processing).toHaveLength(1);
      expect((await handle.describe()).state.paused).toBe(false);

      // The 2 most recent missed times run (catchup, max 2); the 2 older ones are recorded as skipped.
      await waitForRun(stack, activity.id, (run) => run.scheduled_for === missed[3] && run.status === 'succeeded');
      const stopped = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/disable` });
      expect(stopped.statusCode).toBe(200);
      const runs = await runsEndedThrough(stack, activity.id, missed[3]!);
      const fires = await settledFires(stack, activity.id);
      const fireAt = (at: string) => fires.find((fire) => fire.scheduled_for === at);
      expect(
        runs
          .filter((run) => run.scheduled_for! > utc(lastBefore) && run.scheduled_for! <= missed[3]!)
          .map((run) => run.scheduled_for),
      ).toEqual(missed.slice(2));
      for (const skipped of missed.slice(0, 2))
        expect(fireAt(skipped)).toMatchObject({ status: 'skipped', reason: 'catchup_limit' });
      for (const [index, caught] of missed.slice(2).entries()) {
        expect(fireAt(caught)).toMatchObject({ status: 'started', reason: 'misfire_catchup' });
        expect(runs.find((run) => run.scheduled_for === caught)).toMatchObject({
          window_start: isoOf(missed[index + 1]!),
          window_end: isoOf(caught),
        });
      }

      // And the API can say why the oldest one has no run.
      const why = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/activities/${activity.id}/fires/${missed[0]}`,
      });
      expect(why.statusCode).toBe(200);
      expect(why.json().explanation).toContain('max_catchup');
      expect(why.json().fires).toEqual([
        expect.objectContaining({ reason: 'catchup_limit', scheduled_for: missed[0] }),
      ]);
    } finally {
      await stack.close();
    }
  });

  test('fire times while an activity is disabled are not caught up when it is enabled again, and are recorded as activity_disabled', async () => {
    const stack = await startStack();
    try {
      const activity = await registerActivity(stack, {
        name: 'disabled-compress',
        triggers: [
          { type: 'cron', cron: everySeconds(PERIOD_MS / 1000), misfire_policy: 'compress', misfire_grace: '1s' },
        ],
        tasks: [{ type: 'noop' }],
      });
      await waitForRun(stack, activity.id, () => true);
      expect(
        (await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/disable` })).statusCode,
      ).toBe(200);
      const state = await stack.sql.query('SELECT processed_through FROM schedule_states WHERE activity_id = $1', [
        activity.id,
      ]);
      const processedThrough = state.rows[0].processed_through as Date;

      const firstSkipped = Math.floor(processedThrough.getTime() / PERIOD_MS) * PERIOD_MS + PERIOD_MS;
      await sleep(firstSkipped + 2 * PERIOD_MS + PHASE_MS - Date.now());
      const enabled = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/enable` });
      expect(enabled.statusCode).toBe(200);
      const next = utc(new Date(firstSkipped + 3 * PERIOD_MS));
      await waitForRun(stack, activity.id, (run) => run.scheduled_for === next);
      await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/disable` });

      const runs = await listRuns(stack, activity.id);
      const skipped = [0, 1, 2].map((index) => utc(new Date(firstSkipped + index * PERIOD_MS)));
      expect(runs.filter((run) => skipped.includes(run.scheduled_for!))).toEqual([]);
      const fires = await settledFires(stack, activity.id);
      expect(fires.find((fire) => fire.scheduled_for === skipped[0])).toMatchObject({
        status: 'skipped',
        reason: 'activity_disabled',
        range_end: skipped[2],
      });
      // The range record answers for every time in it.
      const why = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/activities/${activity.id}/fires/${skipped[1]}`,
      });
      expect(why.json().explanation).toContain('disabled');
      // The first fire after enabling runs normally, its window from the previous nominal time.
      expect(runs.find((run) => run.scheduled_for === next)).toMatchObject({
        window_start: isoOf(skipped[2]!),
        window_end: isoOf(next),
      });
    } finally {
      await stack.close();
    }
  });
});
