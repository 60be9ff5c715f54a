import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { createRestartableTemporal } from './restartable-temporal';
import {
  createTestDatabase,
  silentLogger,
  testConfig,
  waitFor,
  workflowBundle,
  type TestStack,
  testPool,
} from './harness';
import { everySeconds, isoOf, listRuns, settledFires, sleep, utc } from './schedule-helpers';
import { cronRunWorkflowId, parseScheduledFor } from '@activity-core/contracts/ids';

/**
 * The Temporal server itself goes down (not just the workers) while a
 * seconds-level compress schedule should be firing. This file runs its own
 * Temporal dev server with a SQLite file, so it comes back with its schedules.
 */
const PERIOD_MS = 5_000;
/**
 * How long Temporal stays down. More than three periods, so at least three
 * fire times fall inside it (the compressed one and two folded into it, which
 * the test asserts), and the half period more keeps the latest of them later
 * than the 2 s grace when Temporal delivers it after the restart.
 */
const OUTAGE_MS = 3 * PERIOD_MS + PERIOD_MS / 2;

let temporal: Awaited<ReturnType<typeof createRestartableTemporal>>;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let config: ReturnType<typeof testConfig>;
let api: ApiApp;
let worker: WorkerApp | undefined;
let sql: pg.Pool;

async function startWorker(): Promise<void> {
  worker = await createWorkerApp(config, {
    logger: silentLogger,
    workflowBundle: await workflowBundle(),
    scheduleSweepIntervalMs: 0,
  });
  void worker.run();
}

beforeAll(async () => {
  temporal = await createRestartableTemporal();
  await temporal.start();
  database = await createTestDatabase();
  config = testConfig(database.url, { TEMPORAL_ADDRESS: temporal.address });
  api = await createApiApp(config, { logger: false });
  await startWorker();
  sql = testPool(database.url, 2);
});

afterAll(async () => {
  await worker?.close();
  await api?.close();
  await sql?.end();
  await temporal?.dispose();
  await database?.drop();
});

describe('a schedule while the Temporal server is down', () => {
  test('compress: the fire times missed during the outage become exactly one run whose window covers them all', async () => {
    const stack = { api } as unknown as TestStack;
    const registered = await api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'temporal-outage-compress',
        triggers: [
          { type: 'cron', cron: everySeconds(PERIOD_MS / 1000), misfire_policy: 'compress', misfire_grace: '2s' },
        ],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const activityId: string = registered.json().id;
    await waitFor(
      'a first on-time run',
      async () => ((await listRuns(stack, activityId)).some((run) => run.status === 'succeeded') ? true : undefined),
      20_000,
    );

    // Temporal (and, as an operator would, the worker) goes away for several periods.
    await worker?.close();
    worker = undefined;
    await temporal.stop();
    const state = await sql.query('SELECT last_window_end FROM schedule_states WHERE activity_id = $1', [activityId]);
    const lastBefore = state.rows[0].last_window_end as Date;
    await sleep(OUTAGE_MS);
    await temporal.start();
    await startWorker();

    // The first fire started after the outage is the compressed one. Pick it from the fire log, not from
    // "the first succeeded run": the next on-time fire can start right behind it and finish first.
    await waitFor(
      'a run after the outage to finish',
      async () =>
        (await listRuns(stack, activityId)).some(
          (run) => run.scheduled_for! > utc(lastBefore) && run.status === 'succeeded',
        )
          ? true
          : undefined,
      40_000,
    );
    const compressedFire = (await settledFires(stack, activityId)).find(
      (fire) => fire.scheduled_for > utc(lastBefore) && fire.status === 'started',
    );
    expect(compressedFire).toMatchObject({ reason: 'misfire_compress' });
    const after = await waitFor(
      'the compressed run to finish',
      async () =>
        (await listRuns(stack, activityId)).find(
          (run) => run.workflow_id === compressedFire!.workflow_id && run.status === 'succeeded',
        ),
      40_000,
    );
    const compressedId = cronRunWorkflowId(activityId, parseScheduledFor(after.scheduled_for ?? ''));
    expect(after).toMatchObject({
      workflow_id: compressedId,
      window_start: lastBefore.toISOString(),
      window_end: isoOf(after.scheduled_for!),
    });

    // Every nominal time between the last run before the outage and the compressed one has no run of its own,
    // and the fire log says which run covered it.
    const fires = await settledFires(stack, activityId);
    const folded: string[] = [];
    for (let at = lastBefore.getTime() + PERIOD_MS; at < new Date(after.scheduled_for!).getTime(); at += PERIOD_MS)
      folded.push(utc(new Date(at)));
    // An outage of more than three periods misses at least 3 fire times: the compressed one and 2+ folded into it.
    expect(folded.length).toBeGreaterThanOrEqual(2);
    for (const time of folded) {
      expect(fires.find((fire) => fire.scheduled_for === time)).toMatchObject({
        status: 'skipped',
        reason: 'compressed',
        covered_by: compressedId,
      });
    }
    expect(fires.find((fire) => fire.scheduled_for === after.scheduled_for)).toMatchObject({
      status: 'started',
      reason: 'misfire_compress',
    });
    const runsInOutage = (await listRuns(stack, activityId)).filter(
      (run) => run.scheduled_for! > utc(lastBefore) && run.scheduled_for! < after.scheduled_for!,
    );
    expect(runsInOutage).toEqual([]);
  });
});
