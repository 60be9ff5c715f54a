import { sql } from 'drizzle-orm';
import type { Db } from '../client';
import { emitBudgets, emittedEventRoots } from '../schema';

/** The start of an emit chain: an external event (its source and id), or a cron or manual run. */
export interface EmitRoot {
  source: string;
  eventId: string;
}

export interface EmitClaim {
  /** The event the emit_event task is about to emit (its id is derived from run and task index). */
  eventId: string;
  /** The event that triggered the emitting run, or the run itself when no event did. */
  trigger: EmitRoot;
  /** Whether `trigger` was itself emitted (its hop count is above 0): then the chain's root is looked up. */
  triggerEmitted: boolean;
  /** Most events emitted per root (EMIT_MAX_PER_ROOT). */
  limit: number;
}

export type EmitClaimResult =
  { granted: true; root: EmitRoot; emitted: number } | { granted: false; root: EmitRoot; emitted: number };

export function createEmitBudgetsRepository(db: Db) {
  return {
    /**
     * Counts one emitted event against its chain's root, or refuses when the
     * root has already emitted `limit` events. Exact under concurrency: the
     * root's row is locked while the count is checked and raised. Counted
     * once per emitted event id: a retried emit (a crash after the claim)
     * finds its event already counted and is granted without counting again.
     */
    async claim(input: EmitClaim): Promise<EmitClaimResult> {
      return await db.transaction(async (tx) => {
        const counted = async () =>
          (
            await tx
              .select({ source: emittedEventRoots.rootSource, eventId: emittedEventRoots.rootEventId })
              .from(emittedEventRoots)
              .where(sql`${emittedEventRoots.eventId} = ${input.eventId}`)
          )[0];
        const earlier = await counted();
        if (earlier !== undefined) return { granted: true, root: earlier, emitted: await emittedOf(earlier) };

        let root = input.trigger;
        if (input.triggerEmitted) {
          const [parent] = await tx
            .select({ source: emittedEventRoots.rootSource, eventId: emittedEventRoots.rootEventId })
            .from(emittedEventRoots)
            .where(sql`${emittedEventRoots.eventId} = ${input.trigger.eventId}`);
          // An event emitted before budgets were kept has no recorded root: its chain counts from it.
          if (parent !== undefined) root = parent;
        }
        await tx
          .insert(emitBudgets)
          .values({ rootSource: root.source, rootEventId: root.eventId })
          .onConflictDoNothing();
        const locked = await tx.execute<{ emitted: number }>(
          sql`SELECT ${emitBudgets.emitted} AS emitted FROM ${emitBudgets}
              WHERE ${emitBudgets.rootSource} = ${root.source} AND ${emitBudgets.rootEventId} = ${root.eventId} FOR UPDATE`,
        );
        const emitted = Number(locked.rows[0]?.emitted ?? 0);
        // Another attempt of this same emit may have committed while this one waited for the lock.
        if ((await counted()) !== undefined) return { granted: true, root, emitted };
        if (emitted >= input.limit) return { granted: false, root, emitted };
        await tx
          .insert(emittedEventRoots)
          .values({ eventId: input.eventId, rootSource: root.source, rootEventId: root.eventId });
        await tx.execute(
          sql`UPDATE ${emitBudgets} SET emitted = emitted + 1
              WHERE ${emitBudgets.rootSource} = ${root.source} AND ${emitBudgets.rootEventId} = ${root.eventId}`,
        );
        return { granted: true, root, emitted: emitted + 1 };

        async function emittedOf(of: EmitRoot): Promise<number> {
          const [row] = await tx
            .select({ emitted: emitBudgets.emitted })
            .from(emitBudgets)
            .where(sql`${emitBudgets.rootSource} = ${of.source} AND ${emitBudgets.rootEventId} = ${of.eventId}`);
          return row?.emitted ?? 0;
        }
      });
    },
  };
}

export type EmitBudgetsRepository = ReturnType<typeof createEmitBudgetsRepository>;
