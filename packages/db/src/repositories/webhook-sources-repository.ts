import { and, asc, eq, getTableColumns, lt, sql } from 'drizzle-orm';
import type { Db } from '../client';
import { webhookDeliveries, webhookSources, webhookSourcesVersion } from '../schema';

/**
 * A stored webhook source. `config` is the validated source config as the
 * service stored it; its secret may be sealed (encrypted), which only the
 * service can undo.
 */
export type WebhookSourceRow = typeof webhookSources.$inferSelect;

/** A signed message a source delivered, and the event it became. */
type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;

export function createWebhookSourcesRepository(db: Db) {
  return {
    async get(name: string): Promise<WebhookSourceRow | undefined> {
      const [row] = await db.select().from(webhookSources).where(eq(webhookSources.name, name));
      return row;
    },

    async list(): Promise<WebhookSourceRow[]> {
      return await db.select().from(webhookSources).orderBy(asc(webhookSources.name));
    },

    /**
     * The number that goes up with every change to the sources (a trigger in
     * the changing transaction bumps it, migration 0008). One single-row
     * read: a process's cached sources are current while it is unchanged.
     * `undefined` when the row is missing, which means "always re-read".
     */
    async currentVersion(): Promise<bigint | undefined> {
      const [row] = await db
        .select({ version: webhookSourcesVersion.version })
        .from(webhookSourcesVersion)
        .where(eq(webhookSourcesVersion.id, 1));
      return row?.version;
    },

    /** Creates the source; `undefined` when the name is taken. */
    async insert(name: string, scheme: string, config: unknown): Promise<WebhookSourceRow | undefined> {
      const [row] = await db.insert(webhookSources).values({ name, scheme, config }).onConflictDoNothing().returning();
      return row;
    },

    /** Creates or replaces the source; `created` says which. */
    async upsert(name: string, scheme: string, config: unknown): Promise<{ row: WebhookSourceRow; created: boolean }> {
      const [result] = await db
        .insert(webhookSources)
        .values({ name, scheme, config })
        .onConflictDoUpdate({ target: webhookSources.name, set: { scheme, config, updatedAt: sql`now()` } })
        // xmax is 0 on a freshly inserted row version and set on an updated one.
        .returning({ ...getTableColumns(webhookSources), created: sql<boolean>`(xmax = 0)` });
      if (result === undefined) throw new Error(`webhook source ${name} was neither inserted nor updated`);
      const { created, ...row } = result;
      return { row, created };
    },

    /**
     * Replaces a source's stored config only if it is still `expected` (an
     * optimistic check, for rewrites such as sealing a plaintext secret).
     * True when it was replaced.
     */
    async replaceConfigIf(name: string, expected: unknown, config: unknown): Promise<boolean> {
      const updated = await db
        .update(webhookSources)
        .set({ config, updatedAt: sql`now()` })
        .where(and(eq(webhookSources.name, name), sql`${webhookSources.config} = ${JSON.stringify(expected)}::jsonb`))
        .returning({ name: webhookSources.name });
      return updated.length > 0;
    },

    /**
     * Claims the signed bytes `bodySha256` of `source` for `eventId`. Returns
     * the claim that holds: this one when it is new, else the earlier one
     * (possibly for another event id — a replay under a new id).
     */
    async claimDelivery(
      source: string,
      bodySha256: string,
      eventId: string,
    ): Promise<{ claimed: boolean; delivery: WebhookDeliveryRow }> {
      for (;;) {
        const [inserted] = await db
          .insert(webhookDeliveries)
          .values({ source, bodySha256, eventId })
          .onConflictDoNothing()
          .returning();
        if (inserted !== undefined) return { claimed: true, delivery: inserted };
        const [existing] = await db
          .select()
          .from(webhookDeliveries)
          .where(and(eq(webhookDeliveries.source, source), eq(webhookDeliveries.bodySha256, bodySha256)));
        if (existing !== undefined) return { claimed: false, delivery: existing };
        // Gone between the two statements (its event was just deleted): claim again.
      }
    },

    /** Drops a claim that did not become an event (the ingest failed), so a retry can make it. */
    async releaseDelivery(source: string, bodySha256: string, eventId: string): Promise<void> {
      await db
        .delete(webhookDeliveries)
        .where(
          and(
            eq(webhookDeliveries.source, source),
            eq(webhookDeliveries.bodySha256, bodySha256),
            eq(webhookDeliveries.eventId, eventId),
          ),
        );
    },

    /**
     * Moves an abandoned claim (its event never stored, claimed before
     * `olderThan`) to `eventId`. True when this caller now holds it.
     */
    async takeOverDelivery(
      source: string,
      bodySha256: string,
      fromEventId: string,
      eventId: string,
      olderThan: Date,
    ): Promise<boolean> {
      const moved = await db
        .update(webhookDeliveries)
        .set({ eventId, receivedAt: sql`now()` })
        .where(
          and(
            eq(webhookDeliveries.source, source),
            eq(webhookDeliveries.bodySha256, bodySha256),
            eq(webhookDeliveries.eventId, fromEventId),
            lt(webhookDeliveries.receivedAt, olderThan),
          ),
        )
        .returning({ eventId: webhookDeliveries.eventId });
      return moved.length > 0;
    },

    /** True when a source was removed. */
    async delete(name: string): Promise<boolean> {
      const removed = await db
        .delete(webhookSources)
        .where(eq(webhookSources.name, name))
        .returning({ name: webhookSources.name });
      return removed.length > 0;
    },
  };
}

export type WebhookSourcesRepository = ReturnType<typeof createWebhookSourcesRepository>;
