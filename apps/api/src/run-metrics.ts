import type { Registry } from 'prom-client';

/**
 * Run outcome metrics, computed at scrape time from the `activity_runs` rows
 * (ADR 0038): runs finish in workers while `/metrics` is served by API
 * processes, and Postgres holds the one exact, restart-proof record of every
 * run's end. Every API process answers the same numbers (aggregate with
 * `max`, not `sum`); they never reset, since they are counts of rows.
 */

/** Upper bounds (seconds) of the run duration histogram: sub-second noop runs up to day-long delays. */
export const RUN_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400] as const;

/**
 * Most activities that get series of their own. Activities beyond this many
 * (those whose first run came last) are summed under `activity="_other"`, so
 * a runaway number of definitions cannot blow up the scrape: at most
 * (MAX + 1) × terminal statuses × (buckets + 3) series.
 */
const RUN_METRICS_MAX_ACTIVITIES = 500;

/** The label value activities beyond RUN_METRICS_MAX_ACTIVITIES are summed under. */
export const OTHER_ACTIVITIES_LABEL = '_other';

const durationOf = 'extract(epoch FROM finished_at - started_at)';
const RUN_OUTCOMES_QUERY = `
SELECT activity_id::text AS activity,
       status,
       count(*)::float8 AS count,
       coalesce(sum(greatest(${durationOf}, 0)), 0)::float8 AS sum,
       ARRAY[${RUN_DURATION_BUCKETS.map((le) => `count(*) FILTER (WHERE ${durationOf} <= ${le})`).join(', ')}]::float8[] AS buckets,
       min(started_at) AS first_started
  FROM activity_runs
 WHERE finished_at IS NOT NULL AND status NOT IN ('running', 'waiting_for_slot')
 GROUP BY activity_id, status
`;

interface RunOutcomeRow {
  activity: string;
  status: string;
  count: number;
  sum: number;
  /** Cumulative counts, one per RUN_DURATION_BUCKETS bound. */
  buckets: number[];
  first_started: Date | string;
}

interface Series {
  activity: string;
  status: string;
  count: number;
  sum: number;
  buckets: number[];
}

/**
 * Rows by activity and status, activities past the cap folded into `_other`.
 * Which activities keep their own series is decided by their first run
 * (oldest first, then id), so an activity's series does not move to `_other`
 * because another one was registered.
 */
export function foldRunOutcomes(
  rows: readonly RunOutcomeRow[],
  maxActivities: number = RUN_METRICS_MAX_ACTIVITIES,
): Series[] {
  const first = new Map<string, number>();
  for (const row of rows) {
    const at = new Date(row.first_started).getTime();
    first.set(row.activity, Math.min(first.get(row.activity) ?? Number.POSITIVE_INFINITY, at));
  }
  const kept = new Set(
    [...first.entries()]
      .sort(([a, atA], [b, atB]) => atA - atB || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, maxActivities)
      .map(([activity]) => activity),
  );
  const series = new Map<string, Series>();
  for (const row of rows) {
    const activity = kept.has(row.activity) ? row.activity : OTHER_ACTIVITIES_LABEL;
    const key = `${activity}\u0000${row.status}`;
    const entry = series.get(key) ?? {
      activity,
      status: row.status,
      count: 0,
      sum: 0,
      buckets: RUN_DURATION_BUCKETS.map(() => 0),
    };
    entry.count += Number(row.count);
    entry.sum += Number(row.sum);
    row.buckets.forEach((value, index) => (entry.buckets[index] = (entry.buckets[index] ?? 0) + Number(value)));
    series.set(key, entry);
  }
  return [...series.values()].sort((a, b) =>
    a.activity < b.activity ? -1 : a.activity > b.activity ? 1 : a.status < b.status ? -1 : a.status > b.status ? 1 : 0,
  );
}

type MetricValue = { value: number; labels: Record<string, string | number>; metricName?: string };

/** The part of a pg pool the gauges need. */
export interface Queryable {
  query(text: string): Promise<{ rows: unknown[] }>;
}

/**
 * Registers `activity_core_runs_finished_total{activity,status}` and
 * `activity_core_run_duration_seconds{activity,status}` on `registry`, both
 * read by one query per scrape (concurrent scrapes share it). Postgres down:
 * the two report no series, and `activity_core_metrics_postgres_up` says why.
 */
export function registerRunOutcomeMetrics(registry: Registry, deps: { pool: Queryable; maxActivities?: number }): void {
  let pendingRead: Promise<Series[] | undefined> | undefined;
  const read = (): Promise<Series[] | undefined> => {
    pendingRead ??= deps.pool
      .query(RUN_OUTCOMES_QUERY)
      .then((result) => foldRunOutcomes(result.rows as RunOutcomeRow[], deps.maxActivities))
      .catch(() => undefined)
      .finally(() => {
        pendingRead = undefined;
      });
    return pendingRead;
  };

  const custom = (
    name: string,
    help: string,
    type: 'counter' | 'histogram',
    values: (series: Series[]) => MetricValue[],
  ) => ({
    name,
    help,
    type,
    aggregator: 'max' as const,
    reset: () => undefined,
    async get() {
      const series = await read();
      return { name, help, type, aggregator: 'max' as const, values: series === undefined ? [] : values(series) };
    },
  });

  const finished = custom(
    'activity_core_runs_finished_total',
    'Runs that ended, by activity id and terminal status (succeeded, failed, cancelled, skipped); counted from the run records in Postgres, the same from every API process.',
    'counter',
    (series) =>
      series.map((entry) => ({ value: entry.count, labels: { activity: entry.activity, status: entry.status } })),
  );
  const durations = custom(
    'activity_core_run_duration_seconds',
    'How long finished runs took (finished_at - started_at), by activity id and terminal status; from the run records in Postgres.',
    'histogram',
    (series) =>
      series.flatMap((entry) => {
        const labels = { activity: entry.activity, status: entry.status };
        return [
          ...RUN_DURATION_BUCKETS.map((le, index) => ({
            metricName: 'activity_core_run_duration_seconds_bucket',
            value: entry.buckets[index] ?? 0,
            labels: { ...labels, le },
          })),
          {
            metricName: 'activity_core_run_duration_seconds_bucket',
            value: entry.count,
            labels: { ...labels, le: '+Inf' },
          },
          { metricName: 'activity_core_run_duration_seconds_sum', value: entry.sum, labels },
          { metricName: 'activity_core_run_duration_seconds_count', value: entry.count, labels },
        ];
      }),
  );
  // prom-client formats any registered object with name, help, type and get(); these two are computed, not accumulated.
  registry.registerMetric(finished as unknown as Parameters<Registry['registerMetric']>[0]);
  registry.registerMetric(durations as unknown as Parameters<Registry['registerMetric']>[0]);
}
