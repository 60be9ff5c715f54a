import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId } from '@activity-core/contracts';
import { startStack, waitFor, type TestStack } from './harness';
import { killHard, spawnApiProcess, spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';

const EVENTS = 30;
const eventId = (n: number) => `evt_held_${String(n).padStart(2, '0')}`;

describe('releasing held events while a worker or an API process is SIGKILLed', () => {
  let stack: TestStack;
  const spawned: SpawnedProcess[] = [];

  beforeAll(async () => {
    // The API in this process; the worker in its own, so it can be killed like a crashed host.
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    for (const process of spawned) await killHard(process.child);
    await stack?.close();
  });

  const api = async (method: 'GET' | 'POST', url: string, payload?: object) => {
    const response = await stack.api.server.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
    return { status: response.statusCode, json: response.json() };
  };
  const startedRoutes = async (activityId: string): Promise<number> =>
    (
      await stack.sql.query(
        `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND outcome IN ('started', 'duplicate')`,
        [activityId],
      )
    ).rows[0].n;

  test('30 events held while disabled, enabled and released: 30 runs, each exactly once, started in arrival order', async () => {
    const created = await api('POST', '/v1/activities', {
      name: 'held-partner-orders',
      triggers: [{ type: 'event', event_type: 'partner.order' }],
      tasks: [{ type: 'delay', config: { duration: '200ms' } }],
    });
    const activityId = created.json.id as string;
    expect(
      (await api('POST', `/v1/activities/${activityId}/disable`, { when_disabled: { action: 'hold' } })).status,
    ).toBe(200);
    for (let n = 0; n < EVENTS; n++) {
      const sent = await api('POST', '/v1/events', {
        event_id: eventId(n),
        event_type: 'partner.order',
        source: 'partner',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { n },
      });
      expect(sent.status).toBe(202);
    }
    const enabled = await api('POST', `/v1/activities/${activityId}/enable`);
    expect(enabled.json.held_events).toEqual({ held: EVENTS, released: 0 });

    const first = spawnWorkerProcess(stack.config);
    spawned.push(first);
    await first.ready;

    // The ten oldest first, by id; the worker starts on them.
    const some = await api('POST', `/v1/activities/${activityId}/held-events/release`, {
      event_ids: Array.from({ length: 10 }, (_, n) => eventId(n)),
    });
    expect(some.json).toMatchObject({ released: 10, started: 10, remaining: EVENTS - 10 });
    await waitFor('the worker recorded a released run', async () => {
      const { rows } = await stack.sql.query('SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1', [
        activityId,
      ]);
      return rows[0].n > 0 ? true : undefined;
    });

    // Release the rest and SIGKILL the worker while that release is under way (polled tightly: the release of 20
    // takes a few hundred ms).
    const rest = api('POST', `/v1/activities/${activityId}/held-events/release`);
    for (let tries = 0; (await startedRoutes(activityId)) <= 10; tries++) {
      if (tries > 3_000) throw new Error('the second release started no run');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await killHard(first.child);
    const restAnswer = await rest;
    expect(restAnswer.status).toBe(200);
    expect(restAnswer.json).toMatchObject({ released: EVENTS - 10, remaining: 0 });
    expect(restAnswer.json.started + restAnswer.json.duplicate + restAnswer.json.pending).toBe(EVENTS - 10);

    // Released twice: nothing new.
    const again = await api('POST', `/v1/activities/${activityId}/held-events/release`);
    expect(again.json).toMatchObject({ released: 0, started: 0, remaining: 0 });

    const second = spawnWorkerProcess(stack.config);
    spawned.push(second);
    await second.ready;
    await waitFor(
      'every released run succeeded',
      async () => {
        const { rows } = await stack.sql.query(
          `SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
          [activityId],
        );
        return rows[0].n === EVENTS ? true : undefined;
      },
      120_000,
    );

    // Exactly once: one run record and one Temporal execution per event, under the event's own id.
    const expected = Array.from({ length: EVENTS }, (_, n) => eventRunWorkflowId(activityId, eventId(n)));
    const { rows: runs } = await stack.sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [
      activityId,
    ]);
    expect(runs.map((row: { workflow_id: string }) => row.workflow_id).sort()).toEqual([...expected].sort());
    let executions = 0;
    for await (const _ of stack.client.workflow.list({ query: `WorkflowId STARTS_WITH "activity-${activityId}:"` }))
      executions++;
    expect(executions).toBe(EVENTS);
    const { rows: routes } = await stack.sql.query(
      `SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome`,
      [activityId],
    );
    expect(routes).toEqual([{ outcome: 'started', n: EVENTS }]);

    // Arrival order: each run was started (Temporal's start time) no earlier than the run of the event before it.
    const startTimes: number[] = [];
    for (const workflowId of expected)
      startTimes.push((await stack.client.workflow.getHandle(workflowId).describe()).startTime.getTime());
    for (let n = 1; n < EVENTS; n++) expect(startTimes[n]).toBeGreaterThanOrEqual(startTimes[n - 1]!);

    await stopGracefully(second.child);
  }, 240_000);
  test('an API process SIGKILLed in the middle of a release: what it had not reached stays held, a second release and the dispatcher finish, each run once', async () => {
    const total = 60;
    const id = (n: number) => `evt_api_crash_${String(n).padStart(2, '0')}`;
    const created = await api('POST', '/v1/activities', {
      name: 'held-api-crash',
      triggers: [{ type: 'event', event_type: 'partner.refund' }],
      tasks: [{ type: 'noop' }],
      when_disabled: { action: 'hold', ttl: '1h' },
      enabled: false,
    });
    const activityId = created.json.id as string;
    for (let n = 0; n < total; n++)
      expect(
        (
          await api('POST', '/v1/events', {
            event_id: id(n),
            event_type: 'partner.refund',
            source: 'partner',
            occurred_at: '2026-03-01T09:00:00Z',
            data: {},
          })
        ).status,
      ).toBe(202);
    expect((await api('POST', `/v1/activities/${activityId}/enable`)).json.held_events.held).toBe(total);
    const worker = spawnWorkerProcess(stack.config);
    spawned.push(worker);
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const other = spawnApiProcess(stack.config, port);
    spawned.push(other);
    await Promise.all([worker.ready, other.ready]);

    // The other API process releases; it is killed as soon as its release has started a few runs.
    const release = fetch(`http://127.0.0.1:${port}/v1/activities/${activityId}/held-events/release`, {
      method: 'POST',
    }).catch(() => undefined);
    for (let tries = 0; (await startedRoutes(activityId)) < 3; tries++) {
      if (tries > 3_000) throw new Error('the release on the other API process started no run');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await killHard(other.child);
    await release;
    const { rows: atKill } = await stack.sql.query(
      `SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome`,
      [activityId],
    );
    const count = (outcome: string) =>
      atKill.find((row: { outcome: string; n: number }) => row.outcome === outcome)?.n ?? 0;
    // Killed mid-way: some still held, at most the one it was on left pending (leased, for the dispatcher).
    expect(count('held')).toBeGreaterThan(0);
    expect(count('pending')).toBeLessThanOrEqual(1);

    const again = await api('POST', `/v1/activities/${activityId}/held-events/release`);
    expect(again.json).toMatchObject({ released: count('held'), remaining: 0 });
    await waitFor(
      'every event ran once (the pending one after its lease, by the dispatcher)',
      async () => {
        const { rows } = await stack.sql.query(
          `SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
          [activityId],
        );
        return rows[0].n === total ? true : undefined;
      },
      120_000,
    );
    const { rows: runs } = await stack.sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [
      activityId,
    ]);
    expect(runs.map((row: { workflow_id: string }) => row.workflow_id).sort()).toEqual(
      Array.from({ length: total }, (_, n) => eventRunWorkflowId(activityId, id(n))).sort(),
    );
    let executions = 0;
    for await (const _ of stack.client.workflow.list({ query: `WorkflowId STARTS_WITH "activity-${activityId}:"` }))
      executions++;
    expect(executions).toBe(total);
    await waitFor('every route settled started', async () => {
      const { rows } = await stack.sql.query(
        `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND outcome IN ('started', 'duplicate')`,
        [activityId],
      );
      return rows[0].n === total ? true : undefined;
    });
    await stopGracefully(worker.child);
  }, 240_000);
});
