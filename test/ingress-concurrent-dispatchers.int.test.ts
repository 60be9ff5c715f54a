import { Writable } from 'node:stream';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { createDatabase, createEventsRepository, type Database } from '@activity-core/db';
import { eventFingerprint } from '@activity-core/router';
import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import { createTestDatabase, testConfig, waitFor, testPool } from './harness';

/**
 * Two API processes' worth of dispatchers (two complete API apps, each with
 * its own pool and Temporal client) on one database, draining one backlog.
 */
const EVENTS = 200;

interface Decision {
  app: 'a' | 'b';
  workflowId: string;
  outcome: 'started' | 'duplicate';
}

/** Collects the ingest's "run started" / "duplicate" log lines of one app: every start attempt Temporal answered. */
function decisionLog(app: 'a' | 'b', into: Decision[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        const entry = JSON.parse(line) as { msg?: string; workflowId?: string; outcome?: 'started' | 'duplicate' };
        if (entry.outcome !== undefined && entry.workflowId !== undefined)
          into.push({ app, workflowId: entry.workflowId, outcome: entry.outcome });
      }
      done();
    },
  });
}

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let a: ApiApp;
let b: ApiApp;
let direct: Database;
let sql: pg.Pool;
let connection: Connection;
const decisions: Decision[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  const config = testConfig(database.url);
  const options = { dispatcher: false, dispatcherIntervalMs: 100, dispatcherBatchSize: 10 } as const;
  a = await createApiApp(config, { ...options, logger: { level: 'info', stream: decisionLog('a', decisions) } });
  b = await createApiApp(config, { ...options, logger: { level: 'info', stream: decisionLog('b', decisions) } });
  direct = createDatabase({ url: database.url, max: 4 });
  sql = testPool(database.url, 2);
  connection = await Connection.connect({ address: config.temporal.address });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await direct?.close();
  await sql?.end();
  await connection?.close();
  await database?.drop();
});

describe('several dispatchers', () => {
  test('two API processes draining one backlog route each event exactly once', async () => {
    const registered = await a.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'two-dispatchers',
        triggers: [{ type: 'event', event_type: 'dispatch.race' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(registered.statusCode).toBe(201);
    const activityId: string = registered.json().id;

    // A backlog as an API process leaves it when it dies between accept and
    // start: accepted, routes decided, nothing started, due at once.
    const events = createEventsRepository(direct.db);
    for (let i = 0; i < EVENTS; i++) {
      const envelope = {
        event_id: `race-${i}`,
        event_type: 'dispatch.race',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { i },
      };
      const workflowId = eventRunWorkflowId(activityId, envelope.event_id);
      await events.accept({
        envelope,
        fingerprint: eventFingerprint(envelope),
        idOrigin: 'body',
        routes: [
          { activityId, activityVersion: 1, activityName: 'two-dispatchers', workflowId, runId: runIdFor(workflowId) },
        ],
        leaseMs: 0,
      });
    }

    a.dispatcher.start();
    b.dispatcher.start();

    await waitFor(
      'the backlog to drain',
      async () => {
        const result = await sql.query(`SELECT count(*)::int AS n FROM events WHERE routing_state = 'routed'`);
        return result.rows[0].n === EVENTS ? true : undefined;
      },
      60_000,
    );

    // Every start attempt Temporal answered, from either process: one per event, none refused as a duplicate.
    const started = decisions.filter((d) => d.outcome === 'started');
    expect(decisions.filter((d) => d.outcome === 'duplicate')).toEqual([]);
    expect(started).toHaveLength(EVENTS);
    expect(new Set(started.map((d) => d.workflowId)).size).toBe(EVENTS);
    // Both processes really took part.
    const byA = started.filter((d) => d.app === 'a').length;
    expect(byA).toBeGreaterThan(0);
    expect(EVENTS - byA).toBeGreaterThan(0);

    const outcomes = await sql.query(`SELECT outcome, count(*)::int AS n FROM event_routes GROUP BY outcome`);
    expect(outcomes.rows).toEqual([{ outcome: 'started', n: EVENTS }]);

    const client = new Client({ connection });
    const ids = await waitFor('the executions to be visible', async () => {
      const seen: string[] = [];
      for await (const execution of client.workflow.list({ query: `ActivityId = "${activityId}"` }))
        seen.push(execution.workflowId);
      return seen.length >= EVENTS ? seen : undefined;
    });
    expect(new Set(ids).size).toBe(EVENTS);
    expect(ids).toHaveLength(EVENTS);
    console.info(`[dispatchers] ${EVENTS} events: ${byA} routed by process a, ${EVENTS - byA} by process b, 0 twice`);
  });
});
