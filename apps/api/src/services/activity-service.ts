import { randomUUID } from 'node:crypto';
import {
  MAX_CALL_DEPTH,
  NotFoundError,
  type ActivityDefinition,
  type ActivityRecord,
  type EnableActivityResponse,
  type WhenDisabled,
} from '@activity-core/contracts';
import {
  decodeCursor,
  DefinitionIdTakenError,
  encodeCursor,
  type ChangedBy,
  type DefinitionRow,
  type DefinitionsRepository,
} from '@activity-core/db';
import { keysetPage, type Page } from './pagination';
import { InvalidInputError, SYSTEM_EVENT_TYPE_PREFIX, type FieldIssue } from '@activity-core/contracts';
import { definitionExpressionIssues } from '@activity-core/filters';
import { selfTriggerIssues } from '@activity-core/router';
import { cronScheduleSummaries } from '@activity-core/schedule-manager';

export function toActivityRecord(row: DefinitionRow): ActivityRecord {
  return {
    id: row.id,
    name: row.name,
    version: row.version,
    enabled: row.enabled,
    definition: row.definition,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    schedules: cronScheduleSummaries(row, new Date()),
  };
}

/**
 * An emitted event may not claim to be a verified webhook delivery: triggers
 * that require a `webhook:*` source trust that a signature was checked. Nor
 * may it claim a system event type (`activity_core.*`).
 * (The service's own `activity-core` source is the default for emitted
 * events and stays allowed.)
 */
