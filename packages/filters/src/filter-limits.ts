/**
 * Limits that keep filter compilation and evaluation bounded, whatever an
 * operator registers and whatever a sender posts. Every expression that passes
 * these limits at registration passes them again when the router recompiles it
 * in another process: none of them depends on the machine or its load.
 */

import { MAX_EXPRESSION_LENGTH } from '@activity-core/contracts/expressions';

/**
 * Longest filter expression accepted, in UTF-16 code units: the limit the
 * definition schema declares (2000, far above any readable filter; it also
 * caps how much work parsing can do before the structural limits below apply).
 */
export const MAX_FILTER_EXPRESSION_LENGTH = MAX_EXPRESSION_LENGTH;

/**
 * Most syntax-tree nodes a filter may have, counted after macro expansion
 * (`exists`, `all`, `map`, … expand to about ten nodes each).
 * @default 1000 — a 2,000-character filter of ordinary shape stays well below it.
 */
export const MAX_FILTER_AST_NODES = 1_000;

/**
 * Deepest syntax-tree nesting accepted, counted after macro expansion.
 * @default 100 — CEL parses `a || b || c` as nested calls, so a chain of
 * alternatives nests as deep as it is long; 100 allows long chains while
 * keeping the parser, planner and evaluator (all recursive) far from the stack
 * limit.
 */
export const MAX_FILTER_NESTING_DEPTH = 100;

/**
 * Most cost units one evaluation may spend before it stops with an `error`
 * outcome. A unit is roughly one character or list element an operation has to
 * touch: every function call costs 1 plus the size of its operands (equality and
 * `in` count nested elements; `matches` counts the text once per 4 instructions
 * of the compiled pattern, as RE2's time grows with both), and every pass of a macro (`exists`,
 * `all`, …) over a list or map costs its size times the size of the macro's body.
 * @default 5_000_000 — several passes over a 1 MiB payload (the default body
 * limit), or one `exists` with a small body over some 400,000 elements.
 * Measured on the 2-vCPU dev container, adversarial filters stop within about
 * 0.4 s; ordinary filters spend tens of units.
 */
export const MAX_FILTER_EVALUATION_COST = 5_000_000;
