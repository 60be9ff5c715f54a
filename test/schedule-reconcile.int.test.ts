import { randomBytes, randomUUID } from 'node:crypto';
import type { Config } from '@activity-core/config';
import { freePort } from '@activity-core/dev-services';
import { listSchedules } from '@activity-core/schedule-manager';
import { createEncryptionCodec } from '@activity-core/temporal/client';
import { Client, ScheduleNotFoundError, type ScheduleDescription } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp } from '../apps/api/src/app';
import { createWorkerApp } from '../apps/worker/src/worker-app';
import { silentLogger, startStack, testConfig, waitFor, workflowBundle, type TestStack } from './harness';
import { registerActivity } from './schedule-helpers';
import { temporalScheduleId } from '@activity-core/contracts/ids';

let stack: TestStack;

beforeAll(async () => {
  // No worker: nothing here fires (daily crons), and workers reconcile on their own schedule.
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await stack?.close();
});

const daily = (name: string, cron = '0 3 * * *') => ({
  name,
  triggers: [{ type: 'cron', cron, timezone: 'UTC' }],
  tasks: [{ type: 'noop' }],
});

async function reconcile(): Promise<{ created: string[]; updated: string[]; deleted: string[]; unchanged: number }> {
  const response = await stack.api.server.inject({ method: 'POST', url: '/v1/schedules/reconcile' });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** A schedule shaped like ours but with no activity behind it, created through `client` (ours by default). */
async function createStraySchedule(taskQueue: string, client: Client = stack.client): Promise<string> {
  const activityId = randomUUID();
  const scheduleId = temporalScheduleId(activityId, 0);
  await client.schedule.create({
    scheduleId,
    spec: { cronExpressions: ['0 4 * * *'] },
    action: {
      type: 'startWorkflow',
      workflowType: 'ScheduleTickWorkflow',
      taskQueue,
      args: [{ activityId, triggerIndex: 0, definitionVersion: 1, revision: 'x' }],
    },
    memo: { managedBy: 'activity-core', taskQueue, activityId, triggerIndex: 0 },
    state: { paused: true },
  });
  // Listing is eventually consistent; reconciliation finds orphans by listing.
  await waitFor('the stray schedule to be listed', async () => {
    for await (const entry of listSchedules(client, 1000)) if (entry.scheduleId === scheduleId) return true;
    return undefined;
  });
  return scheduleId;
}

const describeSchedule = (id: string): Promise<ScheduleDescription> => stack.client.schedule.getHandle(id).describe();

/** Another API of `config` with nothing in the background, whose schedule requests wait `temporalDeadlineMs` for Temporal. */
const quietApi = (config: Config, temporalDeadlineMs: number) =>
  createApiApp(config, { logger: false, dispatcher: false, bulkReruns: false, retention: false, temporalDeadlineMs });

describe('reconciliation', () => {
  test('creates missing schedules, updates changed ones, removes orphans, and a second run changes nothing', async () => {
    const missing = await registerActivity(stack, daily('reconcile-missing'));
    const changed = await registerActivity(stack, daily('reconcile-changed'));
    const deleted = await registerActivity(stack, daily('reconcile-deleted'));
    const untouched = await registerActivity(stack, daily('reconcile-untouched'));
    const id = (activity: { id: string }) => temporalScheduleId(activity.id, 0);

    // Drift behind the API's back: a schedule lost, a definition edited and one deleted directly in Postgres, a stray schedule.
    await stack.client.schedule.getHandle(id(missing)).delete();
    await stack.sql.query(
      `UPDATE activity_definitions SET definition = jsonb_set(definition, '{triggers,0,cron}', '"15 5 * * *"'), version = version + 1 WHERE id = $1`,
      [changed.id],
    );
    await stack.sql.query('UPDATE activity_definitions SET deleted_at = now() WHERE id = $1', [deleted.id]);
    const stray = await createStraySchedule(stack.config.temporal.taskQueue);
    const foreign = await createStraySchedule(`another-deployment-${randomUUID()}`);
    const untouchedBefore = await describeSchedule(id(untouched));
    // The reconcile compares with Temporal's listing, which trails a delete by a moment (ADR 0042): wait until it shows it.
    await waitFor('the lost schedule to leave the listing', async () => {
      for await (const entry of listSchedules(stack.client, 1000))
        if (entry.scheduleId === id(missing)) return undefined;
      return true;
    });

    const first = await reconcile();
    expect(first.created).toEqual([id(missing)]);
    expect(first.updated).toEqual([id(changed)]);
    expect([...first.deleted].sort()).toEqual([id(deleted), stray].sort());

    await describeSchedule(id(missing));
    expect((await describeSchedule(id(changed))).info.nextActionTimes[0]?.toISOString()).toMatch(/T05:15:00\.000Z$/);
    await expect(describeSchedule(id(deleted))).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await expect(describeSchedule(stray)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    // Schedules of another deployment (another task queue) in the same namespace are not ours to remove.
    await describeSchedule(foreign);

    const snapshot = async () =>
      Promise.all(
        [missing, changed, untouched].map(
          async (activity) => (await describeSchedule(id(activity))).info.lastUpdatedAt?.getTime() ?? 0,
        ),
      );
    const before = await snapshot();
    const second = await reconcile();
    expect(second).toEqual({ created: [], updated: [], deleted: [], unchanged: second.unchanged });
    expect(second.unchanged).toBeGreaterThanOrEqual(3);
    expect(await snapshot()).toEqual(before);
    expect((await describeSchedule(id(untouched))).info.lastUpdatedAt).toEqual(untouchedBefore.info.lastUpdatedAt);

    await stack.client.schedule.getHandle(foreign).delete();
  });

  test('a reconcile that outlasts its deadline answers 503 saying so, not that Temporal is unreachable', async () => {
    await registerActivity(stack, daily('deadline-reconcile'));
    // The same deployment, with a deadline no reconcile can meet; Temporal itself answers as usual.
    const hurried = await quietApi(stack.config, 1);
    try {
      const response = await hurried.server.inject({ method: 'POST', url: '/v1/schedules/reconcile' });
      expect(response.statusCode, response.body).toBe(503);
      expect(response.json().detail).toMatch(
        /^the reconcile did not finish within 0\.001 s: .*repeating it \(or the next worker's schedule sweep\) finishes the rest/,
      );
      expect(response.body).not.toMatch(/unreachable/);
      const described = await hurried.server.inject({
        method: 'POST',
        url: '/v1/schedules/reconcile?compare=describe',
      });
      expect(described.statusCode, described.body).toBe(503);
      expect(described.json().detail).toMatch(
        /^the reconcile did not finish within 0\.001 s: compare=describe describes every schedule, .*schedule listing instead/,
      );
    } finally {
      await hurried.close();
    }
    // With its usual deadline the same reconcile succeeds.
    expect((await reconcile()).created).toEqual([]);
  });

  test('a reconcile while Temporal is down answers 503 saying Temporal is unreachable, not that the reconcile was slow', async () => {
    // The same deployment pointed at a port where no Temporal listens: the client retries the refused calls until the deadline.
    const config = testConfig(stack.config.databaseUrl, { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
    const cut = await quietApi(config, 1_000);
    try {
      const response = await cut.server.inject({ method: 'POST', url: '/v1/schedules/reconcile' });
      expect(response.statusCode, response.body).toBe(503);
      expect(response.json().detail).toBe('Temporal is unreachable; retry later (the request is safe to repeat)');
    } finally {
      await cut.close();
    }
  });

  test('a schedule whose memo this deployment cannot decode (another key) is left alone and does not stop orphan removal', async () => {
    // Another deployment in the same namespace, on the same task queue name, encrypting its payloads with a key we do not have.
    const otherDeployment = new Client({
      connection: stack.client.connection,
      namespace: stack.config.temporal.namespace,
      dataConverter: { payloadCodecs: [createEncryptionCodec([{ id: 'theirs', key: randomBytes(32) }])] },
    });
    const theirs = await createStraySchedule(stack.config.temporal.taskQueue, otherDeployment);
    const stray = await createStraySchedule(stack.config.temporal.taskQueue);
    const kept = await registerActivity(stack, daily('reconcile-beside-foreign'));
    try {
      const result = await reconcile();
      expect(result.deleted).toContain(stray);
      expect(result.deleted).not.toContain(theirs);
      await expect(describeSchedule(stray)).rejects.toBeInstanceOf(ScheduleNotFoundError);
      await otherDeployment.schedule.getHandle(theirs).describe();
      await describeSchedule(temporalScheduleId(kept.id, 0));
      // The workers' sweep compares by the listing itself: it trusts our entries and still removes our orphans.
      const strayAgain = await createStraySchedule(stack.config.temporal.taskQueue);
      const { createDatabase, createDefinitionsRepository, createRunsRepository, createSchedulesRepository } =
        await import('@activity-core/db');
      const { createScheduleManager } = await import('@activity-core/schedule-manager');
      const { createRunStarter } = await import('@activity-core/temporal/client');
      const database = createDatabase({ url: stack.config.databaseUrl, max: 3 });
      try {
        const manager = createScheduleManager({
          client: stack.client,
          namespace: stack.config.temporal.namespace,
          taskQueue: stack.config.temporal.taskQueue,
          schedules: createSchedulesRepository(database.db),
          definitions: createDefinitionsRepository(database.db),
          runs: createRunsRepository(database.db),
          starter: createRunStarter({ client: stack.client, taskQueue: stack.config.temporal.taskQueue }),
          logger: silentLogger,
        });
        const sweep = await manager.reconcile({ compareWith: 'listing' });
        expect(sweep.deleted).toEqual([strayAgain]);
        expect(sweep.created).toEqual([]);
      } finally {
        await database.close();
      }
      await otherDeployment.schedule.getHandle(theirs).describe();
    } finally {
      await otherDeployment.schedule.getHandle(theirs).delete();
    }
  });

  test('a worker reconciles when it starts', async () => {
    const activity = await registerActivity(stack, daily('reconcile-at-start'));
    const scheduleId = temporalScheduleId(activity.id, 0);
    await stack.client.schedule.getHandle(scheduleId).delete();
    // A worker's sweep reads Temporal's schedule listing, which is eventually consistent (ADR 0042).
    await waitFor('the deleted schedule to leave the listing', async () => {
      for await (const entry of listSchedules(stack.client, 1000))
        if (entry.scheduleId === scheduleId) return undefined;
      return true;
    });

    const worker = await createWorkerApp(stack.config, {
      logger: silentLogger,
      workflowBundle: await workflowBundle(),
      scheduleSweepIntervalMs: 0,
    });
    void worker.run();
    try {
      const description = await waitFor('the worker to recreate the schedule', () => describeSchedule(scheduleId));
      expect(description.action.workflowType).toBe('ScheduleTickWorkflow');
      expect(description.state.note).toContain('reconcile-at-start');
    } finally {
      await worker.close();
    }
  });

  test('a pause recorded in Postgres survives reconciliation, and a schedule unpaused behind its back is paused again', async () => {
    const activity = await registerActivity(stack, daily('reconcile-paused'));
    const scheduleId = temporalScheduleId(activity.id, 0);
    const paused = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/activities/${activity.id}/schedules/pause`,
      payload: { note: 'quarter close' },
    });
    expect(paused.statusCode).toBe(200);
    await stack.client.schedule.getHandle(scheduleId).unpause('someone clicked resume in the UI');
    // The reconcile compares with Temporal's listing, which trails a change by a moment (ADR 0042): wait until it shows it.
    await waitFor('the listing to show the schedule unpaused', async () => {
      for await (const entry of listSchedules(stack.client, 1000))
        if (entry.scheduleId === scheduleId && !entry.state.paused) return true;
      return undefined;
    });

    const result = await reconcile();
    expect(result.updated).toContain(scheduleId);
    const description = await describeSchedule(scheduleId);
    expect(description.state.paused).toBe(true);
    expect(description.state.note).toContain('quarter close');
  });
});

describe('a reconcile holding an old definition', () => {
  test('never rolls a trigger back to the version it read, so the newer schedule keeps its next fire', async () => {
    const { createDatabase, createDefinitionsRepository, createRunsRepository, createSchedulesRepository } =
      await import('@activity-core/db');
    const { createScheduleManager } = await import('@activity-core/schedule-manager');
    const { createRunStarter } = await import('@activity-core/temporal/client');
    const database = createDatabase({ url: stack.config.databaseUrl, max: 3 });
    try {
      const definitions = createDefinitionsRepository(database.db);
      const manager = createScheduleManager({
        client: stack.client,
        namespace: stack.config.temporal.namespace,
        taskQueue: stack.config.temporal.taskQueue,
        schedules: createSchedulesRepository(database.db),
        definitions,
        runs: createRunsRepository(database.db),
        starter: createRunStarter({ client: stack.client, taskQueue: stack.config.temporal.taskQueue }),
        logger: silentLogger,
      });
      const activity = await registerActivity(stack, daily('stale-reader', '0 3 * * *'));
      // A reconcile reads version 1 ...
      const staleRow = await definitions.get(activity.id);
      // ... an operator changes the cron (version 2, applied by the API) ...
      const put = await stack.api.server.inject({
        method: 'PUT',
        url: `/v1/activities/${activity.id}`,
        payload: daily('stale-reader', '30 3 * * *'),
      });
      expect(put.json().version).toBe(2);
      // ... and only then does the reconcile apply what it read.
      await manager.sync(staleRow!);
      const state = await stack.sql.query('SELECT trigger FROM schedule_states WHERE activity_id = $1', [activity.id]);
      expect(state.rows[0].trigger.cron).toBe('30 3 * * *');
      const schedule = await stack.client.schedule.getHandle(temporalScheduleId(activity.id, 0)).describe();
      expect(JSON.stringify(schedule.spec)).toContain('30');
    } finally {
      await database.close();
    }
  });
});

describe('the fire log', () => {
  test('pages through fires of two triggers at the same instant without skipping either', async () => {
    const activity = await registerActivity(stack, {
      name: 'two-triggers-one-instant',
      triggers: [
        { type: 'cron', cron: '0 3 * * *', timezone: 'UTC' },
        { type: 'cron', cron: '0 3 * * *', timezone: 'Europe/London' },
      ],
      tasks: [{ type: 'noop' }],
    });
    for (const at of ['2026-01-01T03:00:00Z', '2026-01-02T03:00:00Z']) {
      for (const triggerIndex of [0, 1]) {
        await stack.sql.query(
          `INSERT INTO schedule_fires (activity_id, trigger_index, scheduled_for, status, reason) VALUES ($1, $2, $3, 'skipped', 'misfire_skip')`,
          [activity.id, triggerIndex, at],
        );
      }
    }
    const seen: string[] = [];
    let url = `/v1/activities/${activity.id}/fires?limit=1`;
    for (let i = 0; i < 10; i++) {
      const response = await stack.api.server.inject({ method: 'GET', url });
      expect(response.statusCode, response.body).toBe(200);
      const page = response.json();
      seen.push(
        ...page.items.map(
          (fire: { scheduled_for: string; trigger_index: number }) => `${fire.scheduled_for}#${fire.trigger_index}`,
        ),
      );
      if (page.next_cursor === null) break;
      url = `/v1/activities/${activity.id}/fires?limit=1&cursor=${page.next_cursor}`;
    }
    expect(seen).toEqual([
      '2026-01-02T03:00:00+00:00#1',
      '2026-01-02T03:00:00+00:00#0',
      '2026-01-01T03:00:00+00:00#1',
      '2026-01-01T03:00:00+00:00#0',
    ]);
  });
});
