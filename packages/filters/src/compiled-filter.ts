import type { CelResult } from '@bufbuild/cel';
import type { EnvelopeVariable } from './envelope-variables';

declare const compiledFilterBrand: unique symbol;

/**
 * A filter expression that passed validation, ready to evaluate any number of
 * times. Opaque: only {@link compileFilter} makes one, so holding a
 * `CompiledFilter` proves the expression was validated.
 */
export interface CompiledFilter {
  /** The expression as registered. */
  readonly expression: string;
  readonly [compiledFilterBrand]: true;
}

/** What evaluation needs, kept out of reach of callers. */
export interface FilterProgram {
  /** Runs the planned expression against bindings for the envelope variables. */
  readonly run: (bindings: Record<string, unknown>) => CelResult;
  /** The envelope variables the expression reads; only these are bound. */
  readonly variables: ReadonlySet<EnvelopeVariable>;
  /** Source offset (0-based, UTF-16 code units) of each expression node id. */
  readonly positions: Readonly<Record<string, number>>;
}

const programs = new WeakMap<CompiledFilter, FilterProgram>();

/** Makes the opaque handle for a program; only the compiler calls this. */
export function registerProgram(expression: string, program: FilterProgram): CompiledFilter {
  const filter = Object.freeze({ expression }) as CompiledFilter;
  programs.set(filter, program);
  return filter;
}

/** The program behind a filter, or `undefined` for an object {@link compileFilter} did not make. */
export function programOf(filter: CompiledFilter): FilterProgram | undefined {
  return programs.get(filter);
}
