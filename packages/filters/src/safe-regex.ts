import { RE2JS } from '@bufbuild/re2';

/**
 * Regular expressions for `matches()`: RE2 syntax on `@bufbuild/re2`, an
 * automaton engine with no backtracking, so matching time is linear in the
 * text — `^(a+)+$` cannot hang. What remains is the size of the compiled
 * program: time per text character, and compile time, grow with it, and a short
 * pattern can expand a lot (`\pL{1000}` is a thousand instructions). So every
 * pattern's size is bounded *before* it is compiled, from its text alone.
 */

/**
 * Largest regular expression program accepted, in (estimated) instructions.
 * @default 1000 — UUID, e-mail or path patterns need tens; 1000 keeps a
 * pattern's compile and first match within tens of milliseconds.
 */
export const MAX_REGEX_PROGRAM_SIZE = 1_000;

/**
 * Longest pattern accepted, in UTF-16 code units. Patterns can come from the
 * payload (`data.s.matches(data.pattern)`), and parsing costs time per
 * character whatever the program size.
 * @default 2000 — the same as the longest filter expression, so any literal pattern fits.
 */
export const MAX_REGEX_PATTERN_LENGTH = 2_000;

/** Compiled patterns kept for reuse: RE2 builds its automaton lazily, so reuse is much faster. */
const CACHE_SIZE = 256;
const cache = new Map<string, RE2JS>();

/** Thrown for a pattern that is malformed or too large; the message says which. */
export class RegexRejectedError extends Error {
  readonly code = 'regex_rejected';

  constructor(message: string) {
    super(message);
    this.name = 'RegexRejectedError';
  }
}

/**
 * An upper bound on the number of program instructions RE2 compiles `pattern`
 * into, read from the pattern text in one pass without compiling it. Counted
 * repetitions multiply what they repeat (`(ab){3}` counts `ab` three times),
 * nested ones multiply again. Malformed patterns get some number; compiling
 * them reports the syntax error.
 */
export function estimateRegexSize(pattern: string): number {
  interface Frame {
    total: number;
    /** Size of the last atom, which a following quantifier repeats. */
    last: number;
  }
  const stack: Frame[] = [{ total: 0, last: 0 }];
  const top = (): Frame => stack[stack.length - 1] as Frame;
  const atom = (size: number): void => {
    const frame = top();
    frame.total += size;
    frame.last = size;
  };
  // RE2 compiles `x{n,m}` to up to m copies of x, each with a split instruction.
  const repeat = (times: number): void => {
    const frame = top();
    const repeated = (frame.last + 1) * times;
    frame.total += repeated - frame.last;
    frame.last = repeated;
  };

  let i = 0;
  while (i < pattern.length) {
    const char = pattern[i];
    if (char === '\\') {
      const next = pattern[i + 1];
      if (next === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        const literal = end === -1 ? pattern.length - (i + 2) : end - (i + 2);
        for (let k = 0; k < literal; k++) atom(1);
        i = end === -1 ? pattern.length : end + 2;
        continue;
      }
      i = skipEscape(pattern, i);
      atom(1);
    } else if (char === '[') {
      i = skipClass(pattern, i);
      atom(1);
    } else if (char === '(') {
      if (pattern[i + 1] === '?') {
        const flags = /^\(\?[imsU-]*\)/.exec(pattern.slice(i, i + 12));
        if (flags !== null) {
          i += flags[0].length;
          continue;
        }
      }
      stack.push({ total: 0, last: 0 });
      i += 1;
    } else if (char === ')' && stack.length > 1) {
      const group = stack.pop() as Frame;
      atom(group.total + 2);
      i += 1;
    } else if (char === '|') {
      const frame = top();
      frame.total += 1;
      frame.last = 0;
      i += 1;
    } else if (char === '*' || char === '+' || char === '?') {
      repeat(1);
      i += pattern[i + 1] === '?' ? 2 : 1;
    } else if (char === '{') {
      const counted = /^\{(\d{1,6})(?:(,)(\d{0,6}))?\}/.exec(pattern.slice(i, i + 16));
      if (counted === null) {
        atom(1);
        i += 1;
        continue;
      }
      const min = Number(counted[1]);
      const max = counted[2] === undefined ? min : counted[3] === '' ? min + 1 : Number(counted[3]);
      repeat(Math.max(1, min, max));
      i += counted[0].length + (pattern[i + counted[0].length] === '?' ? 1 : 0);
    } else {
      atom(1);
      i += 1;
    }
    // Only the innermost frame changed. Once it is past any limit, stop before
    // the numbers grow without bound.
    if (top().total > MAX_REGEX_PROGRAM_SIZE) return Number.POSITIVE_INFINITY;
  }
  let size = 0;
  for (const frame of stack) size += frame.total;
  return size + 2;
}

/** Index just past the escape sequence starting at `i` (which is a backslash). */
function skipEscape(pattern: string, i: number): number {
  const next = pattern[i + 1];
  if ((next === 'p' || next === 'P' || next === 'x') && pattern[i + 2] === '{') {
    const close = pattern.indexOf('}', i + 3);
    return close === -1 ? pattern.length : close + 1;
  }
  if (next === 'p' || next === 'P') return i + 3;
  if (next === 'x') return i + 4;
  return i + 2;
}

/** Index just past the character class starting at `i` (which is `[`). */
function skipClass(pattern: string, i: number): number {
  let j = i + 1;
  if (pattern[j] === '^') j += 1;
  if (pattern[j] === ']') j += 1;
  while (j < pattern.length && pattern[j] !== ']') {
    if (pattern[j] === '\\') j = skipEscape(pattern, j);
    else if (pattern.startsWith('[:', j)) {
      const close = pattern.indexOf(':]', j + 2);
      j = close === -1 ? j + 1 : close + 2;
    } else j += 1;
  }
  return j + 1;
}

/**
 * Compiles `pattern`, or throws {@link RegexRejectedError} if it is longer than
 * {@link MAX_REGEX_PATTERN_LENGTH}, malformed, or its estimated program exceeds
 * {@link MAX_REGEX_PROGRAM_SIZE}. Compiled patterns are cached.
 */
export function compileRegex(pattern: string): RE2JS {
  const cached = cache.get(pattern);
  if (cached !== undefined) return cached;
  if (pattern.length > MAX_REGEX_PATTERN_LENGTH) {
    throw new RegexRejectedError(
      `regular expression is ${pattern.length} characters long; the limit is ${MAX_REGEX_PATTERN_LENGTH}`,
    );
  }
  if (estimateRegexSize(pattern) > MAX_REGEX_PROGRAM_SIZE) {
    throw new RegexRejectedError(
      `regular expression is too complex (its program would exceed ${MAX_REGEX_PROGRAM_SIZE} instructions): ${abbreviate(pattern)}`,
    );
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (error) {
    throw new RegexRejectedError(
      `invalid regular expression: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(pattern, compiled);
  return compiled;
}

function abbreviate(pattern: string): string {
  return pattern.length > 60 ? `${pattern.slice(0, 57)}...` : pattern;
}
