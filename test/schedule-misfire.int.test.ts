import type { MisfirePolicy } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { startStack, type TestStack } from './harness';
import {
  everySeconds,
  isoOf,
  settledFires,
  registerActivity,
  runsEndedThrough,
  sleep,
  startWorker,
  stopWorker,
  utc,
  waitForRun,
  type FireView,
  type RunView,
} from './schedule-helpers';

/**
 * Real outages: the worker is stopped while a seconds-level schedule keeps
 * firing in Temporal, then restarted. The cron fires every 15 s with a 2 s
 * grace; the restart happens 2.5 s after a nominal time, so every missed time
 * is late by more than the grace, and the next one stays on time as long as
 * the restarted worker gets to it within 14.5 s (three of these run at once on
 * a loaded 2-core machine, each worker working through a backlog of ticks;
 * with 10 s, i.e. 9.5 s to spare, the full suite's load made the restarted
 * workers late for the next fire).
 */
const PERIOD_MS = 15_000;
const GRACE = '2s';
const RESTART_PHASE_MS = 2500;
const MISSED = 3;

interface Outage {
  activityId: string;
  /** Nominal time of the last run before the outage. */
  lastBefore: Date;
  /** The nominal times that passed while no worker ran, oldest first. */
  missed: string[];
  /** The first nominal time after the restart. */
  next: string;
  runs: RunView[];
  fires: FireView[];
}

async function withOutage(stack: TestStack, policy: MisfirePolicy): Promise<Outage> {
  const activity = await registerActivity(stack, {
    name: `outage-${policy}`,
    triggers: [
      {
        type: 'cron',
        cron: everySeconds(PERIOD_MS / 1000),
        misfire_policy: policy,
        max_catchup: 2,
        misfire_grace: GRACE,
      },
    ],
    tasks: [{ type: 'noop' }],
  });
  // The first fire comes up to one period after registration; under the full suite's load, give it two more.
  await waitForRun(stack, activity.id, () => true, 3 * PERIOD_MS);
  await stopWorker(stack);

  const state = await stack.sql.query('SELECT last_window_end FROM schedule_states WHERE activity_id = $1', [
    activity.id,
  ]);
  const lastBefore = state.rows[0].last_window_end as Date;
  const missed = Array.from({ length: MISSED }, (_, index) =>
    utc(new Date(lastBefore.getTime() + (index + 1) * PERIOD_MS)),
  );
  const restartAt = lastBefore.getTime() + MISSED * PERIOD_MS + RESTART_PHASE_MS;
  expect(restartAt).toBeGreaterThan(Date.now());
  await sleep(restartAt - Date.now());
  const worker = await startWorker(stack);
  try {
    const next = utc(new Date(lastBefore.getTime() + (MISSED + 1) * PERIOD_MS));
    await waitForRun(
      stack,
      activity.id,
      (run) => run.scheduled_for === next && run.status === 'succeeded',
      3 * PERIOD_MS,
    );
    // Caught-up runs start in order but may finish after the on-time one; read the record once all have ended.
    const runs = await runsEndedThrough(stack, activity.id, next);
    const disabled = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/disable` });
    expect(disabled.statusCode).toBe(200);
    return { activityId: activity.id, lastBefore, missed, next, runs, fires: await settledFires(stack, activity.id) };
  } finally {
    await worker.close();
  }
}

const decision = (outage: Outage, scheduledFor: string) =>
  outage.fires.find((fire) => fire.scheduled_for === scheduledFor);
const runAt = (outage: Outage, scheduledFor: string) => outage.runs.filter((run) => run.scheduled_for === scheduledFor);

function expectNextRunsNormally(outage: Outage): void {
  const [next] = runAt(outage, outage.next);
  expect(next).toMatchObject({
    workflow_id: `activity-${outage.activityId}:${outage.next}`,
    window_start: isoOf(outage.missed.at(-1)!),
    window_end: isoOf(outage.next),
  });
  expect(decision(outage, outage.next)).toMatchObject({ status: 'started', reason: 'on_time' });
}

describe.concurrent('misfire policies against a real worker outage (3 fire times missed, max_catchup 2)', () => {
  test('skip: no runs for the missed times, each recorded as misfire_skip; the next on-time fire runs normally', async () => {
    const stack = await startStack();
    try {
      const outage = await withOutage(stack, 'skip');
      for (const missed of outage.missed) {
        expect(runAt(outage, missed)).toEqual([]);
        expect(decision(outage, missed)).toMatchObject({
          status: 'skipped',
          reason: 'misfire_skip',
          workflow_id: null,
        });
      }
      expectNextRunsNormally(outage);
      // Ticks did not pile up while no worker ran: Temporal kept one waiting, buffered one, and dropped the rest.
      const schedule = await stack.client.schedule.getHandle(`schedule-${outage.activityId}-0`).describe();
      expect(schedule.info.numActionsSkippedOverlap).toBeGreaterThanOrEqual(MISSED - 2);
    } finally {
      await stack.close();
    }
  });

  test('catchup: the 2 most recent missed times run in order with their own ids and windows; the older one is recorded as catchup_limit', async () => {
    const stack = await startStack();
    try {
      const outage = await withOutage(stack, 'catchup');
      const [first, second, third] = outage.missed as [string, string, string];
      expect(runAt(outage, first)).toEqual([]);
      expect(decision(outage, first)).toMatchObject({ status: 'skipped', reason: 'catchup_limit' });
      for (const [caught, previous] of [
        [second, first],
        [third, second],
      ] as const) {
        const runs = runAt(outage, caught);
        expect(runs).toHaveLength(1);
        expect(runs[0]).toMatchObject({
          workflow_id: `activity-${outage.activityId}:${caught}`,
          trigger_type: 'cron',
          window_start: isoOf(previous),
          window_end: isoOf(caught),
          status: 'succeeded',
        });
        expect(decision(outage, caught)).toMatchObject({ status: 'started', reason: 'misfire_catchup' });
      }
      // In order: Temporal started the older caught-up run first.
      const startedAt = async (at: string) =>
        (await stack.client.workflow.getHandle(`activity-${outage.activityId}:${at}`).describe()).startTime.getTime();
      expect(await startedAt(second)).toBeLessThan(await startedAt(third));
      expectNextRunsNormally(outage);
    } finally {
      await stack.close();
    }
  });

  test('compress: exactly one run, for the latest missed time, whose window starts where the last window ended and covers every missed interval', async () => {
    const stack = await startStack();
    try {
      const outage = await withOutage(stack, 'compress');
      const latest = outage.missed.at(-1)!;
      const compressedId = `activity-${outage.activityId}:${latest}`;
      const runs = runAt(outage, latest);
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({
        workflow_id: compressedId,
        window_start: outage.lastBefore.toISOString(),
        window_end: isoOf(latest),
        status: 'succeeded',
      });
      expect(decision(outage, latest)).toMatchObject({ status: 'started', reason: 'misfire_compress' });
      for (const folded of outage.missed.slice(0, -1)) {
        expect(runAt(outage, folded)).toEqual([]);
        expect(decision(outage, folded)).toMatchObject({
          status: 'skipped',
          reason: 'compressed',
          covered_by: compressedId,
        });
      }
      // Nothing between the last run before the outage and the next on-time run is left without a run or a covering window.
      const between = outage.runs.filter(
        (run) => run.scheduled_for! > utc(outage.lastBefore) && run.scheduled_for! <= outage.next,
      );
      expect(between.map((run) => run.scheduled_for)).toEqual([latest, outage.next]);
      expectNextRunsNormally(outage);
    } finally {
      await stack.close();
    }
  });
});
