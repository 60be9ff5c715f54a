/**
 * Does ingest slow down with the number of registered activities?
 *
 *   npx tsx bench/definitions-scale.ts [rounds=5] [events-per-round=200] [concurrency=10] [extra=10000]
 *
 * Starts its own Temporal dev server and embedded Postgres, two databases and
 * one API on each (no worker: this measures POST /v1/events → 202, which
 * stores the event and starts its run in Temporal):
 *
 * - small: 10 activities, one of which matches the posted events;
 * - large: the same 10 plus `extra` (default 10,000) that never match, bulk
 *   inserted in SQL (the statement trigger bumps definitions_version, checked).
 *
 * Then posts distinct events in alternating rounds (small, large, small, ...)
 * so both sides see the same machine load, and prints events/s per round,
 * the means and the ratio large/small; then redelivers every event the same
 * way (the duplicate path).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@activity-core/config';
import { runMigrations } from '@activity-core/db';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  findTemporalCli,
  startEmbeddedPostgres,
  startTemporalDevServer,
} from '@activity-core/dev-services';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pg from 'pg';
import { createApiApp, type ApiApp } from '../apps/api/src/app';

const rounds = Number(process.argv[2] ?? 5);
const perRound = Number(process.argv[3] ?? 200);
const concurrency = Number(process.argv[4] ?? 10);
const extra = Number(process.argv[5] ?? 10_000);

Runtime.install({ logger: new DefaultLogger('WARN') });

interface Side {
  label: string;
  api: ApiApp;
  address: string;
  databaseUrl: string;
}

async function postJson(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function register(address: string, body: object): Promise<void> {
  const response = await postJson(`${address}/v1/activities`, body);
  if (response.status !== 201)
    throw new Error(`registering ${JSON.stringify(body)} answered ${response.status}: ${await response.text()}`);
}

const event = (id: string) => ({
  event_id: id,
  event_type: 'bench.tick',
  source: 'bench',
  occurred_at: new Date().toISOString(),
  data: { id },
});

/** Posts `ids` with `concurrency` clients; returns events/s. */
async function burst(side: Side, ids: string[], expected: 'accepted' | 'duplicate'): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const response = await postJson(`${side.address}/v1/events`, event(id));
        const body = (await response.json()) as { status?: string; runs?: unknown[] };
        if (response.status !== 202 || body.status !== expected || body.runs?.length !== 1) {
          throw new Error(`${side.label}: event ${id} answered ${response.status} ${JSON.stringify(body)}`);
        }
      }
    }),
  );
  return ids.length / ((performance.now() - started) / 1000);
}

