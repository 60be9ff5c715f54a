import { createEventsRepository, type NewRoute } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { databasePerTest } from './harness';
import { eventRunWorkflowId } from '@activity-core/contracts/ids';

/**
 * Accepts asked for in the same turn of the event loop share one statement
 * and one commit. Rows a transaction inserted carry its id (`xmin`), so the
 * number of distinct `xmin`s among the stored events is the number of
 * statements that stored them.
 */
const testDatabase = databasePerTest();

function open() {
  const database = testDatabase.connect(4);
  const events = createEventsRepository(database.db, { statements: database.statements });
  const accept = (
    id: string,
    options: {
      data?: unknown;
      fingerprint?: string;
      routes?: NewRoute[];
      definitionsVersion?: bigint;
      webhookSourcesVersion?: bigint;
    } = {},
  ) =>
    events.accept({
      envelope: {
        event_id: id,
        event_type: 'group.test',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00.000Z',
        data: (options.data ?? { id }) as Record<string, unknown>,
      },
      fingerprint: options.fingerprint ?? `fingerprint-${id}`,
      idOrigin: 'body',
      routes: options.routes ?? [],
      leaseMs: 30_000,
      ...(options.definitionsVersion === undefined ? {} : { definitionsVersion: options.definitionsVersion }),
      ...(options.webhookSourcesVersion === undefined ? {} : { webhookSourcesVersion: options.webhookSourcesVersion }),
    });
  const transactions = async (ids: readonly string[]) =>
    Number(
      (
        await database.pool.query<{ n: string }>(
          'SELECT count(DISTINCT xmin::text) AS n FROM events WHERE event_id = ANY($1)',
          [ids],
        )
      ).rows[0]!.n,
    );
  const stored = async () =>
    (await database.pool.query<{ event_id: string }>('SELECT event_id FROM events ORDER BY event_id')).rows.map(
      (row) => row.event_id,
    );
  return { database, events, accept, transactions, stored };
}

/** A route with a run due (outcome `pending`), its ids derived from the event's. */
/** Begins a transaction on `client` that inserts event `eventId` and leaves it uncommitted: an accept of that id waits on it. */
async function insertUncommitted(
  client: { query(text: string, values?: unknown[]): Promise<unknown> },
  eventId: string,
): Promise<void> {
  await client.query('BEGIN');
  await client.query(
    `INSERT INTO events (event_id, source, event_type, occurred_at, payload, fingerprint, id_origin)
     VALUES ($1, 'tests', 'group.test', now(), '{}', 'x', 'body')`,
    [eventId],
  );
}

const route = (id: string): NewRoute => ({
  activityId: '00000000-0000-4000-8000-000000000001',
  activityVersion: 1,
  activityName: 'grouped',
  workflowId: eventRunWorkflowId('00000000-0000-4000-8000-000000000001', id),
  runId: '00000000-0000-5000-8000-' + Buffer.from(id).toString('hex').slice(-12).padStart(12, '0'),
});

const ids = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);

