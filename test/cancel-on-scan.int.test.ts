import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from './harness';

/**
 * The cancel_on scan at scale: many running runs of one activity, read a page
 * at a time with no transaction open, every evaluation of one event paid from
 * one budget. Runs are written straight into activity_runs (with their trigger
 * events) rather than started through Temporal: the scan reads only these
 * tables, and a thousand real runs would add minutes, not coverage. Their
 * workflows do not exist, so Temporal answers a cancellation with "not found"
 * (recorded as already_closed) — what is checked here is the scan's decision.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await stack?.close();
});

const getJson = async (url: string) => (await stack.api.server.inject({ method: 'GET', url })).json();

async function register(name: string, match: string): Promise<string> {
  const response = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name,
      triggers: [
        { type: 'event', event_type: `${name}.created`, cancel_on: [{ event_type: `${name}.cancelled`, match }] },
      ],
      tasks: [{ type: 'noop' }],
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id as string;
}

/** `count` running runs of the activity, oldest first, run i triggered by an event with order_id `O{i}`. */
async function runningRuns(activityId: string, name: string, count: number): Promise<string[]> {
  const eventIds = Array.from({ length: count }, (_, i) => `${name}-created-${i}`);
  const workflowIds = eventIds.map((eventId) => eventRunWorkflowId(activityId, eventId));
  await stack.sql.query(
    `INSERT INTO events (event_id, source, event_type, occurred_at, payload, fingerprint, id_origin, routing_state, routed_at)
     SELECT id, 'shop', $2::text, now(),
            jsonb_build_object('event_id', id, 'event_type', $2::text, 'source', 'shop',
                               'occurred_at', '2026-03-01T09:00:00Z', 'data', jsonb_build_object('order_id', 'O' || n)),
            'test', 'client', 'routed', now()
       FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`,
    [eventIds, `${name}.created`],
  );
  // order_id of event i is O{i+1} (ordinality counts from 1); created_at grows with i.
  await stack.sql.query(
    `INSERT INTO activity_runs (run_id, workflow_id, activity_id, activity_version, trigger_type, event_id, status, created_at)
     SELECT r, w, $3::uuid, 1, 'event', e, 'running', now() - make_interval(secs => ($4::int - n)::double precision)
       FROM unnest($1::uuid[], $2::text[], $5::text[]) WITH ORDINALITY AS t(r, w, e, n)`,
    [workflowIds.map(runIdFor), workflowIds, activityId, count, eventIds],
  );
  return workflowIds.map(runIdFor);
}

async function cancelling(name: string, eventId: string, data: object) {
  const response = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: `${name}.cancelled`,
      source: 'shop',
      occurred_at: '2026-03-01T09:00:00Z',
      data,
    },
  });
  expect(response.statusCode, response.body).toBe(202);
  return await waitFor(`${eventId} routed`, async () => {
    const log = await getJson(`/v1/events/${eventId}`);
    return log.routing_state === 'routed' ? log : undefined;
  });
}

describe('the cancel_on scan', () => {
  test('reaches runs past the first thousand: the newest of 1,200 running runs is cancelled, and the scan is not capped', async () => {
    const name = 'scan-many';
    const activityId = await register(name, 'event.data.order_id == trigger.event.data.order_id');
    const runs = await runningRuns(activityId, name, 1_200);

    const log = await cancelling(name, 'scan-many-cancel', { order_id: 'O1200' });
    expect(log.cancel_on.scans).toEqual([
      expect.objectContaining({ activity_id: activityId, examined: 1_200, capped: false, matched: 1, errors: 0 }),
    ]);
    expect(log.cancel_on.cancellations).toEqual([expect.objectContaining({ run_id: runs[1_199] })]);
  });

  test('pays every evaluation of one event from one budget: an expensive match over a large list examines a few runs, records the scan as capped, and the API keeps answering', async () => {
    const name = 'scan-costly';
    // What a bulk cancel looks like: the event lists the orders it cancels.
    const activityId = await register(name, 'event.data.order_ids.exists(id, id == trigger.event.data.order_id)');
    await runningRuns(activityId, name, 200);
    // About 240 KB of ids, none of which names a running order: every run costs a walk of the whole list.
    const orderIds = Array.from({ length: 20_000 }, (_, i) => `X${String(i).padStart(9, '0')}`);

    let health = 0;
    let scanning = true;
    const probe = (async () => {
      while (scanning) {
        if ((await stack.api.server.inject({ method: 'GET', url: '/healthz' })).statusCode === 200) health += 1;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const log = await cancelling(name, 'scan-costly-cancel', { order_ids: orderIds });
    scanning = false;
    await probe;

    const [scan] = log.cancel_on.scans;
    expect(scan).toMatchObject({ activity_id: activityId, capped: true, matched: 0 });
    // The budget pays for a handful of such walks, not 200 of them.
    expect(scan.examined).toBeGreaterThan(0);
    expect(scan.examined).toBeLessThan(200);
    expect(log.cancel_on.cancellations).toEqual([]);
    expect(health).toBeGreaterThan(0);
  });
});
