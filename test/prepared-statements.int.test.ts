import { createDatabase, createEventsRepository, type Database } from '@activity-core/db';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createTestDatabase } from './harness';

/**
 * The accept of an event runs as a named prepared statement (ADR 0049): each
 * connection parses it once and Postgres plans it from its plan cache. One
 * pooled connection per test, so what it prepared can be read back from
 * `pg_prepared_statements`, which is per session.
 */
let testDatabase: Awaited<ReturnType<typeof createTestDatabase>>;
let database: Database | undefined;

beforeEach(async () => {
  testDatabase = await createTestDatabase();
});
afterEach(async () => {
  await database?.close();
  database = undefined;
  await testDatabase?.drop();
});

const envelope = (id: string) => ({
  event_id: id,
  event_type: 'prepared.test',
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00.000Z',
  data: { id },
});

function open(options: { preparedStatements?: boolean; onPreparedStatementsOff?: (error: unknown) => void } = {}) {
  database = createDatabase({ url: testDatabase.url, max: 1, ...options });
  const events = createEventsRepository(database.db, { statements: database.statements });
  const accept = (id: string) =>
    events.accept({
      envelope: envelope(id),
      fingerprint: `fingerprint-${id}`,
      idOrigin: 'body',
      routes: [],
      leaseMs: 30_000,
    });
  const prepared = async () =>
    (await database!.pool.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map(
      (row) => row.name,
    );
  const stored = async () =>
    (await database!.pool.query<{ event_id: string }>('SELECT event_id FROM events ORDER BY event_id')).rows.map(
      (row) => row.event_id,
    );
  return { events, accept, prepared, stored };
}

describe('named prepared statements', () => {
  test('the accept and the two variants of the routing record run as named statements, parsed once by the connection however often they run', async () => {
    const { events, accept, prepared } = open();
    expect((await accept('a')).kind).toBe('accepted');
    expect((await accept('a')).kind).toBe('duplicate');
    expect((await accept('b')).kind).toBe('accepted');
    expect(await events.settle('a', [])).toBe(false);
    expect(await events.settle('b', [], { message: 'temporal refused', retryInMs: 1_000 })).toBe(false);
    expect(await events.settle('b', [], { message: 'temporal refused again', retryInMs: 2_000 })).toBe(false);
    // Each name carries a hash of its statement's text: the two settle variants have two names.
    const names = await prepared();
    expect(names).toHaveLength(3);
    expect(names[0]).toMatch(/^ac_events_accept_[0-9a-f]{16}$/);
    expect(names.slice(1)).toEqual([
      expect.stringMatching(/^ac_events_settle_[0-9a-f]{16}$/),
      expect.stringMatching(/^ac_events_settle_[0-9a-f]{16}$/),
    ]);
    expect(names[1]).not.toBe(names[2]);
    expect(database!.statements.prepared).toBe(true);
  });

  test('with DATABASE_PREPARED_STATEMENTS off nothing is prepared and the accept answers the same', async () => {
    const { accept, prepared } = open({ preparedStatements: false });
    expect((await accept('a')).kind).toBe('accepted');
    expect((await accept('a')).kind).toBe('duplicate');
    expect(await prepared()).toEqual([]);
    expect(database!.statements.prepared).toBe(false);
  });

  test('a connection that forgets its statements, as a pooler without support for them does, turns them off once and loses or doubles nothing', async () => {
    const offs: unknown[] = [];
    const { accept, prepared, stored } = open({ onPreparedStatementsOff: (error) => offs.push(error) });
    expect((await accept('before')).kind).toBe('accepted');
    // The server forgets; the driver still believes the statement is parsed and sends only Bind: 26000.
    await database!.pool.query('DEALLOCATE ALL');

    expect((await accept('after')).kind).toBe('accepted');
    expect((await accept('after')).kind).toBe('duplicate');
    expect((await accept('later')).kind).toBe('accepted');

    expect(offs).toHaveLength(1);
    expect(offs[0]).toMatchObject({ cause: expect.objectContaining({ code: '26000' }) });
    expect(database!.statements.prepared).toBe(false);
    expect(await prepared()).toEqual([]);
    expect(await stored()).toEqual(['after', 'before', 'later']);
  });
});
