import { asc, eq, getTableColumns, sql } from 'drizzle-orm';
import type { Db } from '../client';
import { webhookSources } from '../schema';

/**
 * A stored webhook source. `config` is the validated source config as the
 * service stored it; its secret may be sealed (encrypted), which only the
 * service can undo.
 */
export type WebhookSourceRow = typeof webhookSources.$inferSelect;

export function createWebhookSourcesRepository(db: Db) {
  return {
    async get(name: string): Promise<WebhookSourceRow | undefined> {
      const [row] = await db.select().from(webhookSources).where(eq(webhookSources.name, name));
      return row;
    },

    async list(): Promise<WebhookSourceRow[]> {
      return await db.select().from(webhookSources).orderBy(asc(webhookSources.name));
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

    /** True when a source was removed. */
    async delete(name: string): Promise<boolean> {
      const removed = await db.delete(webhookSources).where(eq(webhookSources.name, name)).returning({ name: webhookSources.name });
      return removed.length > 0;
    },
  };
}

export type WebhookSourcesRepository = ReturnType<typeof createWebhookSourcesRepository>;
