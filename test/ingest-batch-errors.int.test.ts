import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from './harness';

let stack: TestStack;
let activityId: string;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name: 'batch-errors',
      triggers: [{ type: 'event', event_type: 'batch.err' }],
      tasks: [{ type: 'noop' }],
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  activityId = created.json().id as string;
});
afterAll(async () => {
  await stack?.close();
});

/**
 * A fault the ingress does not know: Postgres refuses to store one event
 * (a trigger raising a plain exception, SQLSTATE P0001) for events whose data
 * says `explode`. Everything else about the stack is real.
 */
async function breakStoringExplodingEvents(): Promise<void> {
  await stack.sql.query(`
    CREATE OR REPLACE FUNCTION test_explode() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.payload->'data' ? 'explode' THEN RAISE EXCEPTION 'test fault for %', NEW.event_id; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_explode BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION test_explode();
  `);
}
async function repairStoring(): Promise<void> {
  await stack.sql.query('DROP TRIGGER IF EXISTS test_explode ON events');
}

const item = (data: object = {}) => ({
  event_type: 'batch.err',
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});
const postBatch = (payload: object[], headers: Record<string, string> = {}) =>
  stack.api.server.inject({ method: 'POST', url: '/v1/events', payload, headers });
const statusOf = (result: { ok: boolean; status?: number }) => (result.ok ? 202 : result.status);

async function routesFor(prefix: string): Promise<Array<{ event_id: string; n: number }>> {
  const { rows } = await stack.sql.query(
    'SELECT event_id, count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND event_id LIKE $2 GROUP BY event_id ORDER BY event_id',
    [activityId, `${prefix}%`],
  );
  return rows;
}

describe('batches after an error', () => {
  test('an unexpected error in one item is answered for that item only, and the other items are acknowledged', async () => {
    await breakStoringExplodingEvents();
    try {
      const response = await postBatch([item({ n: 1 }), item({ explode: true }), item({ n: 3 })], {
        'idempotency-key': 'batch-k1',
      });
      expect(response.statusCode, response.body).toBe(202);
      const results = response.json().results;
      expect(results.map(statusOf)).toEqual([202, 500, 202]);
      expect(results[1]).toMatchObject({ index: 1, ok: false, title: 'internal', event_id: 'batch-k1#1' });
      expect(JSON.stringify(results[1])).not.toContain('test fault');
      expect(results[0]).toMatchObject({ event_id: 'batch-k1#0', status: 'accepted' });
    } finally {
      await repairStoring();
    }
    expect(await routesFor('batch-k1#')).toEqual([
      { event_id: 'batch-k1#0', n: 1 },
      { event_id: 'batch-k1#2', n: 1 },
    ]);
  });

  test('resending the same batch under the same Idempotency-Key stores the failed item once and doubles nothing', async () => {
    const response = await postBatch([item({ n: 1 }), item({ explode: true }), item({ n: 3 })], {
      'idempotency-key': 'batch-k1',
    });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().results.map((result: { status: string }) => result.status)).toEqual([
      'duplicate',
      'accepted',
      'duplicate',
    ]);
    expect(await routesFor('batch-k1#')).toEqual([
      { event_id: 'batch-k1#0', n: 1 },
      { event_id: 'batch-k1#1', n: 1 },
      { event_id: 'batch-k1#2', n: 1 },
    ]);
  });

  test('without an Idempotency-Key a failed item carries the id it was assigned, and resending it with that id is safe', async () => {
    await breakStoringExplodingEvents();
    let assigned: string;
    try {
      const response = await postBatch([item({ explode: true, k: 'no-key' })]);
      expect(response.statusCode, response.body).toBe(202);
      const [failed] = response.json().results;
      expect(failed).toMatchObject({ ok: false, status: 500, event_id: expect.stringMatching(/^evt_/) });
      assigned = failed.event_id as string;
    } finally {
      await repairStoring();
    }
    for (let attempt = 0; attempt < 2; attempt++) {
      const resent = await postBatch([{ ...item({ explode: true, k: 'no-key' }), event_id: assigned }]);
      expect(resent.json().results[0]).toMatchObject({
        ok: true,
        event_id: assigned,
        status: attempt === 0 ? 'accepted' : 'duplicate',
      });
    }
    expect(await routesFor(assigned)).toEqual([{ event_id: assigned, n: 1 }]);
  });

  test('a single event keeps its behaviour: an unexpected error is a 500 for the request', async () => {
    await breakStoringExplodingEvents();
    try {
      const response = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: { ...item({ explode: true }), event_id: 'single-explode' },
      });
      expect(response.statusCode).toBe(500);
      expect(response.headers['content-type']).toContain('application/problem+json');
    } finally {
      await repairStoring();
    }
  });
});

