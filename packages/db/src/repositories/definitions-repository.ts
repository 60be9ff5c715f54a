import { canonicalJson, ConflictError, type ActivityDefinition } from '@activity-core/contracts';
import { and, asc, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../client';
import type { Cursor } from '../cursor';
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

const UNIQUE_VIOLATION = '23505';

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

function violatedConstraint(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: string; constraint?: string } }).cause ?? (error as { code?: string; constraint?: string });
  return cause?.code === UNIQUE_VIOLATION ? cause.constraint : undefined;
}

function isNameConflict(error: unknown): boolean {
  return violatedConstraint(error) === 'activity_definitions_name_live_uq';
}

function toRow(row: typeof activityDefinitions.$inferSelect): DefinitionRow {
  return { ...row, definition: row.definition as ActivityDefinition };
}

export function createDefinitionsRepository(db: Db) {
  async function writeVersion(tx: Db, row: DefinitionRow): Promise<void> {
    await tx
      .insert(activityDefinitionVersions)
      .values({ activityId: row.id, version: row.version, name: row.name, enabled: row.enabled, definition: row.definition })
      .onConflictDoNothing();
  }

  return {
    /** Creates version 1. Throws DefinitionNameTakenError when the name is in use. */
    async insert(id: string, definition: ActivityDefinition): Promise<DefinitionRow> {
      try {
        return await db.transaction(async (tx) => {
          const [inserted] = await tx
            .insert(activityDefinitions)
            .values({ id, name: definition.name, version: 1, enabled: definition.enabled, definition })
            .returning();
          const row = toRow(inserted!);
          await writeVersion(tx, row);
          return row;
        });
      } catch (error) {
        if (violatedConstraint(error) !== undefined) {
          // Either constraint may be reported first when a concurrent PUT created this very id.
          const [holder] = await db.select({ deletedAt: activityDefinitions.deletedAt }).from(activityDefinitions).where(eq(activityDefinitions.id, id));
          // A deleted activity keeps its id forever, so its runs keep one meaning.
          if (holder?.deletedAt != null) throw new ConflictError(`activity ${id} was deleted; its id cannot be reused — register it under a new id`);
          // A concurrent PUT created it first; the caller replaces instead.
          if (holder !== undefined) throw new DefinitionIdTakenError(id);
        }
        if (isNameConflict(error)) throw new DefinitionNameTakenError(definition.name);
        throw error;
      }
    },

    /**
     * Replaces the definition, bumping the version only when something
     * changed; repeating the same PUT is a no-op. Returns undefined when the
     * activity does not exist (or was deleted).
     */
    async replace(
      id: string,
      change: (current: DefinitionRow) => ActivityDefinition,
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
          await writeVersion(tx, row);
          return { row, changed: true };
        });
      } catch (error) {
        if (isNameConflict(error)) throw new DefinitionNameTakenError(attemptedName);
        throw error;
      }
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
            and(eq(activityDefinitions.createdAt, options.cursor.createdAt), lt(activityDefinitions.id, options.cursor.id)),
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

    /** Every live, enabled activity; the router filters them by trigger. */
    async listEnabled(): Promise<DefinitionRow[]> {
      const rows = await db
        .select()
        .from(activityDefinitions)
        .where(and(isNull(activityDefinitions.deletedAt), eq(activityDefinitions.enabled, true)))
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
      const [row] = await db.select({ version: definitionsVersion.version }).from(definitionsVersion).where(eq(definitionsVersion.id, 1));
      return row?.version;
    },

    /** Soft delete: the row stays for run history; the name becomes free. */
    async softDelete(id: string): Promise<DefinitionRow | undefined> {
      const [row] = await db
        .update(activityDefinitions)
        .set({ deletedAt: sql`now()`, enabled: false, updatedAt: sql`now()` })
        .where(and(eq(activityDefinitions.id, id), isNull(activityDefinitions.deletedAt)))
        .returning();
      return row === undefined ? undefined : toRow(row);
    },
  };
}

export type DefinitionsRepository = ReturnType<typeof createDefinitionsRepository>;