const scratch = await mkdtemp(join(tmpdir(), 'activity-core-bench-'));
const { chmod } = await import('node:fs/promises');
await chmod(scratch, 0o755);
const cli = findTemporalCli(process.cwd(), process.env.TEMPORAL_CLI_PATH, process.env.PATH);
if (cli === undefined) throw new Error('Temporal CLI not found; run npm test or npm start once to install it');
const [postgres, temporal] = await Promise.all([
  startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }),
  startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }),
]);
const sides: Side[] = [];
try {
  for (const label of ['small', 'large']) {
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE bench_${label}`);
    await admin.end();
    const databaseUrl = postgres.urlFor(`bench_${label}`);
    await runMigrations(databaseUrl);
    // RATE_LIMIT_MAX=0: one sending address, and the limiter is not what is measured.
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `bench-${label}`,
      LOG_LEVEL: 'silent',
      MIGRATE_ON_START: 'false',
      PORT: '0',
      DATABASE_POOL_SIZE: '20',
      RATE_LIMIT_MAX: '0',
    });
    const api = await createApiApp(config, { logger: false });
    const address = await api.server.listen({ host: '127.0.0.1', port: 0 });
    sides.push({ label, api, address, databaseUrl });

    await register(address, {
      name: 'matching',
      triggers: [{ type: 'event', event_type: 'bench.tick' }],
      tasks: [{ type: 'noop' }],
    });
    for (let i = 0; i < 9; i += 1) {
      await register(address, {
        name: `other-${i}`,
        triggers: [{ type: 'event', event_type: i % 3 === 0 ? `other${i}.*` : `other.${i}` }],
        tasks: [{ type: 'noop' }],
      });
    }
  }

  const large = sides[1]!;
  const sql = new pg.Client({ connectionString: large.databaseUrl });
  await sql.connect();
  const before = (await sql.query<{ version: string }>('SELECT version::text FROM definitions_version WHERE id = 1'))
    .rows[0]!.version;
  const insertStarted = performance.now();
  await sql.query('BEGIN');
  // Never matching: exact types noise.<i>, and every 100th a prefix wildcard noise<i>.* (the wildcard path stays small too).
  await sql.query(
    `WITH made AS (
       SELECT gen_random_uuid() AS id, i,
              jsonb_build_object(
                'name', 'noise-' || i,
                'enabled', true,
                'triggers', jsonb_build_array(jsonb_build_object('type', 'event', 'event_type', CASE WHEN i % 100 = 0 THEN 'noise' || i || '.*' ELSE 'noise.' || i END)),
                'tasks', jsonb_build_array(jsonb_build_object('type', 'noop'))
              ) AS definition
       FROM generate_series(1, $1::int) AS i
     ), defs AS (
       INSERT INTO activity_definitions (id, name, version, enabled, definition)
       SELECT id, 'noise-' || i, 1, true, definition FROM made
       RETURNING id, name, definition
     )
     INSERT INTO activity_definition_versions (activity_id, version, name, enabled, definition)
     SELECT id, 1, name, true, definition FROM defs`,
    [extra],
  );
  await sql.query('COMMIT');
  const after = (await sql.query<{ version: string }>('SELECT version::text FROM definitions_version WHERE id = 1'))
    .rows[0]!.version;
  const counts = (
    await sql.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM activity_definitions WHERE enabled AND deleted_at IS NULL',
    )
  ).rows[0]!.n;
  await sql.end();
  if (BigInt(after) <= BigInt(before))
    throw new Error(`definitions_version did not move (${before} → ${after}): the index would not see the bulk insert`);
  console.log(
    `registered: small 10, large ${counts} (bulk insert of ${extra} in ${((performance.now() - insertStarted) / 1000).toFixed(1)} s; definitions_version ${before} → ${after})`,
  );

  // Warm-up (and the large side's one index reload).
  for (const side of sides) {
    const reloadStarted = performance.now();
    await burst(side, [`${side.label}-warm-0`], 'accepted');
    console.log(
      `${side.label}: first event (index load included) ${(performance.now() - reloadStarted).toFixed(0)} ms`,
    );
    await burst(
      side,
      Array.from({ length: 20 }, (_, i) => `${side.label}-warm-${i + 1}`),
      'accepted',
    );
  }

  console.log(
    `rounds: ${rounds} × ${perRound} events per side, concurrency ${concurrency}, alternating small/large, 1 API per database, no worker`,
  );
  const roundIds: Array<Record<string, string[]>> = [];
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  /** Alternating rounds (small first in odd rounds, large first in even ones); prints each and the summary. */
  async function alternate(
    what: string,
    expected: 'accepted' | 'duplicate',
    idsFor: (side: Side, round: number) => string[],
  ): Promise<void> {
    const rates: Record<string, number[]> = { small: [], large: [] };
    const ratios: number[] = [];
    for (let round = 1; round <= rounds; round += 1) {
      const order = round % 2 === 1 ? sides : [...sides].reverse();
      for (const side of order) rates[side.label]!.push(await burst(side, idsFor(side, round), expected));
      const s = rates.small!.at(-1)!;
      const l = rates.large!.at(-1)!;
      ratios.push(l / s);
      console.log(
        `  ${what} round ${round}: small ${s.toFixed(1)} events/s, large ${l.toFixed(1)} events/s, ratio ${(l / s).toFixed(2)}`,
      );
    }
    console.log(
      `${what}: small (10 activities) ${mean(rates.small!).toFixed(1)} events/s, large (${counts} activities) ${mean(rates.large!).toFixed(1)} events/s; ` +
        `ratio of means ${(mean(rates.large!) / mean(rates.small!)).toFixed(2)}, median round ratio ${median(ratios).toFixed(2)}`,
    );
  }
  await alternate('new events', 'accepted', (side, round) => {
    const ids = Array.from({ length: perRound }, (_, i) => `${side.label}-r${round}-${i}`);
    (roundIds[round] ??= {})[side.label] = ids;
    return ids;
  });
  // The same events again: each answered from the stored decision (the duplicate path).
  await alternate('redeliveries', 'duplicate', (side, round) => roundIds[round]![side.label]!);
} finally {
  for (const side of sides) await side.api.close().catch(() => undefined);
  await temporal.stop();
  await postgres.stop();
  await rm(scratch, { recursive: true, force: true });
}
