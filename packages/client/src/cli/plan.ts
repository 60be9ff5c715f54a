/**
 * What `apply` would do: definitions are keyed by name, so each name in the
 * files is created (not live), updated (live, different) or unchanged (live,
 * equal), and with `--prune` each live name not in the files is deleted.
 * "Equal" is the server's own rule: the canonical JSON of the definition with
 * defaults applied, key order ignored — so `unchanged` here means the PUT
 * would not bump the version.
 */
import { canonicalJson, type ActivityRecord } from '@activity-core/contracts';
import { formatPath, type LoadedDefinition } from './load';

export interface FieldChange {
  /** `tasks[0].config.url`; `''` for the whole definition. */
  path: string;
  kind: 'added' | 'removed' | 'changed';
  before?: unknown;
  after?: unknown;
}

export type Change =
  | { kind: 'create'; name: string; desired: LoadedDefinition }
  | { kind: 'update'; name: string; desired: LoadedDefinition; live: ActivityRecord; fields: FieldChange[] }
  | { kind: 'unchanged'; name: string; desired: LoadedDefinition; live: ActivityRecord }
  | { kind: 'delete'; name: string; live: ActivityRecord };

export interface PlanOptions {
  /** Delete live activities that no file defines. */
  prune: boolean;
  /** With `prune`: only live activities whose name starts with this are candidates. */
  prunePrefix?: string | undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Field-level differences between two JSON values, depth first, keys in sorted order; `undefined` members count as absent. */
export function diffValues(before: unknown, after: unknown, path: Array<string | number> = []): FieldChange[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((key) => {
      const a = before[key];
      const b = after[key];
      if (a === undefined && b === undefined) return [];
      if (a === undefined) return [{ path: formatPath([...path, key]), kind: 'added' as const, after: b }];
      if (b === undefined) return [{ path: formatPath([...path, key]), kind: 'removed' as const, before: a }];
      return diffValues(a, b, [...path, key]);
    });
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const changes: FieldChange[] = [];
    for (let index = 0; index < Math.max(before.length, after.length); index++) {
      if (index >= before.length)
        changes.push({ path: formatPath([...path, index]), kind: 'added', after: after[index] });
      else if (index >= after.length)
        changes.push({ path: formatPath([...path, index]), kind: 'removed', before: before[index] });
      else changes.push(...diffValues(before[index], after[index], [...path, index]));
    }
    return changes;
  }
  return canonicalJson(before) === canonicalJson(after)
    ? []
    : [{ path: formatPath(path), kind: 'changed', before, after }];
}

/** The server's equality: what makes a PUT a no-op. */
export function sameDefinition(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/**
 * One change per name: the files' definitions in file order, then (with
 * prune) deletions in name order.
 */
export function planChanges(
  desired: readonly LoadedDefinition[],
  live: readonly ActivityRecord[],
  options: PlanOptions,
): Change[] {
  const liveByName = new Map(live.map((record) => [record.name, record]));
  const changes: Change[] = desired.map((definition): Change => {
    const record = liveByName.get(definition.name);
    if (record === undefined) return { kind: 'create', name: definition.name, desired: definition };
    if (sameDefinition(record.definition, definition.definition))
      return { kind: 'unchanged', name: definition.name, desired: definition, live: record };
    return {
      kind: 'update',
      name: definition.name,
      desired: definition,
      live: record,
      fields: diffValues(record.definition, definition.definition),
    };
  });
  if (options.prune) {
    const wanted = new Set(desired.map((definition) => definition.name));
    const prefix = options.prunePrefix ?? '';
    const doomed = live
      .filter((record) => !wanted.has(record.name) && record.name.startsWith(prefix))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    changes.push(...doomed.map((record): Change => ({ kind: 'delete', name: record.name, live: record })));
  }
  return changes;
}

export interface PlanSummary {
  create: number;
  update: number;
  unchanged: number;
  delete: number;
}

export function summarise(changes: readonly Change[]): PlanSummary {
  const summary: PlanSummary = { create: 0, update: 0, unchanged: 0, delete: 0 };
  for (const change of changes) summary[change.kind]++;
  return summary;
}

/** True when applying would change something on the server. */
export function hasChanges(changes: readonly Change[]): boolean {
  return changes.some((change) => change.kind !== 'unchanged');
}
