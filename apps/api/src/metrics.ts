import type { EventIngest } from '@activity-core/router';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerRunOutcomeMetrics, type Queryable } from './run-metrics';

/**
 * What `GET /metrics` exposes, in the Prometheus text format.
 *
 * Two kinds of figures:
 * - counters and histograms of this API process (requests, ingested events and
 *   their routing outcomes, Node process figures); sum them across processes;
 * - gauges read from Postgres at scrape time: the state every process shares,
 *   the same from whichever process is scraped (take `max`, not `sum`). These
 *   are the ones to alert on: an accepted event still waiting for routing, a
 *   cron decision whose run is not confirmed started.
 */
export interface ApiMetrics {
  registry: Registry;
  /** Records one answered HTTP request under its route template (not the raw URL: bounded label values). */
  observeRequest(method: string, route: string, statusCode: number, seconds: number): void;
  /** The ingest, counting every outcome it returns. */
  countIngest(ingest: EventIngest): EventIngest;
  /** A dependency (postgres, temporal) was found up or down by this process's monitor. */
  dependencyChanged(name: string, up: boolean): void;
  /** A pooled Postgres connection broke outside a query (the server went away); the pool replaces it. */
  postgresConnectionLost(): void;
  /** This process decided a paced route (docs/pacing.md): delayed by the throttle, or dropped by the rate limit. */
  runPaced(activity: string, reason: 'throttle' | 'rate_limit' | undefined): void;
  /** What a replay did for one activity (`mode`: if_no_runs, force; `status`: started, already_ran, duplicate, pending). */
  countReplay(mode: string, status: string): void;
}

/** One query, every gauge: each sub-select is served by a partial index on the small "pending" or "running" set. */
const STATE_QUERY = `
SELECT
  (SELECT count(*) FROM events WHERE routing_state = 'pending')::int AS events_pending,
  (SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0) FROM events WHERE routing_state = 'pending')::float8 AS events_pending_oldest_seconds,
  (SELECT count(*) FROM activity_runs WHERE status = 'running')::int AS runs_running,
  (SELECT coalesce(extract(epoch FROM now() - min(started_at)), 0) FROM activity_runs WHERE status = 'running')::float8 AS runs_running_oldest_seconds,
  (SELECT count(*) FROM schedule_fires WHERE status = 'pending')::int AS schedule_fires_pending,
  (SELECT count(*) FROM schedule_states WHERE paused)::int AS schedules_paused,
  (SELECT count(*) FROM activity_definitions WHERE deleted_at IS NULL AND enabled)::int AS activities_enabled
`;

interface StateRow {
  events_pending: number;
  events_pending_oldest_seconds: number;
  runs_running: number;
  runs_running_oldest_seconds: number;
  schedule_fires_pending: number;
  schedules_paused: number;
  activities_enabled: number;
}

/**
 * Per activity and kind of window (debounce, batch): events merged (a closed
 * debounce window's members but its last, a leading window's but its first;
 * every member of a closed batch) and windows open.
 */
const COALESCE_QUERY = `
  SELECT activity_id, kind,
         coalesce(sum(CASE WHEN kind = 'batch' THEN member_count ELSE member_count - 1 END)
           FILTER (WHERE state = 'closed' OR mode = 'leading'), 0) AS merged,
         count(*) FILTER (WHERE state = 'open' AND (mode = 'trailing' OR due_at > now())) AS open
  FROM coalesce_windows GROUP BY activity_id, kind`;

/**
 * Per activity, the routes that were ever held (docs/recovery.md, "Held events"; `expires_at` is set on
 * them for good): held now, and how the others left the hold. A route no longer held, discarded or expired
 * was released (its outcome is its run's now).
 */
const HELD_QUERY = `
  SELECT activity_id,
         count(*) FILTER (WHERE outcome = 'held') AS held,
         count(*) FILTER (WHERE outcome = 'discarded') AS discarded,
         count(*) FILTER (WHERE outcome = 'expired') AS expired,
         count(*) FILTER (WHERE outcome NOT IN ('held', 'discarded', 'expired')) AS released
  FROM event_routes WHERE expires_at IS NOT NULL GROUP BY activity_id`;

interface HeldRow {
  activity_id: string;
  held: string;
  discarded: string;
  expired: string;
  released: string;
}

// Open dead letters (docs/recovery.md, "Dead letters"): routes `dead_letter` by reason, and `filter_error`, not discarded.
const DEAD_LETTERS_QUERY = `
  SELECT activity_id::text AS activity, coalesce(reason_code, 'filter_error') AS reason, count(*) AS count
  FROM event_routes WHERE outcome IN ('dead_letter', 'filter_error') AND discarded_at IS NULL
  GROUP BY 1, 2`;

