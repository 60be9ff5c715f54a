import {
  diffJson,
  InvalidInputError,
  MAX_DEFINITION_VERSION,
  NotFoundError,
  type ActivityVersion,
  type ActivityVersionPage,
  type ActivityVersionSummary,
  type DefinitionDiff,
} from '@activity-core/contracts';
import type { DefinitionHistoryHead, DefinitionsRepository, DefinitionVersionRow } from '@activity-core/db';
import { keysetPage } from './pagination';

const CURSOR = /^version:([1-9][0-9]{0,9})$/;

/** An opaque cursor: the version the page ended at (pages go newest first, so the next one is below it). */
export function encodeVersionCursor(version: number): string {
  return Buffer.from(`version:${version}`).toString('base64url');
}

/** Undefined for anything encodeVersionCursor did not produce. */
export function decodeVersionCursor(cursor: string): number | undefined {
  const match = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (match === null) return undefined;
  const version = Number(match[1]);
  return version <= MAX_DEFINITION_VERSION ? version : undefined;
}

function toSummary(row: DefinitionVersionRow): ActivityVersionSummary {
  return {
    activity_id: row.activityId,
    version: row.version,
    name: row.name,
    enabled: row.enabled,
    changed_at: row.changedAt.toISOString(),
    changed_by: row.changedBy,
  };
}

/** Which two versions a diff compares when the request leaves one or both out. */
export function diffRange(query: { from?: number; to?: number }, currentVersion: number): { from: number; to: number } {
  const to = query.to ?? currentVersion;
  if (query.from !== undefined) return { from: query.from, to };
  if (to === 1) {
    throw new InvalidInputError('version 1 is the first version: say which version to compare it with in from', [
      { path: 'querystring.from', message: 'required when to is 1 (version 1 has no previous version)' },
    ]);
  }
  return { from: to - 1, to };
}

/**
 * The version history of activity definitions: every version with who wrote
 * it and when, one version in full, and what changed between two versions.
 * Deleted activities keep their history; only an id that was never an
 * activity is a 404.
 */
export function createDefinitionHistoryService(deps: { definitions: DefinitionsRepository }) {
  const unknownActivity = (id: string) => new NotFoundError('activity', id);
  const unknownVersion = (id: string, version: number, role?: 'from' | 'to') =>
    new NotFoundError(`activity ${id} version`, role === undefined ? String(version) : `${version} (${role})`);

  return {
    /** Versions newest first, with the activity's current version and its deletion, if any. */
    async list(id: string, query: { limit: number; cursor?: string }): Promise<ActivityVersionPage> {
      let head: DefinitionHistoryHead | undefined;
      const page = await keysetPage({
        limit: query.limit,
        cursor: query.cursor,
        decode: decodeVersionCursor,
        encode: (last: DefinitionVersionRow) => encodeVersionCursor(last.version),
        fetch: async ({ limit, cursor }) => {
          const history = await deps.definitions.history(id, {
            limit,
            ...(cursor === undefined ? {} : { before: cursor }),
          });
          if (history === undefined) throw unknownActivity(id);
          head = history.head;
          return history.versions;
        },
        toItem: toSummary,
      });
      return {
        activity_id: id,
        current_version: head!.currentVersion,
        deleted_at: head!.deletedAt?.toISOString() ?? null,
        deleted_by: head!.deletedBy,
        ...page,
      };
    },

    async get(id: string, version: number): Promise<ActivityVersion> {
      const [row] = await deps.definitions.findVersions(id, [version]);
      if (row === undefined) {
        if ((await deps.definitions.historyHead(id)) === undefined) throw unknownActivity(id);
        throw unknownVersion(id, version);
      }
      return { ...toSummary(row), definition: row.definition };
    },

    /** The JSON Patch from version `from` to version `to` (defaults: `to` the current version, `from` the one before `to`). */
    async diff(id: string, query: { from?: number; to?: number }): Promise<DefinitionDiff> {
      const head = await deps.definitions.historyHead(id);
      if (head === undefined) throw unknownActivity(id);
      const range = diffRange(query, head.currentVersion);
      const rows = await deps.definitions.findVersions(id, [range.from, range.to]);
      const from = rows.find((row) => row.version === range.from);
      const to = rows.find((row) => row.version === range.to);
      if (from === undefined) throw unknownVersion(id, range.from, 'from');
      if (to === undefined) throw unknownVersion(id, range.to, 'to');
      return {
        activity_id: id,
        from: toSummary(from),
        to: toSummary(to),
        patch: diffJson(from.definition, to.definition),
      };
    },
  };
}

export type DefinitionHistoryService = ReturnType<typeof createDefinitionHistoryService>;
