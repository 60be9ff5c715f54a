import { z } from 'zod';
import { canonicalJson } from './canonical-json';

/**
 * A structural diff of two JSON documents as an RFC 6902 JSON Patch: applied
 * in order to `from`, the operations give `to`. Only `add`, `remove` and
 * `replace` are produced. `remove` and `replace` also carry `old_value`, the
 * value the operation takes away, so a reader sees both sides of a change;
 * RFC 6902 (section 4) tells appliers to ignore members an operation does not
 * define, so the patch stays applicable by any RFC 6902 library.
 *
 * Paths are RFC 6901 JSON Pointers (`/tasks/0/config/url`; `~` is written
 * `~0` and `/` is written `~1` inside a key). Array indexes are those of the
 * array as the earlier operations of the patch left it.
 *
 * Pure and iterative (an explicit stack), so no nesting depth can overflow
 * the call stack.
 */
export type JsonPatchOperation =
  | { op: 'add'; path: string; value: unknown }
  | { op: 'remove'; path: string; old_value: unknown }
  | { op: 'replace'; path: string; value: unknown; old_value: unknown };

const Pointer = z.string().meta({
  description: 'RFC 6901 JSON Pointer into the definition, e.g. `/tasks/0/config/url`; `""` is the whole definition.',
});

export const JsonPatchOperation = z
  .discriminatedUnion('op', [
    z.object({ op: z.literal('add'), path: Pointer, value: z.unknown().meta({ description: 'The value added.' }) }),
    z.object({
      op: z.literal('remove'),
      path: Pointer,
      old_value: z.unknown().meta({ description: 'The value removed (not part of RFC 6902; appliers ignore it).' }),
    }),
    z.object({
      op: z.literal('replace'),
      path: Pointer,
      value: z.unknown().meta({ description: 'The new value.' }),
      old_value: z.unknown().meta({ description: 'The value replaced (not part of RFC 6902; appliers ignore it).' }),
    }),
  ])
  .meta({
    id: 'JsonPatchOperation',
    description:
      'One RFC 6902 JSON Patch operation (`add`, `remove` or `replace`), with the value taken away in `old_value`.',
  });

/**
 * Arrays are aligned by a longest common subsequence of their elements, so
 * inserting or removing one task shows as one `add` or `remove` rather than
 * a change of every later task. The table costs one cell per pair of
 * differing elements; past this many cells (after the common head and tail
 * are set aside) the differing parts are compared position by position.
 */
export const DEFAULT_MAX_LCS_CELLS = 1_000_000;

/** One RFC 6901 reference token. */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * A location as a chain of tokens, each linking to its parent: a nested
 * comparison costs one link, not a copy of its parent's whole path; the
 * pointer text is built only for the operations emitted.
 */
interface Location {
  parent: Location | undefined;
  /** Already escaped. */
  token: string;
}

function pointer(location: Location | undefined): string {
  const tokens: string[] = [];
  for (let at = location; at !== undefined; at = at.parent) tokens.push(at.token);
  return tokens.length === 0 ? '' : `/${tokens.reverse().join('/')}`;
}

const child = (parent: Location | undefined, token: string | number): Location => ({
  parent,
  token: typeof token === 'number' ? String(token) : escapePointerToken(token),
});

type Work = { op: JsonPatchOperation } | { at: Location | undefined; from: unknown; to: unknown };

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** JSON has no `undefined`: an object member holding it is absent, an array element holding it is null. */
function member(object: Record<string, unknown>, key: string): { present: boolean; value: unknown } {
  const value = Object.hasOwn(object, key) ? object[key] : undefined;
  return { present: value !== undefined, value };
}

const element = (value: unknown): unknown => (value === undefined ? null : value);

/** Either unchanged (`keep`) or a run of removed and added elements between two kept ones. */
type Step = { keep: true } | { keep: false; removed: number[]; added: number[] };

/**
 * How `from` becomes `to`, element by element: kept elements (equal as
 * canonical JSON) and, between them, the indexes removed from `from` and
 * added from `to`.
 */