export function createApiMetrics(deps: { pool: Queryable }): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'activity_core_api_' });

  const requests = new Counter({
    name: 'activity_core_http_requests_total',
    help: 'HTTP requests answered by this API process, by route template and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'activity_core_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route template.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const ingested = new Counter({
    name: 'activity_core_events_ingested_total',
    help: 'Events taken in by this API process (POST /v1/events items and webhook deliveries): accepted (new) or duplicate (a redelivery).',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const delayed = new Counter({
    name: 'activity_core_runs_delayed_total',
    help: 'Event runs this API process started later than their event, by activity (name) and reason (throttle). Sum across processes.',
    labelNames: ['activity', 'reason'] as const,
    registers: [registry],
  });
  const dropped = new Counter({
    name: 'activity_core_runs_dropped_total',
    help: 'Event runs this API process did not start, recorded as dropped, by activity (name) and reason (rate_limit). Sum across processes.',
    labelNames: ['activity', 'reason'] as const,
    registers: [registry],
  });
  const routes = new Counter({
    name: 'activity_core_event_routes_total',
    help: 'Per matched activity, what ingesting an event decided: started, duplicate, pending (routed later by the dispatcher), filtered, filter_error.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });

  const dependencyUp = new Gauge({
    name: 'activity_core_dependency_up',
    help: '1 while this process reaches the dependency (postgres, temporal), 0 while it does not; checked every 2 s. Requests needing it answer 503 meanwhile, and it recovers by itself.',
    labelNames: ['dependency'] as const,
    registers: [registry],
  });
  const replays = new Counter({
    name: 'activity_core_event_replays_total',
    help: 'Per activity an event was replayed for (one replay or a bulk replay), by mode and what the replay did: started, already_ran, duplicate, pending.',
    labelNames: ['mode', 'status'] as const,
    registers: [registry],
  });
  const dependencyTransitions = new Counter({
    name: 'activity_core_dependency_transitions_total',
    help: 'Times this process lost (to="lost") or regained (to="regained") a dependency.',
    labelNames: ['dependency', 'to'] as const,
    registers: [registry],
  });
  const dependencyState = new Map<string, boolean>();
  const connectionsLost = new Counter({
    name: 'activity_core_postgres_connections_lost_total',
    help: 'Pooled Postgres connections of this process that broke because the server went away (restart, failover, network); each is replaced on the next use.',
    registers: [registry],
  });

  // Debounce windows (docs/coalescing.md), read from Postgres at scrape time: windows close in the workers.
  let windowsRead: Promise<Array<{ activity_id: string; kind: string; merged: string; open: string }>> | undefined;
  const readWindows = () => {
    windowsRead ??= deps.pool
      .query(COALESCE_QUERY)
      .then((result) => result.rows as Array<{ activity_id: string; kind: string; merged: string; open: string }>)
      .catch(() => [])
      .finally(() => {
        windowsRead = undefined;
      });
    return windowsRead;
  };
  new Counter({
    name: 'activity_core_events_merged_total',
    help: "Events recorded merged into another event's run, by activity id and reason (debounce, batch): every event of a debounce window but the one whose run it became (trailing: once the window closed; leading: at accept), and every event of a closed batch.",
    labelNames: ['activity', 'reason'] as const,
    registers: [registry],
    async collect() {
      const rows = await readWindows();
      this.reset();
      for (const row of rows) this.inc({ activity: row.activity_id, reason: row.kind }, Number(row.merged));
    },
  });
  new Gauge({
    name: 'activity_core_coalesce_windows_open',
    help: 'Open debounce windows and batches (whose run has not started yet), by activity id and kind (debounce, batch).',
    labelNames: ['activity', 'kind'] as const,
    registers: [registry],
    async collect() {
      const rows = await readWindows();
      this.reset();
      for (const row of rows) this.set({ activity: row.activity_id, kind: row.kind }, Number(row.open));
    },
  });

  // Held events (docs/recovery.md), read from Postgres at scrape time: any process releases, discards or expires them.
  let heldRead: Promise<HeldRow[]> | undefined;
  const readHeld = () => {
    heldRead ??= deps.pool
      .query(HELD_QUERY)
      .then((result) => result.rows as HeldRow[])
      .catch(() => [])
      .finally(() => {
        heldRead = undefined;
      });
    return heldRead;
  };
  new Gauge({
    name: 'activity_core_events_held',
    help: 'Events held for a disabled activity (when_disabled.action hold) and not yet released, discarded or expired, by activity id.',
    labelNames: ['activity'] as const,
    registers: [registry],
    async collect() {
      const rows = await readHeld();
      this.reset();
      for (const row of rows) this.set({ activity: row.activity_id }, Number(row.held));
    },
  });
  new Counter({
    name: 'activity_core_held_events_total',
    help: 'Held events that left the hold, by activity id and reason: released (its run went the usual way), discarded (by an operator) or expired (its hold ran out). Read from the routes, so one figure for all processes.',
    labelNames: ['activity', 'reason'] as const,
    registers: [registry],
    async collect() {
      const rows = await readHeld();
      this.reset();
      for (const row of rows)
        for (const reason of ['released', 'discarded', 'expired'] as const)
          this.inc({ activity: row.activity_id, reason }, Number(row[reason]));
    },
  });

  new Gauge({
    name: 'activity_core_dead_letters',
    help: 'Open dead letters (routes whose run could not be started, and filter errors, not discarded), by activity id and reason. Alert when it grows.',
    labelNames: ['activity', 'reason'] as const,
    registers: [registry],
    async collect() {
      const rows = await deps.pool
        .query(DEAD_LETTERS_QUERY)
        .then((result) => result.rows as Array<{ activity: string; reason: string; count: string }>)
        // Postgres down must not fail the scrape; activity_core_metrics_postgres_up says so.
        .catch(() => []);
      this.reset();
      for (const row of rows) this.set({ activity: row.activity, reason: row.reason }, Number(row.count));
    },
  });

  // Scrape-time state, read once per scrape for all the gauges below.
  let pendingRead: Promise<StateRow | undefined> | undefined;
  const readState = (): Promise<StateRow | undefined> => {
    pendingRead ??= deps.pool
      .query(STATE_QUERY)
      .then((result) => result.rows[0] as StateRow | undefined)
      // Postgres down must not fail the scrape: the process figures still matter. postgres_up says 0.
      .catch(() => undefined)
      .finally(() => {
        pendingRead = undefined;
      });
    return pendingRead;
  };
  const stateGauge = (name: string, help: string, field: keyof StateRow): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const row = await readState();
        // Unknown is not zero: without Postgres the gauge reads NaN, and postgres_up 0 says why.
        this.set(row === undefined ? Number.NaN : Number(row[field]));
      },
    });
  };
  stateGauge(
    'activity_core_events_pending_routing',
    'Accepted events not yet routed to Temporal (the dispatcher retries them). Alert when it stays above 0.',
    'events_pending',
  );
  stateGauge(
    'activity_core_events_pending_routing_oldest_seconds',
    'Age of the oldest accepted event not yet routed; 0 when none is waiting.',
    'events_pending_oldest_seconds',
  );
  stateGauge('activity_core_runs_running', 'Runs recorded as running in Postgres.', 'runs_running');
  stateGauge(
    'activity_core_runs_running_oldest_seconds',
    'Age of the oldest run recorded as running; 0 when none is.',
    'runs_running_oldest_seconds',
  );
  stateGauge(
    'activity_core_schedule_fires_pending',
    'Cron fire decisions whose run start is not confirmed yet (a tick or sweep finishes them).',
    'schedule_fires_pending',
  );
  stateGauge('activity_core_schedules_paused', 'Cron triggers paused by an operator.', 'schedules_paused');
  stateGauge('activity_core_activities_enabled', 'Enabled, not deleted activity definitions.', 'activities_enabled');
  // Runs finished by activity and status, and their durations: counted from the run rows at scrape time (run-metrics.ts).
  registerRunOutcomeMetrics(registry, deps);
  new Gauge({
    name: 'activity_core_metrics_postgres_up',
    help: '1 when the Postgres-backed gauges of this scrape could be read; 0 when Postgres did not answer (they read NaN).',
    registers: [registry],
    async collect() {
      this.set((await readState()) === undefined ? 0 : 1);
    },
  });

  return {
    registry,
    dependencyChanged(name, up) {
      const before = dependencyState.get(name);
      dependencyState.set(name, up);
      dependencyUp.set({ dependency: name }, up ? 1 : 0);
      if (!up) dependencyTransitions.inc({ dependency: name, to: 'lost' });
      else if (before === false) dependencyTransitions.inc({ dependency: name, to: 'regained' });
    },
    postgresConnectionLost() {
      connectionsLost.inc();
    },
    observeRequest(method, route, statusCode, seconds) {
      requests.inc({ method, route, status_code: String(statusCode) });
      durations.observe({ method, route }, seconds);
    },
    runPaced(activity, reason) {
      if (reason === 'throttle') delayed.inc({ activity, reason });
      else if (reason === 'rate_limit') dropped.inc({ activity, reason });
    },
    countReplay(mode, status) {
      replays.inc({ mode, status });
    },
    countIngest(ingest) {
      return {
        ...ingest,
        async ingest(...args: Parameters<EventIngest['ingest']>) {
          const result = await ingest.ingest(...args);
          ingested.inc({ status: result.status });
          for (const run of result.runs) routes.inc({ outcome: run.status });
          for (const filtered of result.filtered) routes.inc({ outcome: filtered.status });
          return result;
        },
      };
    },
  };
}
