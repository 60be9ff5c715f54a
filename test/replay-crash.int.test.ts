import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId } from '@activity-core/contracts';
import { startCrashStack, type CrashStack } from './crash-stack';
import { waitFor } from './harness';
import { killHard, spawnApiProcess, stopGracefully } from './worker-process';

const EVENTS = 40;

describe('a bulk replay when the API that carries it out is SIGKILLed', () => {
  let stack: CrashStack;
  beforeAll(async () => {
    stack = await startCrashStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('the next API process resumes it from its record and every event runs exactly once', async () => {
    const { config, client, sql, spawned, inject } = stack;
    // Events that matched nothing, then their activity: accepted through an API that runs no bulk replays itself.
    const since = new Date(Date.now() - 60_000).toISOString();
    for (let n = 0; n < EVENTS; n++) {
      const sent = await inject('POST', '/v1/events', {
        event_id: `evt_crash_${String(n).padStart(2, '0')}`,
        event_type: 'replay.crash',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      });
      expect(sent.status).toBe(202);
    }
    const created = await inject('POST', '/v1/activities', {
      name: 'replay-crash',
      triggers: [{ type: 'event', event_type: 'replay.crash' }],
      tasks: [{ type: 'noop' }],
    });
    const activityId = created.json.id as string;

    const portA = 20_000 + Math.floor(Math.random() * 20_000);
    const first = spawnApiProcess(config, portA);
    spawned.push(first);
    await first.ready;
    const accepted = await fetch(`http://127.0.0.1:${portA}/v1/events/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'crash-replay' },
      body: JSON.stringify({
        filter: { event_type: 'replay.crash', from: since, to: new Date(Date.now() + 60_000).toISOString() },
      }),
    });
    expect(accepted.status).toBe(202);
    const bulk = (await accepted.json()) as { id: string; total: number };
    expect(bulk.total).toBe(EVENTS);
    // SIGKILL as soon as the first replayed route has started its run.
    await waitFor('process A started a replayed run', async () => {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND outcome IN ('started', 'duplicate')`,
        [activityId],
      );
      return rows[0].n > 0 ? true : undefined;
    });
    await killHard(first.child);
    const atCrash = await sql.query('SELECT status FROM bulk_replays WHERE id = $1', [bulk.id]);
    expect(atCrash.rows[0]).toEqual({ status: 'running' });

    // Process B takes over once A's lease lapses and finishes from the recorded cursor.
    const portB = portA + 1;
    const second = spawnApiProcess(config, portB);
    spawned.push(second);
    await second.ready;
    const done = await waitFor(
      'the bulk replay completed after the restart',
      async () => {
        const response = await fetch(`http://127.0.0.1:${portB}/v1/events/replay/${bulk.id}`);
        const body = (await response.json()) as { status: string };
        return body.status === 'completed' ? body : undefined;
      },
      90_000,
    );
    expect(done).toMatchObject({ total: EVENTS, processed: EVENTS });

    // Every event: one run under its own id, one workflow execution, its route started (or found started).
    await waitFor('every replayed run succeeded', async () => {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
        [activityId],
      );
      return rows[0].n === EVENTS ? true : undefined;
    });
    const { rows: runs } = await sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [
      activityId,
    ]);
    expect(runs.map((row: { workflow_id: string }) => row.workflow_id).sort()).toEqual(
      Array.from({ length: EVENTS }, (_, n) =>
        eventRunWorkflowId(activityId, `evt_crash_${String(n).padStart(2, '0')}`),
      ).sort(),
    );
    await waitFor('Temporal lists one execution per event', async () => {
      let count = 0;
      for await (const _ of client.workflow.list({ query: `WorkflowId STARTS_WITH "activity-${activityId}:"` }))
        count++;
      if (count > EVENTS) throw new Error(`${count} executions for ${EVENTS} events`);
      return count === EVENTS ? true : undefined;
    });
    const { rows: routes } = await sql.query(
      `SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome`,
      [activityId],
    );
    expect(routes.reduce((sum: number, row: { n: number }) => sum + row.n, 0)).toBe(EVENTS);
    expect(routes.every((row: { outcome: string }) => row.outcome === 'started' || row.outcome === 'duplicate')).toBe(
      true,
    );
    await stopGracefully(second.child);
  }, 180_000);
});
