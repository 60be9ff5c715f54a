/**
 * Durations in definitions are strings with one unit, e.g. `250ms`, `30s`,
 * `5m`, `2h`, `1d`: readable in JSON and unambiguous about their unit.
 * Pure; safe in workflow code.
 */
export const DURATION_PATTERN = /^(\d{1,9})(ms|s|m|h|d)$/;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function parseDurationMs(value: string): number {
  const match = DURATION_PATTERN.exec(value);
  if (match === null) throw new Error(`not a duration: ${value} (expected e.g. 500ms, 30s, 5m, 2h, 1d)`);
  const amount = Number(match[1]);
  const unit = match[2] as keyof typeof UNIT_MS;
  return amount * UNIT_MS[unit];
}
