import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds per test file (path relative to the repository root) as the last full run took. */
export type Durations = Record<string, number>;

/**
 * Durations from the last run's JSON report (.data/test-results.json, which
 * `npm test` writes), or else the committed test/durations.json. A missing or
 * unreadable file is no durations at all: ordering is an optimisation, never
 * a reason for a run to fail.
 */
export function recordedDurations(root: string): Durations {
  for (const [path, read] of [
    [join(root, '.data', 'test-results.json'), fromReport] as const,
    [join(root, 'test', 'durations.json'), (json: unknown) => json as Durations] as const,
  ]) {
    if (!existsSync(path)) continue;
    try {
      const durations = read(JSON.parse(readFileSync(path, 'utf8')), root);
      if (Object.keys(durations).length > 0) return durations;
    } catch {
      continue;
    }
  }
  return {};
}

/**
 * Per-file wall time from a vitest JSON report, keyed by the path relative to
 * the repository the report was made in. That is `root` when the files are
 * under it; a report made in another clone (a clean-clone run copied back to
 * record test/durations.json) is keyed relative to the deepest directory all
 * of its files share — its repository root, for a whole run — and not as
 * `../../tmp/clone/test/…`, which no file of this tree would ever match.
 */
export function fromReport(report: unknown, root: string): Durations {
  const files = (
    (report as { testResults?: Array<{ name?: unknown; startTime?: unknown; endTime?: unknown }> }).testResults ?? []
  ).filter(
    (file): file is { name: string; startTime: number; endTime: number } =>
      typeof file.name === 'string' && typeof file.startTime === 'number' && typeof file.endTime === 'number',
  );
  const outside = files.some((file) => relative(root, file.name).startsWith('..'));
  const base = outside ? commonDirectory(files.map((file) => file.name)) : root;
  const durations: Durations = {};
  for (const file of files)
    durations[relative(base, file.name)] = Math.round((file.endTime - file.startTime) / 100) / 10;
  return durations;
}

function commonDirectory(paths: string[]): string {
  const split = paths.map((path) => dirname(path).split(sep));
  const shared: string[] = [];
  for (let i = 0; split.every((parts) => i < parts.length && parts[i] === split[0]![i]); i++)
    shared.push(split[0]![i]!);
  return shared.join(sep) || sep;
}

/**
 * Longest first. A file with no recorded time (a new one) counts as longer
 * than any recorded file: started early it overlaps the rest, started last it
 * would set the tail of the run.
 */
export function longestFirst<T>(items: T[], pathOf: (item: T) => string, durations: Durations): T[] {
  const time = (item: T) => durations[pathOf(item)] ?? Number.POSITIVE_INFINITY;
  return [...items].sort((a, b) => time(b) - time(a) || pathOf(a).localeCompare(pathOf(b)));
}

/**
 * Starts the slowest files first, by recorded duration. Vitest's own order
 * (largest file first on a clean clone) starts the small files that mostly
 * wait on modelled wall-clock time last, and they then set the tail.
 */
export default class DurationSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    return longestFirst(files, (file) => relative(root, file.moduleId), recordedDurations(root));
  }
}
