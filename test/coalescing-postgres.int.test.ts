import { batchRunWorkflowId, eventRunWorkflowId } from '@activity-core/contracts';
import { runMigrations } from '@activity-core/db';
import { freePort } from '@activity-core/dev-services';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testConfig, waitFor } from './harness';
import {
  createDatabaseOn,
  createRestartablePostgres,
  resilientPool,
  type RestartablePostgres,
} from './restartable-postgres';
import { spawnApiProcess, spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';

/**
 * Debounce across a Postgres restart (docs/coalescing.md, ADR 0066): the
 * windows' members live in Postgres, so taking it away mid-burst — while
 * windows are open, while one falls due and its close must wait, and while a
 * sender retries the events the API could not store — must leave every
 * acknowledged event merged or started exactly once, one run per window with
 * the window's last event, and nothing run twice. The API and the worker are
 * their real entry points in processes of their own, riding out the outage.
 */
const EVENT_TYPE = 'contact.pgrestart';
const CONTACTS = ['c-1', 'c-2'];
/** A contact whose burst ends before the outage: its window falls due while Postgres is away and closes once it is back. */
const QUIET = 'c-3';
const PERIOD = '2s';
/** Longer than the pools' 5 s connect timeout, and than the debounce period: a window falls due while Postgres is away. */
const OUTAGE_MS = 8_000;

let postgres: RestartablePostgres;
let sql: pg.Pool;
let api: SpawnedProcess;
let worker: SpawnedProcess;
let base: string;

beforeAll(async () => {
  postgres = await createRestartablePostgres();
  await postgres.start();
  const url = await createDatabaseOn(postgres, 'coalescing');
  await runMigrations(url);
  const config = testConfig(url);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  api = spawnApiProcess(config, port);
  worker = spawnWorkerProcess(config);
  await Promise.all([api.ready, worker.ready]);
  sql = resilientPool(url);
}, 120_000);

afterAll(async () => {
  for (const proc of [api, worker]) if (proc !== undefined && proc.exited() === null) await stopGracefully(proc.child);
  await sql?.end();
  await postgres?.dispose();
}, 60_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Posts one event as an at-least-once sender does: until the API acknowledges
 * it (202), retrying a 503 or a dropped connection. Resolves once acknowledged.
 */
let refusals = 0;
async function deliver(eventId: string, contact: string, n: number, eventType = EVENT_TYPE): Promise<void> {
  for (const deadline = Date.now() + 120_000; ;) {
    const response = await fetch(`${base}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event_id: eventId,
        event_type: eventType,
        source: 'crm',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { contact, n },
      }),
      signal: AbortSignal.timeout(15_000),
    }).catch(() => undefined);
    const status = response?.status;
    await response?.arrayBuffer();
    if (status === 202) return;
    if (status !== undefined && status !== 503) throw new Error(`event ${eventId} answered ${status}`);
    refusals++;
    if (Date.now() > deadline) throw new Error(`event ${eventId} was not acknowledged within 120 s`);
    await sleep(250);
  }
}

/** Events `from`..`to` of every contact, interleaved, 50 ms apart; each delivered until acknowledged. */
async function burst(acked: string[], from: number, to: number, contacts = CONTACTS): Promise<void> {
  for (let n = from; n <= to; n++)
    for (const contact of contacts) {
      const eventId = `evt_${contact}_${String(n).padStart(2, '0')}`;
      await deliver(eventId, contact, n);
      acked.push(eventId);
      await sleep(50);
    }
}

/** Registers an activity over the API and answers its id. */
async function register(definition: object): Promise<string> {
  const registered = await fetch(`${base}/v1/activities`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(definition),
  });
  expect(registered.status, await registered.clone().text()).toBe(201);
  return ((await registered.json()) as { id: string }).id;
}

describe('debounce and batching across a Postgres restart', () => {
  test('every acknowledged event ends merged or started once, one run per window with its last event, none twice', async () => {
    const registered = await fetch(`${base}/v1/activities`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'debounce-pg-restart',
        triggers: [
          { type: 'event', event_type: EVENT_TYPE, debounce: { key: 'data.contact', period: PERIOD, max_wait: '60s' } },
        ],
        tasks: [{ type: 'noop' }],
      }),
    });
    expect(registered.status, await registered.clone().text()).toBe(201);
    const activityId = ((await registered.json()) as { id: string }).id;

    const acked: string[] = [];
    // Windows open for both contacts; then Postgres goes away while they are open.
    await burst(acked, 1, 10, [...CONTACTS, QUIET]);
    await postgres.stop();
    // The sender keeps sending through the outage (each event retried until acknowledged);
    // the open windows fall due while Postgres is away.
    const during = burst(acked, 11, 20);
    await sleep(OUTAGE_MS);
    await postgres.start();
    await during;
    await burst(acked, 21, 25);

    // The outage was real: the API refused (503) or dropped deliveries while Postgres was away.
    expect(refusals).toBeGreaterThan(0);
    expect(api.exited()).toBeNull();
    expect(worker.exited()).toBeNull();
    expect(new Set(acked).size).toBe(25 * CONTACTS.length + 10);

    // Settled: every acknowledged event's route is merged or started, every window closed, every run ended.
    await waitFor(
      'every event merged or started, every window closed, every run ended',
      async () => {
        const { rows } = await sql.query(
          `SELECT
             (SELECT count(*)::int FROM event_routes WHERE activity_id = $1 AND outcome IN ('merged','started')) AS settled,
             (SELECT count(*)::int FROM coalesce_windows WHERE activity_id = $1 AND state = 'open') AS open,
             (SELECT count(*)::int FROM event_routes WHERE activity_id = $1 AND outcome = 'started') AS started,
             (SELECT count(*)::int FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded') AS succeeded`,
          [activityId],
        );
        const row = rows[0];
        return row.settled === acked.length && row.open === 0 && row.succeeded >= row.started ? true : undefined;
      },
      240_000,
    );

    const routes = (
      await sql.query(`SELECT event_id, outcome, workflow_id, window_id FROM event_routes WHERE activity_id = $1`, [
        activityId,
      ])
    ).rows.map((row) => ({ ...row, contact: /^evt_(c-\d)_/.exec(row.event_id)?.[1] })) as Array<{
      event_id: string;
      outcome: string;
      workflow_id: string;
      window_id: string;
      contact: string;
    }>;
    const windows = (
      await sql.query(
        `SELECT id, key, member_count, last_event_id, run_workflow_id FROM coalesce_windows WHERE activity_id = $1`,
        [activityId],
      )
    ).rows as Array<{ id: string; key: string; member_count: number; last_event_id: string; run_workflow_id: string }>;
    const runs = (await sql.query(`SELECT workflow_id, status FROM activity_runs WHERE activity_id = $1`, [activityId]))
      .rows as Array<{ workflow_id: string; status: string }>;

    console.log(
      `[pg-restart] ${refusals} refused deliveries; windows: ${windows.map((w) => `${w.key}×${w.member_count}`).join(', ')}`,
    );
    // Exactly one route per acknowledged event, none lost, none extra.
    expect(routes.map((route) => route.event_id).sort()).toEqual([...acked].sort());
    // Nothing ran twice: one run per window, each run once, all succeeded.
    expect(runs.length).toBe(windows.length);
    expect(new Set(runs.map((run) => run.workflow_id)).size).toBe(runs.length);
    expect(runs.every((run) => run.status === 'succeeded')).toBe(true);
    for (const window of windows) {
      const members = routes.filter((route) => route.window_id === window.id);
      // Each window's run bears its last event's id, and every member names that run.
      expect(window.run_workflow_id).toBe(eventRunWorkflowId(activityId, window.last_event_id));
      expect(members).toHaveLength(window.member_count);
      expect(members.every((member) => member.workflow_id === window.run_workflow_id)).toBe(true);
      expect(members.filter((member) => member.outcome === 'started').map((member) => member.event_id)).toEqual([
        window.last_event_id,
      ]);
      // A window holds the events of one key only.
      expect(new Set(members.map((member) => member.contact))).toEqual(new Set([window.key]));
      expect(runs.map((run) => run.workflow_id)).toContain(window.run_workflow_id);
    }
    // The quiet contact's window fell due during the outage and closed once, after it, with its 10 events.
    expect(windows.filter((window) => window.key === QUIET).map((window) => window.member_count)).toEqual([10]);
    // Every event is in a window (no route bypassed its key's burst), so the windows account for all of them.
    expect(windows.reduce((sum, window) => sum + window.member_count, 0)).toBe(acked.length);
  });

  test('a batch open when Postgres goes away closes once after it: every acknowledged event is a member of exactly one batch, each batch one run, none over max_size', async () => {
    const eventType = 'order.pgrestart';
    const activityId = await register({
      name: 'batch-pg-restart',
      triggers: [{ type: 'event', event_type: eventType, batch: { max_size: 25, timeout: '3s' } }],
      tasks: [{ type: 'noop' }],
    });
    const acked: string[] = [];
    const send = async (from: number, to: number) => {
      for (let n = from; n <= to; n++) {
        const eventId = `evt_batch_${String(n).padStart(2, '0')}`;
        await deliver(eventId, 'all', n, eventType);
        acked.push(eventId);
        await sleep(50);
      }
    };
    // A batch opens and fills part way; Postgres goes away while it is open and its timeout passes.
    await send(1, 15);
    await postgres.stop();
    const during = send(16, 40);
    await sleep(OUTAGE_MS);
    await postgres.start();
    await during;
    await send(41, 60);
    expect(api.exited()).toBeNull();
    expect(worker.exited()).toBeNull();

    await waitFor(
      'every event batched, every batch closed, every run ended',
      async () => {
        const { rows } = await sql.query(
          `SELECT
             (SELECT count(*)::int FROM event_routes WHERE activity_id = $1 AND outcome = 'batched') AS batched,
             (SELECT count(*)::int FROM coalesce_windows WHERE activity_id = $1 AND state = 'open') AS open,
             (SELECT count(*)::int FROM coalesce_windows WHERE activity_id = $1) AS windows,
             (SELECT count(*)::int FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded') AS succeeded`,
          [activityId],
        );
        const row = rows[0];
        return row.batched === acked.length && row.open === 0 && row.succeeded >= row.windows ? true : undefined;
      },
      240_000,
    );
    const routes = (
      await sql.query(
        `SELECT event_id, outcome, workflow_id, window_id, window_position FROM event_routes WHERE activity_id = $1`,
        [activityId],
      )
    ).rows as Array<{
      event_id: string;
      outcome: string;
      workflow_id: string;
      window_id: string;
      window_position: number;
    }>;
    const windows = (
      await sql.query(`SELECT id, kind, member_count, run_workflow_id FROM coalesce_windows WHERE activity_id = $1`, [
        activityId,
      ])
    ).rows as Array<{ id: string; kind: string; member_count: number; run_workflow_id: string }>;
    const runs = (await sql.query(`SELECT workflow_id, status FROM activity_runs WHERE activity_id = $1`, [activityId]))
      .rows as Array<{ workflow_id: string; status: string }>;

    // Every acknowledged event is one member of one batch: none lost, none twice.
    expect(routes.map((route) => route.event_id).sort()).toEqual([...acked].sort());
    expect(windows.reduce((sum, window) => sum + window.member_count, 0)).toBe(acked.length);
    // One run per batch, under the batch's own id, each once and succeeded.
    expect(runs).toHaveLength(windows.length);
    expect(new Set(runs.map((run) => run.workflow_id))).toEqual(
      new Set(windows.map((window) => batchRunWorkflowId(activityId, window.id))),
    );
    expect(runs.every((run) => run.status === 'succeeded')).toBe(true);
    for (const window of windows) {
      expect(window.kind).toBe('batch');
      expect(window.member_count).toBeLessThanOrEqual(25);
      const members = routes.filter((route) => route.window_id === window.id);
      expect(members).toHaveLength(window.member_count);
      expect(members.every((member) => member.workflow_id === window.run_workflow_id)).toBe(true);
      // Each member has its own place in its batch, 1..N.
      expect(members.map((member) => member.window_position).sort((a, b) => a - b)).toEqual(
        Array.from({ length: members.length }, (_, i) => i + 1),
      );
    }
    console.log(`[pg-restart] batches: ${windows.map((w) => w.member_count).join(', ')}`);
  });
});