describe('accepts grouped into one statement', () => {
  test('accepts asked for together are stored by one statement, each with its own answer and its own routes', async () => {
    const { accept, transactions } = open();
    const batch = ids('together', 10);
    const results = await Promise.all(batch.map((id) => accept(id, { routes: [route(id)] })));
    expect(results.map((result) => result.kind)).toEqual(batch.map(() => 'accepted'));
    for (const [i, result] of results.entries()) {
      if (result.kind !== 'accepted') throw new Error('unreachable');
      expect(result.event.eventId).toBe(batch[i]);
      expect(result.event.routingState).toBe('pending');
      expect(result.routes.map((r) => [r.eventId, r.workflowId])).toEqual([[batch[i], route(batch[i]!).workflowId]]);
    }
    expect(await transactions(batch)).toBe(1);

    // Sent one after the other, each is its own statement.
    const apart = ids('apart', 3);
    for (const id of apart) expect((await accept(id)).kind).toBe('accepted');
    expect(await transactions(apart)).toBe(3);
  });

  test('a group answers new events, redeliveries, changed content and stale counters each on its own, in one statement', async () => {
    const { accept, database, transactions } = open();
    expect((await accept('known')).kind).toBe('accepted');
    expect((await accept('changed')).kind).toBe('accepted');
    const counter = async (table: string) =>
      BigInt(
        (await database.pool.query<{ version: string }>(`SELECT version::text FROM ${table} WHERE id = 1`)).rows[0]!
          .version,
      );
    const stamp = await counter('definitions_version');
    const sources = await counter('webhook_sources_version');
    const filtered: NewRoute = {
      activityId: '00000000-0000-4000-8000-000000000002',
      activityVersion: 1,
      activityName: 'filtered-out',
      workflowId: eventRunWorkflowId('00000000-0000-4000-8000-000000000002', 'settled'),
      runId: '00000000-0000-5000-8000-000000000002',
      outcome: 'filtered',
      detail: 'the filter was false',
    };
    const results = await Promise.all([
      accept('fresh', { routes: [route('fresh')] }),
      accept('known'),
      accept('changed', { fingerprint: 'another' }),
      accept('stale', { definitionsVersion: stamp + 1n }),
      accept('current', { definitionsVersion: stamp, routes: [route('current')] }),
      accept('settled', { routes: [filtered] }),
      accept('stale-sources', { webhookSourcesVersion: sources + 1n }),
      accept('current-sources', { webhookSourcesVersion: sources, routes: [route('current-sources')] }),
    ]);
    expect(results.map((result) => result.kind)).toEqual([
      'accepted',
      'duplicate',
      'fingerprint_mismatch',
      'stale_definitions',
      'accepted',
      'accepted',
      'stale_webhook_sources',
      'accepted',
    ]);
    expect(results[3]).toEqual({ kind: 'stale_definitions', version: stamp });
    const state = (i: number) =>
      results[i]!.kind === 'accepted'
        ? (results[i] as { event: { routingState: string } }).event.routingState
        : undefined;
    // Each event's routing state is its own: one with no run due is routed at once, the others wait for routing.
    expect([state(0), state(4), state(5), state(7)]).toEqual(['pending', 'pending', 'routed', 'pending']);
    expect(await transactions(['fresh', 'current', 'settled', 'current-sources'])).toBe(1);
  });

  test('the same id twice at once is stored once: the deliveries go in different statements, one accepted, the other its duplicate', async () => {
    const { accept, stored, transactions } = open();
    const results = await Promise.all([accept('twice'), accept('other'), accept('twice')]);
    expect(results[1]!.kind).toBe('accepted');
    // The two statements run side by side; either delivery may be the one stored.
    expect([results[0]!.kind, results[2]!.kind].sort()).toEqual(['accepted', 'duplicate']);
    expect(await stored()).toEqual(['other', 'twice']);
    expect(await transactions(['other', 'twice'])).toBe(results[0]!.kind === 'accepted' ? 1 : 2);
  });

  test('more accepts at once than a statement holds go out as several statements, none lost', async () => {
    const { accept, transactions, stored } = open();
    const batch = ids('many', 70);
    const results = await Promise.all(batch.map((id) => accept(id)));
    expect(results.every((result) => result.kind === 'accepted')).toBe(true);
    expect(await stored()).toEqual(batch);
    expect(await transactions(batch)).toBe(3);
  });

  test("a value Postgres refuses fails only its own event: the group's other events are stored", async () => {
    const { accept, stored } = open();
    const settled = await Promise.allSettled([
      accept('fine-1'),
      accept('nul', { data: { text: 'a\u0000b' } }),
      accept('fine-2'),
    ]);
    expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({
      cause: expect.objectContaining({ code: '22P05' }),
    });
    expect(await stored()).toEqual(['fine-1', 'fine-2']);
  });

  test("an event held up past the operator's lock timeout fails alone: the events grouped with it are stored", async () => {
    const admin = testDatabase.connect(1);
    await admin.pool.query(`ALTER DATABASE ${testDatabase.name} SET lock_timeout = '300ms'`);
    const { accept, stored } = open();
    // Another session is inserting the same id and has not committed: the accept's insert waits on it.
    const blocker = await admin.pool.connect();
    try {
      await insertUncommitted(blocker, 'held');
      const settled = await Promise.allSettled([accept('free-1'), accept('held'), accept('free-2')]);
      expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({
        cause: expect.objectContaining({ code: '55P03' }),
      });
      await blocker.query('ROLLBACK');
    } finally {
      blocker.release();
    }
    expect(await stored()).toEqual(['free-1', 'free-2']);
  });

  test("a connection lost under a group is every event's answer, and their retries store each event once", async () => {
    const admin = testDatabase.connect(2);
    const { accept, stored } = open();
    // Another session is inserting one of the ids and has not committed: the group's statement waits on it.
    const blocker = await admin.pool.connect();
    try {
      await insertUncommitted(blocker, 'waited');
      const pending = Promise.allSettled([accept('lost-1'), accept('waited'), accept('lost-2')]);
      // The group's backend, waiting on the blocker's lock, is ended: its connection is lost without an answer.
      let ended = 0;
      for (let tries = 0; ended === 0 && tries < 100; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const { rows } = await admin.pool.query<{ ended: boolean }>(
          `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%jsonb_to_recordset%'`,
        );
        ended = rows.length;
      }
      expect(ended).toBe(1);
      const settled = await pending;
      expect(settled.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
      const reasons = settled.map((result) => (result as PromiseRejectedResult).reason);
      expect(new Set(reasons).size).toBe(1);
      await blocker.query('ROLLBACK');
    } finally {
      blocker.release();
    }
    expect(await stored()).toEqual([]);
    const retried = await Promise.all([accept('lost-1'), accept('waited'), accept('lost-2')]);
    expect(retried.map((result) => result.kind)).toEqual(['accepted', 'accepted', 'accepted']);
    const again = await Promise.all([accept('lost-1'), accept('waited'), accept('lost-2')]);
    expect(again.map((result) => result.kind)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(await stored()).toEqual(['lost-1', 'lost-2', 'waited']);
  });

  test('two processes accepting the same ids at once, in opposite orders, store each once and never deadlock', async () => {
    const first = open();
    const second = open();
    const batch = ids('race', 30);
    const [a, b] = await Promise.all([
      Promise.all(batch.map((id) => first.accept(id))),
      Promise.all([...batch].reverse().map((id) => second.accept(id))),
    ]);
    const kinds = new Map<string, string[]>();
    for (const [i, result] of a.entries()) kinds.set(batch[i]!, [result.kind]);
    for (const [i, result] of b.entries()) kinds.get(batch[batch.length - 1 - i]!)!.push(result.kind);
    for (const [, pair] of kinds) expect(pair.sort()).toEqual(['accepted', 'duplicate']);
    expect(await first.stored()).toEqual(batch);
  });
});