export function emitSourceIssues(definition: Pick<ActivityDefinition, 'tasks'>): FieldIssue[] {
  return definition.tasks.flatMap((task, index): FieldIssue[] => {
    if (task.type !== 'emit_event') return [];
    const issues: FieldIssue[] = [];
    if (task.config.source.startsWith('webhook:')) {
      issues.push({
        path: `tasks[${index}].config.source`,
        message:
          'sources starting with "webhook:" are reserved for verified webhook deliveries; emitted events cannot claim one',
      });
    }
    // System events (activity_core.run.failed, …) are the service's own announcements: a definition cannot forge one.
    if (task.config.event_type.startsWith(SYSTEM_EVENT_TYPE_PREFIX)) {
      issues.push({
        path: `tasks[${index}].config.event_type`,
        message: `event types starting with "${SYSTEM_EVENT_TYPE_PREFIX}" are reserved for the service's system events; emitted events cannot claim one`,
      });
    }
    return issues;
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Activities one registration's call check reads at most (each a primary-key or name lookup). */
const MAX_CALL_CHECK_LOOKUPS = 200;

/**
 * The calls a definition's `run_activity` tasks start, followed through the
 * registered activities they name: a path back to this activity (a loop) or
 * deeper than MAX_CALL_DEPTH is an issue naming the task's `activity` field
 * and the path. An activity not registered yet is not followed (the run
 * checks again when it calls).
 */
async function callIssues(
  definitions: Pick<DefinitionsRepository, 'get' | 'findByName'>,
  definition: ActivityDefinition,
  selfId: string | undefined,
): Promise<FieldIssue[]> {
  const issues: FieldIssue[] = [];
  const targetsOf = (tasks: ActivityDefinition['tasks']): string[] =>
    tasks.flatMap((task) => (task.type === 'run_activity' ? [task.config.activity] : []));
  let lookups = 0;
  for (const [index, task] of definition.tasks.entries()) {
    if (task.type !== 'run_activity') continue;
    const path = `tasks[${index}].config.activity`;
    const seen = new Set<string>();
    const frontier: Array<{ target: string; chain: string[] }> = [
      { target: task.config.activity, chain: [definition.name] },
    ];
    while (frontier.length > 0 && lookups < MAX_CALL_CHECK_LOOKUPS) {
      const { target, chain } = frontier.shift()!;
      if (target === definition.name || target === selfId) {
        const through = [...chain, definition.name];
        issues.push({
          path,
          message: `runs itself through other activities: ${through.join(' → ')}`,
          code: 'call_loop',
        });
        break;
      }
      lookups += 1;
      const row = UUID.test(target) ? await definitions.get(target) : await definitions.findByName(target);
      if (row === undefined) continue;
      const through = [...chain, row.name];
      if (row.name === definition.name || row.id === selfId) {
        issues.push({
          path,
          message: `runs itself through other activities: ${through.join(' → ')}`,
          code: 'call_loop',
        });
        break;
      }
      if (through.length - 1 > MAX_CALL_DEPTH) {
        issues.push({
          path,
          message: `calls ${through.length - 1} activities deep (${through.join(' → ')}); the limit is ${MAX_CALL_DEPTH}`,
          code: 'call_too_deep',
        });
        break;
      }
      if (seen.has(row.id)) continue;
      seen.add(row.id);
      for (const next of targetsOf(row.definition.tasks)) frontier.push({ target: next, chain: through });
    }
  }
  return issues;
}

/** Hooks other parts (the schedule manager) attach to definition changes. */
export interface DefinitionObserver {
  onChanged(row: DefinitionRow): Promise<void>;
  onDeleted(row: DefinitionRow): Promise<void>;
}

/** What enabling asks of held events (docs/recovery.md, "Held events"): how many, and a release. */
export interface HeldEventsOnEnable {
  count(activityId: string): Promise<number>;
  releaseEnabled(row: DefinitionRow, actor: string): Promise<{ released: number; remaining: number }>;
}

export function createActivityService(deps: {
  definitions: DefinitionsRepository;
  /** Held events: enable answers how many its activity holds and releases them when asked. */
  held?: HeldEventsOnEnable;
  observers?: DefinitionObserver[];
  /** Checks beyond the definition schema (e.g. cron syntax Temporal supports); any issue is a 400. */
  validators?: Array<(definition: ActivityDefinition) => FieldIssue[]>;
}) {
  const observers = deps.observers ?? [];
  const validate = async (definition: ActivityDefinition, selfId?: string): Promise<void> => {
    // Expressions first, answered as the schema's refusals are: the schema bounds them, the server compiles them.
    const expressions = definitionExpressionIssues(definition).map(({ path, message, code }) => ({
      path,
      message,
      code,
    }));
    const issues: FieldIssue[] =
      expressions.length > 0
        ? expressions
        : [
            ...selfTriggerIssues(definition),
            ...emitSourceIssues(definition),
            ...(deps.validators ?? []).flatMap((check) => check(definition)),
            ...(await callIssues(deps.definitions, definition, selfId)),
          ];
    if (issues.length > 0)
      throw new InvalidInputError(issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), issues);
  };
  const changed = async (row: DefinitionRow): Promise<void> => {
    for (const observer of observers) await observer.onChanged(row);
  };

  async function requireRow(id: string): Promise<DefinitionRow> {
    const row = await deps.definitions.get(id);
    if (row === undefined) throw new NotFoundError('activity', id);
    return row;
  }

  async function setEnabled(
    id: string,
    enabled: boolean,
    changedBy: ChangedBy,
    whenDisabled?: WhenDisabled,
  ): Promise<ActivityRecord> {
    const replaced = await deps.definitions.replace(
      id,
      (current) => ({
        ...current.definition,
        enabled,
        ...(whenDisabled === undefined ? {} : { when_disabled: whenDisabled }),
      }),
      changedBy,
    );
    if (replaced === undefined) throw new NotFoundError('activity', id);
    if (replaced.changed) await changed(replaced.row);
    return toActivityRecord(replaced.row);
  }

  return {
    /** `changedBy` is recorded with every version a change writes (definition history); see ChangedBy. */
    async create(definition: ActivityDefinition, changedBy: ChangedBy): Promise<ActivityRecord> {
      await validate(definition);
      const row = await deps.definitions.insert(randomUUID(), definition, changedBy);
      await changed(row);
      return toActivityRecord(row);
    },

    /** PUT: creates the activity with this id, or replaces it. Repeating it changes nothing. */
    async put(
      id: string,
      definition: ActivityDefinition,
      changedBy: ChangedBy,
    ): Promise<{ record: ActivityRecord; created: boolean }> {
      await validate(definition, id);
      // Two passes at most: an identical PUT racing us may create the id between our replace and our insert.
      for (let pass = 0; ; pass++) {
        const replaced = await deps.definitions.replace(id, () => definition, changedBy);
        if (replaced !== undefined) {
          if (replaced.changed) await changed(replaced.row);
          return { record: toActivityRecord(replaced.row), created: false };
        }
        try {
          const row = await deps.definitions.insert(id, definition, changedBy);
          await changed(row);
          return { record: toActivityRecord(row), created: true };
        } catch (error) {
          if (error instanceof DefinitionIdTakenError && pass === 0) continue;
          throw error;
        }
      }
    },

    async get(id: string): Promise<ActivityRecord> {
      return toActivityRecord(await requireRow(id));
    },

    async list(query: { limit: number; cursor?: string; enabled?: boolean }): Promise<Page<ActivityRecord>> {
      return await keysetPage({
        limit: query.limit,
        cursor: query.cursor,
        decode: decodeCursor,
        encode: (last: DefinitionRow) => encodeCursor({ createdAt: last.createdAt, id: last.id }),
        fetch: ({ limit, cursor }) =>
          deps.definitions.list({
            limit,
            ...(cursor ? { cursor } : {}),
            ...(query.enabled === undefined ? {} : { enabled: query.enabled }),
          }),
        toItem: toActivityRecord,
      });
    },

    setEnabled,

    /**
     * Enables the activity and answers how many events it holds (held while
     * it was disabled with `when_disabled.action: hold`). They are released
     * only when asked (`releaseHeld`): resuming asks whether to release.
     */
    async enable(id: string, changedBy: ChangedBy, releaseHeld: boolean): Promise<EnableActivityResponse> {
      const record = await setEnabled(id, true, changedBy);
      if (deps.held === undefined) return { ...record, held_events: { held: 0, released: 0 } };
      if (!releaseHeld) return { ...record, held_events: { held: await deps.held.count(id), released: 0 } };
      const row = await deps.definitions.get(id);
      if (row === undefined) throw new NotFoundError('activity', id);
      const released = await deps.held.releaseEnabled(row, changedBy);
      return { ...record, held_events: { held: released.remaining, released: released.released } };
    },

    /** Removes the activity and its schedules; runs and their history stay. */
    async remove(id: string, deletedBy: ChangedBy): Promise<void> {
      const row = await deps.definitions.softDelete(id, deletedBy);
      if (row === undefined) throw new NotFoundError('activity', id);
      for (const observer of observers) await observer.onDeleted(row);
    },
  };
}

export type ActivityService = ReturnType<typeof createActivityService>;
