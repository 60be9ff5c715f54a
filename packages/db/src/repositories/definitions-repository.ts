import { canonicalJson, ConflictError, type ActivityDefinition } from '@activity-core/contracts';
import { and, asc, desc, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../client';
import type { Cursor } from '../cursor';
import { translatePgError, UniqueViolationError } from '../errors';
import { activityDefinitions, activityDefinitionVersions, definitionsVersion } from '../schema';

export interface DefinitionRow {
  id: string;
  name: string;
  version: number;
  enabled: boolean;
  definition: ActivityDefinition;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
}

/**
 * Who made a change to a definition: the request's credential in the form
 * `events.credential` uses (`api_key:<key id>`, or `anonymous` while
 * authentication is off). Recorded with the version it wrote, or as the
 * activity's `deleted_by`.
 */
export type ChangedBy = string;

/** One stored version of an activity, with who wrote it and when. */
export interface DefinitionVersionRow {
  activityId: string;
  version: number;
  name: string;
  enabled: boolean;
  definition: ActivityDefinition;
  /** When the version was written. */
  changedAt: Date;
  /** Null for versions written before changes were attributed (migration 0007). */
  changedBy: ChangedBy | null;
}

/** What the history of an activity hangs on: its newest version and whether (and by whom) it was deleted. */
export interface DefinitionHistoryHead {
  id: string;
  currentVersion: number;
  deletedAt: Date | null;
  deletedBy: ChangedBy | null;
}

/** Another writer created this id between our look and our insert. */
export class DefinitionIdTakenError extends Error {
  constructor(readonly activityId: string) {
    super(`activity ${activityId} was created concurrently`);
  }
}

export class DefinitionNameTakenError extends Error {
  constructor(readonly activityName: string) {
    super(`an activity named ${activityName} already exists`);
  }
}

/** The unique constraint that refused the write; undefined when the error is not a unique violation. */
function violatedConstraint(error: unknown): string | undefined {
  const translated = translatePgError(error);
  return translated instanceof UniqueViolationError ? translated.constraint : undefined;
}

function isNameConflict(error: unknown): boolean {
  return violatedConstraint(error) === 'activity_definitions_name_live_uq';
}

function toRow(row: typeof activityDefinitions.$inferSelect): DefinitionRow {
  return { ...row, definition: row.definition as ActivityDefinition };
}

function toVersionRow(row: typeof activityDefinitionVersions.$inferSelect): DefinitionVersionRow {
  return {
    activityId: row.activityId,
    version: row.version,
    name: row.name,
    enabled: row.enabled,
    definition: row.definition as ActivityDefinition,
    changedAt: row.createdAt,
    changedBy: row.changedBy,
  };
}

const headColumns = {
  id: activityDefinitions.id,
  currentVersion: activityDefinitions.version,
  deletedAt: activityDefinitions.deletedAt,
  deletedBy: activityDefinitions.deletedBy,
};

export function createDefinitionsRepository(db: Db) {
  async function writeVersion(tx: Db, row: DefinitionRow, changedBy: ChangedBy): Promise<void> {
    await tx
      .insert(activityDefinitionVersions)
      .values({
        activityId: row.id,
        version: row.version,
        name: row.name,
        enabled: row.enabled,
        definition: row.definition,
        changedBy,
      })
      .onConflictDoNothing();
  }

  return {
    /** Creates version 1, written by `changedBy`. Throws DefinitionNameTakenError when the name is in use. */
    async insert(id: string, definition: ActivityDefinition, changedBy: ChangedBy): Promise<DefinitionRow> {
      try {
        return await db.transaction(async (tx) => {
          const [inserted] = await tx
            .insert(activityDefinitions)
            .values({ id, name: definition.name, version: 1, enabled: definition.enabled, definition })
            .returning();
          const row = toRow(inserted!);
          await writeVersion(tx, row, changedBy);
          return row;
        });
      } catch (error) {
        if (violatedConstraint(error) !== undefined) {
          // Either constraint may be reported first when a concurrent PUT created this very id.
          const [holder] = await db
            .select({ deletedAt: activityDefinitions.deletedAt })
            .from(activityDefinitions)
            .where(eq(activityDefinitions.id, id));
          // A deleted activity keeps its id forever, so its runs keep one meaning.
          if (holder?.deletedAt != null)
            throw new ConflictError(`activity ${id} was deleted; its id cannot be reused — register it under a new id`);
          // A concurrent PUT created it first; the caller replaces instead.
          if (holder !== undefined) throw new DefinitionIdTakenError(id);
        }
        if (isNameConflict(error)) throw new DefinitionNameTakenError(definition.name);
        throw error;
      }
    },

    /**
     * Replaces the definition, bumping the version only when something
     * changed; repeating the same PUT is a no-op. A new version records
     * `changedBy`. Returns undefined when the activity does not exist (or was
     * deleted).
     */
    async replace(
      id: string,
      change: (current: DefinitionRow) => ActivityDefinition,
      changedBy: ChangedBy,
    ): Promise<{ row: DefinitionRow; changed: boolean } | undefined> {
      let attemptedName = '';
      try {
        return await db.transaction(async (tx) => {
          const [current] = await tx
            .select()
            .from(activityDefinitions)
            .where(and(eq(activityDefinitions.id, id), isNull(activityDefinitions.deletedAt)))
            .for('update');
          if (current === undefined) return undefined;
          const currentRow = toRow(current);
          const next = change(currentRow);
          attemptedName = next.name;
          // jsonb does not keep key order, so compare canonical forms.
          if (canonicalJson(next) === canonicalJson(currentRow.definition)) {
            return { row: currentRow, changed: false };
          }
          const [updated] = await tx
            .update(activityDefinitions)
            .set({
              name: next.name,
              enabled: next.enabled,
              definition: next,
              version: sql`${activityDefinitions.version} + 1`,
              updatedAt: sql`now()`,
            })
            .where(eq(activityDefinitions.id, id))
            .returning();
          const row = toRow(updated!);
          await writeVersion(tx, row, changedBy);
          return { row, changed: true };
        });
      } catch (error) {
        if (isNameConflict(error)) throw new DefinitionNameTakenError(attemptedName);
        throw error;
      }
    },

    /** The live (not deleted) activity with this name: names are unique among live activities. */
    async findByName(name: string): Promise<DefinitionRow | undefined> {
      const [row] = await db
        .select()
        .from(activityDefinitions)
        .where(and(eq(activityDefinitions.name, name), isNull(activityDefinitions.deletedAt)));
      return row === undefined ? undefined : toRow(row);
    },

    async get(id: string): Promise<DefinitionRow | undefined> {
      const [row] = await db
        .select()
        .from(activityDefinitions)
        .where(and(eq(activityDefinitions.id, id), isNull(activityDefinitions.deletedAt)));
      return row === undefined ? undefined : toRow(row);
    },

    /** A specific version, deleted activities included: runs keep their history. */
    async getVersion(id: string, version: number): Promise<DefinitionRow | undefined> {
      const [row] = await db
        .select()
        .from(activityDefinitionVersions)
        .where(and(eq(activityDefinitionVersions.activityId, id), eq(activityDefinitionVersions.version, version)));
      if (row === undefined) return undefined;
      return {
        id: row.activityId,
        name: row.name,
        version: row.version,
        enabled: row.enabled,
        definition: row.definition as ActivityDefinition,
        createdAt: row.createdAt,
        updatedAt: row.createdAt,
        deletedAt: null,
      };
    },

    async list(options: { limit: number; cursor?: Cursor; enabled?: boolean }): Promise<DefinitionRow[]> {
      const conditions = [isNull(activityDefinitions.deletedAt)];
      if (options.enabled !== undefined) conditions.push(eq(activityDefinitions.enabled, options.enabled));
      if (options.cursor !== undefined) {
        conditions.push(
          or(
            lt(activityDefinitions.createdAt, options.cursor.createdAt),
            and(
              eq(activityDefinitions.createdAt, options.cursor.createdAt),
              lt(activityDefinitions.id, options.cursor.id),
            ),
          )!,
        );
      }
      const rows = await db
        .select()
        .from(activityDefinitions)
        .where(and(...conditions))
        .orderBy(desc(activityDefinitions.createdAt), desc(activityDefinitions.id))
        .limit(options.limit);
      return rows.map(toRow);
    },

    /**
     * Every live activity events are routed to: the enabled ones, and the
     * disabled ones that hold their events (`when_disabled.action: hold`,
     * docs/recovery.md); the router filters them by trigger.
     */
    async listRoutable(): Promise<DefinitionRow[]> {
      const rows = await db
        .select()
        .from(activityDefinitions)
        .where(
          and(
            isNull(activityDefinitions.deletedAt),
            or(
              eq(activityDefinitions.enabled, true),
              sql`${activityDefinitions.definition} -> 'when_disabled' ->> 'action' = 'hold'`,
            ),
          ),
        )
        .orderBy(asc(activityDefinitions.createdAt), asc(activityDefinitions.id));
      return rows.map(toRow);
    },

    /**
     * The number that goes up with every change to the definitions (a trigger
     * in the changing transaction bumps it). One single-row read: callers
     * compare it with the one their cached index was loaded at. `undefined`
     * when the row is missing, which means "always reload".
     */
    async currentVersion(): Promise<bigint | undefined> {
      const [row] = await db
        .select({ version: definitionsVersion.version })
        .from(definitionsVersion)
        .where(eq(definitionsVersion.id, 1));
      return row?.version;
    },

    /** Soft delete by `deletedBy`: the row stays for run history; the name becomes free. */
    async softDelete(id: string, deletedBy: ChangedBy): Promise<DefinitionRow | undefined> {
      const [row] = await db
        .update(activityDefinitions)
        .set({ deletedAt: sql`now()`, deletedBy, enabled: false, updatedAt: sql`now()` })
        .where(and(eq(activityDefinitions.id, id), isNull(activityDefinitions.deletedAt)))
        .returning();
      return row === undefined ? undefined : toRow(row);
    },

    /**
     * The versions of an activity, newest first, deleted activities included,
     * with the head they belong to, read in one snapshot (a version written
     * meanwhile is in both or in neither). `before` continues a page: only
     * versions below it. Undefined when no activity has this id.
     */
    async history(
      id: string,
      options: { limit: number; before?: number },
    ): Promise<{ head: DefinitionHistoryHead; versions: DefinitionVersionRow[] } | undefined> {
      return await db.transaction(
        async (tx) => {
          const [head] = await tx.select(headColumns).from(activityDefinitions).where(eq(activityDefinitions.id, id));
          if (head === undefined) return undefined;
          const conditions = [eq(activityDefinitionVersions.activityId, id)];
          if (options.before !== undefined) conditions.push(lt(activityDefinitionVersions.version, options.before));
          const rows = await tx
            .select()
            .from(activityDefinitionVersions)
            .where(and(...conditions))
            .orderBy(desc(activityDefinitionVersions.version))
            .limit(options.limit);
          return { head, versions: rows.map(toVersionRow) };
        },
        { isolationLevel: 'repeatable read', accessMode: 'read only' },
      );
    },

    /** An activity's name (its last, for a deleted one); undefined when no activity has this id. */
    async nameOf(id: string): Promise<string | undefined> {
      const [row] = await db
        .select({ name: activityDefinitions.name })
        .from(activityDefinitions)
        .where(eq(activityDefinitions.id, id));
      return row?.name;
    },

    /** The head of an activity's history, deleted activities included; undefined when no activity has this id. */
    async historyHead(id: string): Promise<DefinitionHistoryHead | undefined> {
      const [head] = await db.select(headColumns).from(activityDefinitions).where(eq(activityDefinitions.id, id));
      return head;
    },

    /** The given versions of an activity that exist (deleted activities included), with who wrote each and when. */
    async findVersions(id: string, versions: readonly number[]): Promise<DefinitionVersionRow[]> {
      if (versions.length === 0) return [];
      const rows = await db
        .select()
        .from(activityDefinitionVersions)
        .where(
          and(
            eq(activityDefinitionVersions.activityId, id),
            inArray(activityDefinitionVersions.version, [...versions]),
          ),
        );
      return rows.map(toVersionRow);
    },
  };
}

export type DefinitionsRepository = ReturnType<typeof createDefinitionsRepository>;