function alignArrays(
  from: readonly unknown[],
  to: readonly unknown[],
  maxCells: number,
): { head: number; steps: Step[] } {
  // One element each: compared in place (no patch when equal), without the canonical text of either.
  if (from.length === 1 && to.length === 1) return { head: 0, steps: [{ keep: false, removed: [0], added: [0] }] };
  const a = from.map((value) => canonicalJson(element(value)));
  const b = to.map((value) => canonicalJson(element(value)));
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let endA = a.length;
  let endB = b.length;
  while (endA > head && endB > head && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - head;
  const m = endB - head;
  const steps: Step[] = [];
  let gap: { removed: number[]; added: number[] } | undefined;
  const open = () => (gap ??= { removed: [], added: [] });
  const close = () => {
    if (gap !== undefined) steps.push({ keep: false, ...gap });
    gap = undefined;
  };

  if (n > 0 && m > 0 && n * m <= maxCells) {
    // lcs[i * (m + 1) + j]: length of the longest common subsequence of a[head+i..endA) and b[head+j..endB).
    const width = m + 1;
    const lcs = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * width + j] =
          a[head + i] === b[head + j]
            ? lcs[(i + 1) * width + j + 1]! + 1
            : Math.max(lcs[(i + 1) * width + j]!, lcs[i * width + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] === b[head + j]) {
        close();
        steps.push({ keep: true });
        i++;
        j++;
      } else if (j >= m || (i < n && lcs[(i + 1) * width + j]! >= lcs[i * width + j + 1]!)) {
        open().removed.push(head + i++);
      } else {
        open().added.push(head + j++);
      }
    }
  } else {
    for (let i = head; i < endA; i++) open().removed.push(i);
    for (let j = head; j < endB; j++) open().added.push(j);
  }
  close();
  return { head, steps };
}

/** The operations (and nested comparisons) that turn array `from` into `to`, in patch order. */
function planArray(
  at: Location | undefined,
  from: readonly unknown[],
  to: readonly unknown[],
  maxCells: number,
): Work[] {
  const { head, steps } = alignArrays(from, to, maxCells);
  const work: Work[] = [];
  // The index in the array as the operations planned so far leave it.
  let index = head;
  for (const step of steps) {
    if (step.keep) {
      index++;
      continue;
    }
    const paired = Math.min(step.removed.length, step.added.length);
    // A changed element is compared in place, so a changed task shows which of its fields changed.
    for (let k = 0; k < paired; k++)
      work.push({ at: child(at, index++), from: element(from[step.removed[k]!]), to: element(to[step.added[k]!]) });
    for (let k = paired; k < step.removed.length; k++)
      work.push({ op: { op: 'remove', path: pointer(child(at, index)), old_value: element(from[step.removed[k]!]) } });
    for (let k = paired; k < step.added.length; k++)
      work.push({ op: { op: 'add', path: pointer(child(at, index++)), value: element(to[step.added[k]!]) } });
  }
  return work;
}

/** The operations (and nested comparisons) that turn object `from` into `to`, keys in sorted order. */
function planObject(at: Location | undefined, from: Record<string, unknown>, to: Record<string, unknown>): Work[] {
  const keys = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  const work: Work[] = [];
  for (const key of keys) {
    const location = child(at, key);
    const before = member(from, key);
    const after = member(to, key);
    if (before.present && after.present) work.push({ at: location, from: before.value, to: after.value });
    else if (before.present) work.push({ op: { op: 'remove', path: pointer(location), old_value: before.value } });
    else if (after.present) work.push({ op: { op: 'add', path: pointer(location), value: after.value } });
  }
  return work;
}

/**
 * The JSON Patch that turns `from` into `to` (both JSON values). Equal
 * documents give `[]`; objects are compared member by member, arrays element
 * by element (see DEFAULT_MAX_LCS_CELLS), anything else that differs is one
 * `replace`.
 */
export function diffJson(from: unknown, to: unknown, options: { maxLcsCells?: number } = {}): JsonPatchOperation[] {
  const maxCells = options.maxLcsCells ?? DEFAULT_MAX_LCS_CELLS;
  const patch: JsonPatchOperation[] = [];
  // Last item first, so operations come out in patch order.
  const stack: Work[] = [{ at: undefined, from, to }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if ('op' in item) {
      patch.push(item.op);
      continue;
    }
    const { at, from: a, to: b } = item;
    let planned: Work[];
    if (isObject(a) && isObject(b)) planned = planObject(at, a, b);
    else if (Array.isArray(a) && Array.isArray(b)) planned = planArray(at, a, b, maxCells);
    // Scalars, or two values of different kinds (an object and an array, a string and an object, …).
    else planned = a === b ? [] : [{ op: { op: 'replace', path: pointer(at), value: b, old_value: a } }];
    for (let i = planned.length - 1; i >= 0; i--) stack.push(planned[i]!);
  }
  return patch;
}
