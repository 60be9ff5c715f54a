import { z } from 'zod';

/**
 * Terminology
 * - expression: CEL source an operator writes into a definition (a trigger's
 *   `filter`, a `cancel_on` or `wait_for_event` `match`, a concurrency `key`).
 * - expression kind: which compiler accepts it (what it may read, what it must
 *   return); the server compiles every expression of a definition it is asked
 *   to store and refuses one that does not compile (400 naming the field).
 * - expression site: where in a definition an expression of a kind is written.
 *
 * Contracts declare expressions as bounded strings and name their sites; the
 * CEL compiler (`@activity-core/filters`, `definitionExpressionIssues`) is not a
 * dependency of this package, so a client of these schemas carries no CEL or
 * RE2.
 */

/**
 * Longest expression accepted, in UTF-16 code units. It also caps how much work
 * parsing can do before the compiler's structural limits apply.
 */
export const MAX_EXPRESSION_LENGTH = 2_000;

/** The compilers an expression can be written for (see `@activity-core/filters`). */
export const EXPRESSION_KINDS = ['filter', 'match', 'key', 'task_condition', 'task_list'] as const;
export type ExpressionKind = (typeof EXPRESSION_KINDS)[number];

/**
 * An expression field: 1 to {@link MAX_EXPRESSION_LENGTH} characters. Whether
 * it compiles is checked by the server (and by the CLI before it sends), not by
 * this schema. `noun` names it in the messages ("a filter expression may be at
 * most …").
 */
export function expressionString(noun: string) {
  return z
    .string()
    .min(1, 'the expression is empty')
    .max(MAX_EXPRESSION_LENGTH, `a ${noun} expression may be at most ${MAX_EXPRESSION_LENGTH} characters long`);
}

/** One place in a definition where an expression is written: `*` stands for every element of an array. */
export interface ExpressionSite {
  readonly path: readonly string[];
  readonly kind: ExpressionKind;
}

/**
 * Every place an activity definition holds an expression, in the order of the
 * definition's fields. A new expression field is one row here (and a field
 * declared with {@link expressionString}); the server then compiles it on
 * every write, with a refusal naming the field.
 */
export const DEFINITION_EXPRESSION_SITES: readonly ExpressionSite[] = [
  { path: ['triggers', '*', 'filter'], kind: 'filter' },
  { path: ['triggers', '*', 'cancel_on', '*', 'match'], kind: 'match' },
  { path: ['triggers', '*', 'debounce', 'key'], kind: 'key' },
  { path: ['triggers', '*', 'batch', 'key'], kind: 'key' },
  { path: ['tasks', '*', 'config', 'match'], kind: 'match' },
  { path: ['tasks', '*', 'if'], kind: 'task_condition' },
  { path: ['tasks', '*', 'for_each'], kind: 'task_list' },
  { path: ['concurrency', 'key'], kind: 'key' },
  { path: ['throttle', 'key'], kind: 'key' },
  { path: ['rate_limit', 'key'], kind: 'key' },
  { path: ['fairness', 'key'], kind: 'key' },
];

/** One expression found in a value at a site: its path (`['triggers', 0, 'filter']`) and source. */
export interface ExpressionAt {
  readonly path: ReadonlyArray<string | number>;
  readonly kind: ExpressionKind;
  readonly expression: string;
}

/**
 * The expressions `value` (a parsed definition) holds at `sites`, in the order
 * of its fields: objects are walked in their key order, so the answer lists
 * fields in the order the schema reports its own issues.
 */
export function expressionsAt(
  value: unknown,
  sites: readonly ExpressionSite[] = DEFINITION_EXPRESSION_SITES,
): ExpressionAt[] {
  const found: ExpressionAt[] = [];
  const walk = (node: unknown, at: Array<string | number>, open: ReadonlyArray<ExpressionSite>): void => {
    const depth = at.length;
    const done = open.find((site) => site.path.length === depth);
    if (done !== undefined) {
      if (typeof node === 'string') found.push({ path: at, kind: done.kind, expression: node });
      return;
    }
    if (Array.isArray(node)) {
      const next = open.filter((site) => site.path[depth] === '*');
      if (next.length > 0) node.forEach((item, index) => walk(item, [...at, index], next));
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    for (const [key, child] of Object.entries(node)) {
      const next = open.filter((site) => site.path[depth] === key);
      if (next.length > 0) walk(child, [...at, key], next);
    }
  };
  walk(value, [], sites);
  return found;
}

/** `['triggers', 0, 'filter']` → `triggers[0].filter`, the form a FieldIssue's path takes. */
export function fieldPath(path: ReadonlyArray<string | number>): string {
  return path.reduce<string>(
    (out, segment) => (typeof segment === 'number' ? `${out}[${segment}]` : out === '' ? segment : `${out}.${segment}`),
    '',
  );
}
