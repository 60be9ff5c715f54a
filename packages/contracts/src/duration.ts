/**
 * Durations in definitions are strings with one unit, e.g. `250ms`, `30s`,
 * `5m`, `2h`, `1d`: readable in JSON and unambiguous about their unit.
 * Pure; safe in workflow code.
 */
export const DURATION_PATTERN = /^(\d{1,9})(ms|s|m|h|d)$/;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * The duration in milliseconds, or undefined when `value` is not a duration.
 * For range checks beside the Duration schema: a value the pattern already
 * refused is left to that error instead of throwing (a thrown error inside a
 * schema refinement is a 500, not a 400).
 */
export function tryParseDurationMs(value: string): number | undefined {
  const match = DURATION_PATTERN.exec(value);
  if (match === null) return undefined;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

export function parseDurationMs(value: string): number {
  const ms = tryParseDurationMs(value);
  if (ms === undefined) throw new Error(`not a duration: ${value} (expected e.g. 500ms, 30s, 5m, 2h, 1d)`);
  return ms;
}
