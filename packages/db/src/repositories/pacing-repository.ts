import { sql } from 'drizzle-orm';
import type { Db } from '../client';
import { eventRoutes, pacingBuckets } from '../schema';

/**
 * One policy's bucket for one route: GCRA on a row of `pacing_buckets`
 * (ADR 0067). `intervalMs` is the emission interval (period / limit).
 */
export interface PacingBucketRequest {
  key: string;
  intervalMs: number;
}

export interface PacingRequest {
  eventId: string;
  activityId: string;
  /** Runs over the rate are dropped. `periodMs`: the rate limit's period (its tolerance is period − interval). */
  rateLimit?: PacingBucketRequest & { periodMs: number; describe: (key: string) => string };
  /** Runs over the rate start later. `burst`: runs that may start at once. */
  throttle?: PacingBucketRequest & { burst: number; describe: (key: string, until: Date) => string };
}

/**
 * The decision for one route, taken once and stored on the route:
 * `start` (at once, or `notBefore` later for a throttled run), `dropped`
 * (the rate limit was reached), or `settled` (another process settled the
 * route meanwhile: nothing to do). `fresh`: this call took the decision
 * (false: it was read back from the route).
 */
export type PacingDecision =
  | { kind: 'start'; notBefore: Date | undefined; detail: string | undefined; fresh: boolean }
  | { kind: 'dropped'; detail: string; fresh: boolean }
  | { kind: 'settled'; outcome: string };

export function createPacingRepository(db: Db) {
  return {
    /**
     * Decides one pending route of a paced activity, once: in one
     * transaction, locks the route, returns the decision already stored on it
     * if there is one, else takes one slot from the rate limit's bucket (or
     * finds it full: dropped) and then from the throttle's bucket (a start
     * time), and stores the decision on the route. Every bucket update is one
     * row-locked statement on Postgres's clock, so every API process shares
     * one bucket and arrival order is lock order.
     */
    async decide(request: PacingRequest): Promise<PacingDecision> {
      return await db.transaction(async (tx) => {
        const locked = await tx.execute<{
          outcome: string;
          paced: boolean;
          not_before_ms: string | null;
          detail: string | null;
        }>(sql`
          SELECT outcome, paced_at IS NOT NULL AS paced,
                 (extract(epoch FROM not_before) * 1000)::bigint::text AS not_before_ms, detail
          FROM ${eventRoutes}
          WHERE event_id = ${request.eventId} AND activity_id = ${request.activityId}
          FOR UPDATE`);
        const route = locked.rows[0];
        if (route === undefined)
          throw new Error(`route of event ${request.eventId} to ${request.activityId} is missing`);
        if (route.outcome === 'dropped') return { kind: 'dropped', detail: route.detail ?? '', fresh: false };
        if (route.outcome !== 'pending') return { kind: 'settled', outcome: route.outcome };
        if (route.paced)
          return {
            kind: 'start',
            notBefore: route.not_before_ms === null ? undefined : new Date(Number(route.not_before_ms)),
            detail: route.detail ?? undefined,
            fresh: false,
          };

        const { rateLimit, throttle } = request;
        if (rateLimit !== undefined) {
          // An absent bucket is an empty one (tat = now); the update below is the whole decision.
          await tx.execute(sql`
            INSERT INTO ${pacingBuckets} (activity_id, policy, key, tat)
            VALUES (${request.activityId}, 'rate_limit', ${rateLimit.key}, statement_timestamp())
            ON CONFLICT DO NOTHING`);
          const interval = sql`make_interval(secs => ${rateLimit.intervalMs / 1000}::double precision)`;
          const period = sql`make_interval(secs => ${rateLimit.periodMs / 1000}::double precision)`;
          const taken = await tx.execute(sql`
            UPDATE ${pacingBuckets} SET tat = greatest(tat, statement_timestamp()) + ${interval}
            WHERE activity_id = ${request.activityId} AND policy = 'rate_limit' AND key = ${rateLimit.key}
              AND greatest(tat, statement_timestamp()) + ${interval} <= statement_timestamp() + ${period}
            RETURNING tat`);
          if (taken.rows.length === 0) {
            const detail = rateLimit.describe(rateLimit.key);
            await tx.execute(sql`
              UPDATE ${eventRoutes} SET outcome = 'dropped', detail = ${detail}, paced_at = now(), updated_at = now()
              WHERE event_id = ${request.eventId} AND activity_id = ${request.activityId}`);
            return { kind: 'dropped', detail, fresh: true };
          }
        }

        let notBefore: Date | undefined;
        let detail: string | undefined;
        let decidedAt: Date | undefined;
        if (throttle !== undefined) {
          const interval = sql`make_interval(secs => ${throttle.intervalMs / 1000}::double precision)`;
          // GCRA: the new theoretical arrival time; this run may start at tat − interval − (burst − 1) × interval.
          const bucket = await tx.execute<{ start_ms: string; now_ms: string; delayed: boolean }>(sql`
            WITH b AS (
              INSERT INTO ${pacingBuckets} (activity_id, policy, key, tat)
              VALUES (${request.activityId}, 'throttle', ${throttle.key}, statement_timestamp() + ${interval})
              ON CONFLICT (activity_id, policy, key)
              DO UPDATE SET tat = greatest(${pacingBuckets.tat}, statement_timestamp()) + ${interval}
              RETURNING tat
            )
            SELECT ceil(extract(epoch FROM b.tat - ${interval} * ${throttle.burst}::double precision) * 1000)::bigint::text AS start_ms,
                   (extract(epoch FROM statement_timestamp()) * 1000)::bigint::text AS now_ms,
                   b.tat - ${interval} * ${throttle.burst}::double precision > statement_timestamp() AS delayed
            FROM b`);
          const row = bucket.rows[0]!;
          // A run not delayed is due at the bucket's time, which is what paced_at then records.
          decidedAt = new Date(Number(row.now_ms));
          if (row.delayed) {
            // Milliseconds, rounded up: a run never starts before its time.
            notBefore = new Date(Number(row.start_ms));
            detail = throttle.describe(throttle.key, notBefore);
          }
        }
        await tx.execute(sql`
          UPDATE ${eventRoutes}
          SET paced_at = coalesce(${decidedAt?.toISOString() ?? null}::timestamptz, now()), not_before = ${notBefore?.toISOString() ?? null}::timestamptz,
              detail = ${detail ?? null}::text, updated_at = now()
          WHERE event_id = ${request.eventId} AND activity_id = ${request.activityId}`);
        return { kind: 'start', notBefore, detail, fresh: true };
      });
    },

    /**
     * Deletes up to `limit` buckets whose theoretical arrival time has passed:
     * such a row holds nothing (an absent bucket is an empty one), so memory
     * and table size follow the keys active in the last period only. Safe
     * with any number of concurrent sweepers. Returns how many it deleted.
     */
    async sweepIdle(limit: number): Promise<number> {
      const result = await db.execute(sql`
        DELETE FROM ${pacingBuckets} WHERE ctid IN (
          SELECT ctid FROM ${pacingBuckets} WHERE tat < now() - interval '1 second'
          LIMIT ${limit} FOR UPDATE SKIP LOCKED)`);
      return result.rowCount ?? 0;
    },
  };
}

export type PacingRepository = ReturnType<typeof createPacingRepository>;
