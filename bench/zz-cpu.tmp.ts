import { temporalScheduleId, type CronTrigger } from '@activity-core/contracts';
import { desiredSchedule } from '../packages/schedule-manager/src/schedule-options';
import { stateInStep, needsProcessing, listedAsDesired } from '../packages/schedule-manager/src/sweep-plan';
const N = 10000;
const zones = ['UTC', 'UTC', 'Europe/Paris', 'America/New_York'];
const now = new Date();
const items = Array.from({ length: N }, (_, i) => {
  const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  const trigger: CronTrigger = {
    type: 'cron',
    cron: `${i % 60} ${i % 24} * * *`,
    timezone: zones[i % 4]!,
    misfire_policy: 'skip',
    max_catchup: 10,
    misfire_grace: '60s',
  };
  const row = {
    id,
    name: `cron-scale-${i}`,
    version: 1,
    enabled: true,
    definition: { name: 'x', triggers: [trigger], tasks: [{ type: 'noop' }] },
  } as never;
  const state = {
    activityId: id,
    triggerIndex: 0,
    scheduleId: temporalScheduleId(id, 0),
    trigger,
    processedThrough: new Date(now.getTime() - 30_000),
    lastWindowEnd: null,
    active: true,
    paused: false,
    pauseNote: null,
    pausedAt: null,
    createdAt: now,
    updatedAt: now,
  };
  return { row, trigger, state, id };
});
let t = performance.now();
const desired = items.map((it) =>
  desiredSchedule({ row: it.row, trigger: it.trigger, triggerIndex: 0, taskQueue: 'q', cause: { kind: 'running' } }),
);
console.log('desiredSchedule', (performance.now() - t).toFixed(0), 'ms');
t = performance.now();
let k = 0;
for (const it of items) if (stateInStep(it.state as never, true, it.trigger, now)) k++;
console.log('stateInStep', (performance.now() - t).toFixed(0), 'ms', k);
t = performance.now();
k = 0;
for (const it of items) if (needsProcessing({ state: it.state as never, row: it.row, hasPending: false, now })) k++;
console.log('needsProcessing', (performance.now() - t).toFixed(0), 'ms', k);
t = performance.now();
k = 0;
for (const [i, d] of desired.entries())
  if (
    listedAsDesired(
      { memo: { managedBy: 'activity-core', taskQueue: 'q' }, state: { paused: false, note: d.note } },
      d,
      'q',
    )
  )
    k += i >= 0 ? 1 : 0;
console.log('listedAsDesired', (performance.now() - t).toFixed(0), 'ms', k);
