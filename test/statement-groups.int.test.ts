import { createDatabase, createEventsRepository, type Database, type NewRoute } from '@activity-core/db';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createTestDatabase } from './harness';

/**
 * Accepts, and the routing records written after Temporal's answers, asked
 * for in the same turn of the event loop share one statement and one commit.
 * Rows a transaction inserted or updated carry its id (`xmin`), so the number
 * of distinct `xmin`s among the events is the number of statements that last
 * wrote them.
 */
let testDatabase: Awaited<ReturnType<typeof createTestDatabase>>;
const opened: Database[] = [];

beforeEach(async () => {
  testDatabase = await createTestDatabase();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()));
  await testDatabase?.drop();
});

function open() {
  const database = createDatabase({ url: testDatabase.url, max: 4 });
  opened.push(database);
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
  workflowId: `activity-00000000-0000-4000-8000-000000000001:${id}`,
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
      workflowId: 'activity-00000000-0000-4000-8000-000000000002:settled',
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
    const admin = createDatabase({ url: testDatabase.url, max: 1 });
    opened.push(admin);
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
    const admin = createDatabase({ url: testDatabase.url, max: 2 });
    opened.push(admin);
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

/** A second route of an event, of another activity. */
const otherRoute = (id: string): NewRoute => ({
  ...route(id),
  activityId: '00000000-0000-4000-8000-000000000003',
  activityName: 'grouped-other',
  workflowId: `activity-00000000-0000-4000-8000-000000000003:${id}`,
  runId: '00000000-0000-5000-8000-' + Buffer.from(`o${id}`).toString('hex').slice(-12).padStart(12, '0'),
});

describe('routing records grouped into one statement', () => {
  /** Events accepted one by one, each with a route pending (and `both`: a second one). */
  async function acceptPending(accept: ReturnType<typeof open>['accept'], batch: readonly string[], both = false) {
    for (const id of batch)
      expect((await accept(id, { routes: both ? [route(id), otherRoute(id)] : [route(id)] })).kind).toBe('accepted');
  }
  const state = async (database: Database, id: string) => {
    const { rows } = await database.pool.query<{
      routing_state: string;
      last_error: string | null;
      retry_due: boolean;
    }>(
      `SELECT routing_state, last_error, next_attempt_at > now() + interval '30 minutes' AS retry_due FROM events WHERE event_id = $1`,
      [id],
    );
    const routes = await database.pool.query<{ activity_id: string; outcome: string }>(
      'SELECT activity_id, outcome FROM event_routes WHERE event_id = $1 ORDER BY activity_id',
      [id],
    );
    return { ...rows[0]!, routes: routes.rows.map((r) => r.outcome) };
  };
  const deadlocks = async (database: Database) =>
    Number(
      (
        await database.pool.query<{ n: string }>(
          'SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = current_database()',
        )
      ).rows[0]!.n,
    );

  test('routing records asked for together are written by one statement, each event routed with its own answers', async () => {
    const { accept, events, database, transactions } = open();
    const batch = ids('settle', 10);
    await acceptPending(accept, batch);
    expect(await transactions(batch)).toBe(10);
    const outcome = (i: number) => (i % 2 === 0 ? 'started' : 'duplicate');
    const routed = await Promise.all(
      batch.map((id, i) => events.settle(id, [{ activityId: route(id).activityId, outcome: outcome(i) }])),
    );
    expect(routed).toEqual(batch.map(() => true));
    for (const [i, id] of batch.entries())
      expect(await state(database, id)).toMatchObject({
        routing_state: 'routed',
        last_error: null,
        routes: [outcome(i)],
      });
    expect(await transactions(batch)).toBe(1);
  });

  test('an event with a route still pending stays pending, while the events grouped with it are routed', async () => {
    const { accept, events, database } = open();
    await acceptPending(accept, ['half'], true);
    await acceptPending(accept, ['whole-1', 'whole-2']);
    const routed = await Promise.all([
      events.settle('whole-1', [{ activityId: route('whole-1').activityId, outcome: 'started' }]),
      events.settle('half', [{ activityId: route('half').activityId, outcome: 'started' }]),
      events.settle('whole-2', [{ activityId: route('whole-2').activityId, outcome: 'started' }]),
    ]);
    expect(routed).toEqual([true, false, true]);
    expect(await state(database, 'half')).toMatchObject({ routing_state: 'pending', routes: ['started', 'pending'] });
    // The second route's record, grouped with a fresh event's, routes the event.
    await acceptPending(accept, ['later']);
    const after = await Promise.all([
      events.settle('half', [{ activityId: otherRoute('half').activityId, outcome: 'duplicate' }]),
      events.settle('later', [{ activityId: route('later').activityId, outcome: 'started' }]),
    ]);
    expect(after).toEqual([true, true]);
    expect(await state(database, 'half')).toMatchObject({ routing_state: 'routed', routes: ['started', 'duplicate'] });
  });

  test('a settled route keeps its first answer and an event already routed is not routed again', async () => {
    const { accept, events, database } = open();
    await acceptPending(accept, ['once']);
    const activityId = route('once').activityId;
    expect(await events.settle('once', [{ activityId, outcome: 'started' }])).toBe(true);
    const [again] = await Promise.all([
      events.settle('once', [{ activityId, outcome: 'duplicate' }]),
      events.settle('unknown-event', [{ activityId, outcome: 'started' }]),
    ]);
    expect(again).toBe(false);
    expect(await state(database, 'once')).toMatchObject({ routing_state: 'routed', routes: ['started'] });
  });

  test('a failed attempt records the failure and its retry time, and keeps the answers Temporal gave', async () => {
    const { accept, events, database } = open();
    await acceptPending(accept, ['failing'], true);
    const routed = await events.settle('failing', [{ activityId: route('failing').activityId, outcome: 'started' }], {
      message: 'Temporal unreachable',
      retryInMs: 3_600_000,
    });
    expect(routed).toBe(false);
    expect(await state(database, 'failing')).toEqual({
      routing_state: 'pending',
      last_error: 'Temporal unreachable',
      retry_due: true,
      routes: ['started', 'pending'],
    });
  });

  test("an event held up past the operator's lock timeout fails alone: the records grouped with it are written", async () => {
    const admin = createDatabase({ url: testDatabase.url, max: 1 });
    opened.push(admin);
    const { accept, database } = open();
    await acceptPending(accept, ['free-1', 'held', 'free-2']);
    await admin.pool.query(`ALTER DATABASE ${testDatabase.name} SET lock_timeout = '300ms'`);
    const { events: lockedOut } = open();
    // Another session holds the event's row and has not committed: the routing record waits on it.
    const blocker = await admin.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM events WHERE event_id = 'held' FOR UPDATE`);
      const settled = await Promise.allSettled(
        ['free-1', 'held', 'free-2'].map((id) =>
          lockedOut.settle(id, [{ activityId: route(id).activityId, outcome: 'started' }]),
        ),
      );
      expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({
        cause: expect.objectContaining({ code: '55P03' }),
      });
      await blocker.query('ROLLBACK');
    } finally {
      blocker.release();
    }
    expect((await state(database, 'free-1')).routing_state).toBe('routed');
    expect(await state(database, 'held')).toMatchObject({ routing_state: 'pending', routes: ['pending'] });
    expect((await state(database, 'free-2')).routing_state).toBe('routed');
  });

  test('two processes writing the same routing records at once, in opposite orders, route each event and never deadlock', async () => {
    const admin = createDatabase({ url: testDatabase.url, max: 2 });
    opened.push(admin);
    const first = open();
    const second = open();
    const batch = ids('settle-race', 9);
    await acceptPending(first.accept, batch, true);
    const before = await deadlocks(admin);
    const settle = (side: typeof first, id: string) =>
      side.events.settle(id, [
        { activityId: route(id).activityId, outcome: 'started' },
        { activityId: otherRoute(id).activityId, outcome: 'started' },
      ]);
    // Another session holds the middle event, so both statements are under way, one from each end, when it lets go.
    const blocker = await admin.pool.connect();
    let results: [boolean[], boolean[]];
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM events WHERE event_id = $1 FOR UPDATE', [batch[4]]);
      const both = Promise.all([
        Promise.all(batch.map((id) => settle(first, id))),
        Promise.all([...batch].reverse().map((id) => settle(second, id))),
      ]);
      let waiting = 0;
      for (let tries = 0; waiting < 2 && tries < 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        const { rows } = await admin.pool.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%jsonb_to_recordset%'`,
        );
        waiting = Number(rows[0]!.n);
      }
      expect(waiting).toBe(2);
      await blocker.query('ROLLBACK');
      results = await both;
    } finally {
      blocker.release();
    }
    // Each event is routed by exactly one of the two records.
    const [a, b] = results;
    for (const [i] of batch.entries()) expect([a[i], b[batch.length - 1 - i]].sort()).toEqual([false, true]);
    for (const id of batch)
      expect(await state(first.database, id)).toMatchObject({
        routing_state: 'routed',
        routes: ['started', 'started'],
      });
    expect(await deadlocks(admin)).toBe(before);
  });
});
