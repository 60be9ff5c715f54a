import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId } from '@activity-core/contracts';
import { startCrashStack, type CrashStack } from './crash-stack';
import { waitFor } from './harness';
import { killHard, spawnApiProcess, stopGracefully } from './worker-process';

const EVENTS = 40;
const eventId = (n: number) => `evt_dl_crash_${String(n).padStart(2, '0')}`;

describe('a dead-letter retry when the API carrying it out is SIGKILLed', () => {
  let stack: CrashStack;
  beforeAll(async () => {
    stack = await startCrashStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('what it reopened is started by the dispatcher after its lease, the rest by a second retry: every event runs exactly once', async () => {
    // The stack's own API process's dispatcher is the one that finishes what the killed process reopened.
    const { config, client, sql, spawned, inject } = stack;

    // A filter that fails on every event's data: 40 filter_error dead letters; then the filter is fixed.
    const definition = (filter: string) => ({
      name: 'dead-letter-crash',
      triggers: [{ type: 'event', event_type: 'dl.crash', filter }],
      tasks: [{ type: 'noop' }],
    });
    const created = await inject('POST', '/v1/activities', definition('data.order.amount > 10'));
    const activityId = created.json.id as string;
    for (let n = 0; n < EVENTS; n++) {
      const sent = await inject('POST', '/v1/events', {
        event_id: eventId(n),
        event_type: 'dl.crash',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { amount: 50 },
      });
      expect(sent.status).toBe(202);
    }
    expect((await inject('GET', `/v1/dead-letters?activity_id=${activityId}&limit=200`)).json.items).toHaveLength(
      EVENTS,
    );
    expect((await inject('PUT', `/v1/activities/${activityId}`, definition('data.amount > 10'))).status).toBe(200);

    // Process A retries all 40 and is SIGKILLed as soon as the first retried route has started its run.
    const portA = 20_000 + Math.floor(Math.random() * 20_000);
    const first = spawnApiProcess(config, portA);
    spawned.push(first);
    await first.ready;
    const retry = fetch(`http://127.0.0.1:${portA}/v1/dead-letters/retry`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ filter: { activity_id: activityId } }),
    }).catch(() => undefined);
    await waitFor('process A started a retried run', async () => {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND outcome IN ('started', 'duplicate')`,
        [activityId],
      );
      return rows[0].n > 0 ? true : undefined;
    });
    await killHard(first.child);
    await retry;
    const { rows: atCrash } = await sql.query(
      `SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome`,
      [activityId],
    );
    const left = atCrash.find((row: { outcome: string }) => row.outcome === 'filter_error')?.n ?? 0;
    expect(left, JSON.stringify(atCrash)).toBeLessThan(EVENTS);

    // The rest, retried again: those still dead letters start now; routes A reopened are left to the dispatcher.
    const again = await inject('POST', '/v1/dead-letters/retry', { filter: { activity_id: activityId } });
    expect(again.status).toBe(200);
    expect(again.json.retried).toHaveLength(left);

    await waitFor(
      'every event ran once',
      async () => {
        const { rows } = await sql.query(
          `SELECT count(*)::int AS n FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
          [activityId],
        );
        return rows[0].n === EVENTS ? true : undefined;
      },
      90_000,
    );
    const { rows: runs } = await sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1', [
      activityId,
    ]);
    expect(runs.map((row: { workflow_id: string }) => row.workflow_id).sort()).toEqual(
      Array.from({ length: EVENTS }, (_, n) => eventRunWorkflowId(activityId, eventId(n))).sort(),
    );
    await waitFor('Temporal lists one execution per event', async () => {
      let count = 0;
      for await (const _ of client.workflow.list({ query: `WorkflowId STARTS_WITH "activity-${activityId}:"` }))
        count++;
      if (count > EVENTS) throw new Error(`${count} executions for ${EVENTS} events`);
      return count === EVENTS ? true : undefined;
    });
    await waitFor('every route settled', async () => {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND outcome IN ('started', 'duplicate')`,
        [activityId],
      );
      return rows[0].n === EVENTS ? true : undefined;
    });
    expect((await inject('GET', `/v1/dead-letters?activity_id=${activityId}`)).json.items).toEqual([]);
    // A third retry of them all finds no dead letter and starts nothing.
    expect((await inject('POST', '/v1/dead-letters/retry', { filter: { activity_id: activityId } })).json).toEqual({
      retried: [],
      more: false,
    });
    await stopGracefully(first.child).catch(() => undefined);
  }, 180_000);
});
