import { randomUUID } from 'node:crypto';
import { createPacingRepository, type Database, type PacingRequest } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { databasePerTest } from './harness';

/**
 * The pacing buckets (packages/db pacing-repository, ADR 0067) on a real
 * Postgres, from two connection pools at once as two API processes would
 * use them: one bucket per key shared by both, a decision taken once per
 * route, exact counts under concurrency, idle rows swept.
 */
const db = databasePerTest();
const ACTIVITY = randomUUID();

async function routes(database: Database, count: number, prefix: string): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  await database.pool.query(
    `INSERT INTO event_routes (event_id, activity_id, activity_version, activity_name, workflow_id, run_id, outcome)
     SELECT id, $1, 1, 'paced', 'activity-' || id, gen_random_uuid(), 'pending' FROM unnest($2::text[]) AS id`,
    [ACTIVITY, ids],
  );
  return ids;
}

const throttle = (eventId: string, key = 'acme'): PacingRequest => ({
  eventId,
  activityId: ACTIVITY,
  // Ten seconds apart: the 60 decisions are taken well within one interval, so the bucket does not drain meanwhile.
  throttle: {
    key,
    intervalMs: 10_000,
    burst: 2,
    describe: (k, until) => `throttled ${k} until ${until.toISOString()}`,
  },
});
const rateLimit = (eventId: string, key = 'acme'): PacingRequest => ({
  eventId,
  activityId: ACTIVITY,
  rateLimit: { key, intervalMs: 6_000, periodMs: 60_000, describe: (k) => `dropped ${k}` },
});

describe('pacing buckets in Postgres', () => {
  test('a throttle shared by two processes gives 60 concurrent routes of one key distinct start times one interval apart, burst 2 at once', async () => {
    const [a, b] = [db.connect(10), db.connect(10)];
    const ids = await routes(a, 60, 'thr');
    const [repoA, repoB] = [createPacingRepository(a.db), createPacingRepository(b.db)];
    const decisions = await Promise.all(ids.map((id, i) => (i % 2 === 0 ? repoA : repoB).decide(throttle(id))));
    expect(decisions.every((decision) => decision.kind === 'start' && decision.fresh)).toBe(true);
    const starts = decisions.map((decision) => (decision.kind === 'start' ? decision.notBefore : undefined));
    // The burst: two start at once, every other one is delayed.
    expect(starts.filter((start) => start === undefined)).toHaveLength(2);
    const times = starts
      .filter((start): start is Date => start !== undefined)
      .map((start) => start.getTime())
      .sort((x, y) => x - y);
    expect(times).toHaveLength(58);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(9_999);
    // The decision is on the route: asked again (a redispatch), it is read back and takes no second slot.
    const again = await repoB.decide(throttle(ids[59]!));
    expect(again).toEqual({ ...decisions[59], fresh: false });
    const { rows } = await a.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM event_routes WHERE paced_at IS NOT NULL AND (not_before IS NULL) = (detail IS NULL)`,
    );
    expect(rows[0]!.n).toBe(60);
  });

  test('a rate limit of 10 per minute admits exactly 10 of 50 concurrent routes from two processes and records 40 dropped', async () => {
    const [a, b] = [db.connect(10), db.connect(10)];
    const ids = await routes(a, 50, 'rl');
    const [repoA, repoB] = [createPacingRepository(a.db), createPacingRepository(b.db)];
    const decisions = await Promise.all(ids.map((id, i) => (i % 2 === 0 ? repoA : repoB).decide(rateLimit(id))));
    expect(decisions.filter((decision) => decision.kind === 'start')).toHaveLength(10);
    expect(decisions.filter((decision) => decision.kind === 'dropped')).toHaveLength(40);
    const { rows } = await a.pool.query<{ outcome: string; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM event_routes GROUP BY outcome ORDER BY outcome`,
    );
    expect(rows).toEqual([
      { outcome: 'dropped', n: 40 },
      { outcome: 'pending', n: 10 },
    ]);
    // Another key is another bucket; a dropped route asked again stays dropped.
    const [other] = await routes(a, 1, 'rl-other');
    expect((await repoA.decide(rateLimit(other!, 'globex'))).kind).toBe('start');
    const dropped = ids[decisions.findIndex((decision) => decision.kind === 'dropped')]!;
    expect(await repoB.decide(rateLimit(dropped))).toEqual({ kind: 'dropped', detail: 'dropped acme', fresh: false });
  });

  test('2,000 distinct keys make 2,000 small rows and no process state; the sweep deletes the idle ones only', async () => {
    const database = db.connect(8);
    const ids = await routes(database, 2_000, 'keys');
    const repo = createPacingRepository(database.db);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < ids.length; i = next++)
          await repo.decide({
            eventId: ids[i]!,
            activityId: ACTIVITY,
            throttle: { key: `customer-${i}`, intervalMs: 60_000, burst: 1, describe: () => '' },
          });
      }),
    );
    const count = async () =>
      (await database.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pacing_buckets`)).rows[0]!.n;
    expect(await count()).toBe(2_000);
    // Nothing is idle yet: each bucket's tat is a minute ahead.
    expect(await repo.sweepIdle(10_000)).toBe(0);
    // 1,500 of them fall idle (as a minute later): those, and only those, are swept, in bounded rounds.
    await database.pool.query(
      `UPDATE pacing_buckets SET tat = now() - interval '5 seconds' WHERE ctid IN (SELECT ctid FROM pacing_buckets LIMIT 1500)`,
    );
    expect(await repo.sweepIdle(1_000)).toBe(1_000);
    expect(await repo.sweepIdle(10_000)).toBe(500);
    expect(await count()).toBe(500);
  });
});