describe('one status per cause', () => {
  test('a batch item refused for a cause gets the status a single event refused for the same cause gets', async () => {
    const stored = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...item({ v: 1 }), event_id: 'same-cause-reused' },
    });
    expect(stored.statusCode, stored.body).toBe(202);
    const causes: Array<{ cause: string; event: object; status: number }> = [
      {
        cause: 'an envelope missing its source',
        event: { event_type: 'batch.err', occurred_at: '2026-03-01T09:00:00Z' },
        status: 400,
      },
      { cause: 'a reserved source', event: { ...item(), source: 'webhook:github' }, status: 400 },
      { cause: 'a reserved event id', event: { ...item(), event_id: 'emit-abc:0' }, status: 400 },
      {
        cause: 'text Postgres cannot store',
        event: { ...item({ note: 'a\u0000b' }), event_id: 'same-cause-nul' },
        status: 400,
      },
      {
        cause: 'data over EVENT_DATA_LIMIT_BYTES',
        event: { ...item({ blob: 'x'.repeat(300 * 1024) }), event_id: 'same-cause-large' },
        status: 413,
      },
      {
        cause: 'an event id reused with other content',
        event: { ...item({ v: 2 }), event_id: 'same-cause-reused' },
        status: 422,
      },
    ];
    for (const { cause, event, status } of causes) {
      const single = await stack.api.server.inject({ method: 'POST', url: '/v1/events', payload: event });
      const batch = await postBatch([event]);
      expect(batch.statusCode, `${cause}: ${batch.body}`).toBe(202);
      const [result] = batch.json().results;
      expect({ cause, single: single.statusCode, item: result.status }).toEqual({
        cause,
        single: status,
        item: status,
      });
    }
    const { rows } = await stack.sql.query(
      `SELECT event_id FROM events WHERE event_id LIKE 'same-cause-%' OR event_id = 'emit-abc:0' ORDER BY event_id`,
    );
    expect(rows).toEqual([{ event_id: 'same-cause-reused' }]);
  });
});

describe('text Postgres cannot store', () => {
  test('a NUL character is refused before the database with a 400 naming the string that holds it', async () => {
    const inData = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...item({ items: [{ note: 'ok' }, { note: 'a\u0000b' }] }), event_id: 'nul-in-data' },
    });
    expect(inData.statusCode, inData.body).toBe(400);
    expect(inData.json().errors).toEqual([
      { path: 'data.items[1].note', message: expect.stringContaining('U+0000'), code: 'nul_character' },
    ]);
    const inSubject = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { ...item(), subject: 'order\u00007', event_id: 'nul-in-subject' },
    });
    expect(inSubject.statusCode, inSubject.body).toBe(400);
    expect(inSubject.json().errors).toEqual([
      { path: 'subject', message: expect.stringContaining('U+0000'), code: 'nul_character' },
    ]);
    const { rows } = await stack.sql.query(`SELECT event_id FROM events WHERE event_id LIKE 'nul-in-%'`);
    expect(rows).toEqual([]);
  });
});
