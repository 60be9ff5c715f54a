import type { RunStatus, TriggerType } from '@activity-core/contracts';
import { and, asc, eq, gt, gte, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client';
import { activityRuns, bulkReruns, events, runReruns } from '../schema';

export type RerunRow = typeof runReruns.$inferSelect;
export type BulkRerunRow = typeof bulkReruns.$inferSelect;
type RunRowForRerun = typeof activityRuns.$inferSelect;

/** What a re-run is, once its attempt number is known. */
export interface RerunPlan {
  runId: string;
  workflowId: string;
  sourceRunId: string;
  fromTaskIndex: number;
  resume: unknown;
  bulkRerunId: string | null;
  /** The priority the request named (1–5); null: the default. */
  priority?: number | null;
}

/** A re-run with its recorded status (`pending` until its workflow has logged its start). */
export interface RerunWithStatus extends RerunRow {
  status: RunStatus | 'pending';
}

/** The originals a bulk re-run selects: never re-runs themselves. */
export interface RerunSelection {
  activityId?: string;
  status: RunStatus;
  triggerType?: TriggerType;
  from: Date;
  to: Date;
}

export interface SelectionCursor {
  createdAt: Date;
  runId: string;
}

function selectionWhere(selection: RerunSelection, cursor?: SelectionCursor): SQL {
  const conditions: SQL[] = [
    gte(activityRuns.createdAt, selection.from),
    lt(activityRuns.createdAt, selection.to),
    eq(activityRuns.status, selection.status),
    sql`NOT EXISTS (SELECT 1 FROM ${runReruns} WHERE ${runReruns.runId} = ${activityRuns.runId})`,
  ];
  if (selection.activityId !== undefined) conditions.push(eq(activityRuns.activityId, selection.activityId));
  if (selection.triggerType !== undefined) conditions.push(eq(activityRuns.triggerType, selection.triggerType));
  if (cursor !== undefined) {
    conditions.push(
      or(
        gt(activityRuns.createdAt, cursor.createdAt),
        and(eq(activityRuns.createdAt, cursor.createdAt), gt(activityRuns.runId, cursor.runId)),
      )!,
    );
  }
  return and(...conditions)!;
}

export function createRerunsRepository(db: Db) {
  return {
    /**
     * The re-run of `rerunOf` recorded under `key`, allocating the next
     * attempt number when there is none. One transaction holding the
     * original's row lock, so concurrent requests for one original take
     * attempts one after the other; the unique indexes back this up.
     * Answers `created: false` with the existing row for a known key.
     */
    async allocate(
      rerunOf: string,
      key: string,
      plan: (attempt: number) => RerunPlan,
    ): Promise<{ row: RerunRow; created: boolean }> {
      return await db.transaction(async (tx) => {
        await tx.execute(sql`SELECT 1 FROM ${activityRuns} WHERE ${activityRuns.runId} = ${rerunOf} FOR UPDATE`);
        const [existing] = await tx
          .select()
          .from(runReruns)
          .where(and(eq(runReruns.rerunOf, rerunOf), eq(runReruns.idempotencyKey, key)));
        if (existing !== undefined) return { row: existing, created: false };
        const [{ last } = { last: 0 }] = await tx
          .select({ last: sql<number>`coalesce(max(${runReruns.attempt}), 0)::int` })
          .from(runReruns)
          .where(eq(runReruns.rerunOf, rerunOf));
        const attempt = last + 1;
        const chosen = plan(attempt);
        const [row] = await tx
          .insert(runReruns)
          .values({ ...chosen, resume: chosen.resume ?? null, rerunOf, attempt, idempotencyKey: key })
          .returning();
        return { row: row!, created: true };
      });
    },

    /** The stored envelope and hop count of an accepted event: what its runs were started with. */
    async storedEvent(eventId: string): Promise<{ envelope: unknown; hops: number } | undefined> {
      const [row] = await db
        .select({ envelope: events.payload, hops: events.hops })
        .from(events)
        .where(eq(events.eventId, eventId));
      return row;
    },

    async getRerun(runId: string): Promise<RerunRow | undefined> {
      const [row] = await db.select().from(runReruns).where(eq(runReruns.runId, runId));
      return row;
    },

    async findByKey(rerunOf: string, key: string): Promise<RerunRow | undefined> {
      const [row] = await db
        .select()
        .from(runReruns)
        .where(and(eq(runReruns.rerunOf, rerunOf), eq(runReruns.idempotencyKey, key)));
      return row;
    },

    /** Every re-run of an original, oldest first, with the status its workflow recorded. */
    async listChain(rerunOf: string): Promise<RerunWithStatus[]> {
      const rows = await db
        .select({ rerun: runReruns, status: activityRuns.status })
        .from(runReruns)
        .leftJoin(activityRuns, eq(activityRuns.runId, runReruns.runId))
        .where(eq(runReruns.rerunOf, rerunOf))
        .orderBy(asc(runReruns.attempt));
      return rows.map(({ rerun, status }) => ({ ...rerun, status: (status ?? 'pending') as RunStatus | 'pending' }));
    },

    async countSelection(selection: RerunSelection): Promise<number> {
      const [row] = await db
        .select({ n: sql<number>`count(*)::int` })
        .from(activityRuns)
        .where(selectionWhere(selection));
      return row?.n ?? 0;
    },

    /** The next page of a selection, oldest first (`created_at`, then `run_id`). */
    async pageSelection(
      selection: RerunSelection,
      cursor: SelectionCursor | undefined,
      limit: number,
    ): Promise<RunRowForRerun[]> {
      return await db
        .select()
        .from(activityRuns)
        .where(selectionWhere(selection, cursor))
        .orderBy(asc(activityRuns.createdAt), asc(activityRuns.runId))
        .limit(limit);
    },

    /** Inserts the record unless one with this id exists; answers the stored one either way. */
    async createBulk(record: {
      id: string;
      filter: unknown;
      fromMode: string;
      total: number;
      /** The priority the request named for every re-run (1–5); null: the default. */
      priority?: number | null;
    }): Promise<{ row: BulkRerunRow; created: boolean }> {
      const inserted = await db
        .insert(bulkReruns)
        .values({
          ...record,
          status: record.total === 0 ? 'completed' : 'running',
          completedAt: record.total === 0 ? sql`now()` : null,
        })
        .onConflictDoNothing({ target: bulkReruns.id })
        .returning();
      if (inserted[0] !== undefined) return { row: inserted[0], created: true };
      const [row] = await db.select().from(bulkReruns).where(eq(bulkReruns.id, record.id));
      return { row: row!, created: false };
    },

    async getBulk(id: string): Promise<BulkRerunRow | undefined> {
      const [row] = await db.select().from(bulkReruns).where(eq(bulkReruns.id, id));
      return row;
    },

    /**
     * Takes the lease of one running bulk re-run whose lease is free or has
     * lapsed (its process died), oldest first; SKIP LOCKED so two processes
     * never take the same one.
     */
    async claimBulk(owner: string, leaseMs: number): Promise<BulkRerunRow | undefined> {
      const result = await db.execute(sql`
        UPDATE ${bulkReruns} SET lease_owner = ${owner}, lease_until = now() + make_interval(secs => ${leaseMs / 1000}), updated_at = now()
        WHERE id = (
          SELECT id FROM ${bulkReruns}
          WHERE status = 'running' AND (lease_until IS NULL OR lease_until < now())
          ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
        )
        RETURNING id`);
      const id = (result.rows[0] as { id?: string } | undefined)?.id;
      return id === undefined ? undefined : await this.getBulk(id);
    },

    /**
     * Records one finished page: the cursor and the counters in one
     * statement, only while `owner` still holds the lease (false when it
     * lost it), renewing the lease. A page cut short by a crash is redone by
     * the next holder, which allocates the same re-runs and starts none twice.
     */
    async recordPage(
      id: string,
      owner: string,
      leaseMs: number,
      progress: {
        cursor: SelectionCursor | undefined;
        processed: number;
        started: number;
        skipped: number;
        skippedReasons: Record<string, number>;
        done: boolean;
      },
    ): Promise<boolean> {
      const rows = await db
        .update(bulkReruns)
        .set({
          cursorCreatedAt: progress.cursor?.createdAt ?? null,
          cursorRunId: progress.cursor?.runId ?? null,
          processed: progress.processed,
          started: progress.started,
          skipped: progress.skipped,
          skippedReasons: progress.skippedReasons,
          updatedAt: sql`now()`,
          leaseUntil: progress.done ? null : sql`now() + make_interval(secs => ${leaseMs / 1000})`,
          ...(progress.done ? { status: 'completed', completedAt: sql`now()`, leaseOwner: null } : {}),
        })
        .where(and(eq(bulkReruns.id, id), eq(bulkReruns.leaseOwner, owner), eq(bulkReruns.status, 'running')))
        .returning({ id: bulkReruns.id });
      return rows.length > 0;
    },

    /** Gives the lease back (graceful shutdown), so another process resumes at once. */
    async releaseBulk(id: string, owner: string): Promise<void> {
      await db
        .update(bulkReruns)
        .set({ leaseUntil: null, leaseOwner: null })
        .where(and(eq(bulkReruns.id, id), eq(bulkReruns.leaseOwner, owner)));
    },
  };
}

export type RerunsRepository = ReturnType<typeof createRerunsRepository>;
