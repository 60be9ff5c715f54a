import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/**
 * Millisecond precision: exactly what a JavaScript Date holds. With Postgres'
 * default microseconds, a keyset cursor built from a Date could not name a
 * row exactly and pages skipped rows created within one millisecond.
 */
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 });
const createdAt = () => ts('created_at').notNull().defaultNow();
const updatedAt = () => ts('updated_at').notNull().defaultNow();

/** The current version of every registered activity. Deleted ones stay (soft delete) so run history keeps its name. */
export const activityDefinitions = pgTable(
  'activity_definitions',
  {
    id: uuid('id').primaryKey(),
    name: text('name').notNull(),
    version: integer('version').notNull(),
    enabled: boolean('enabled').notNull(),
    definition: jsonb('definition').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    deletedAt: ts('deleted_at'),
    /**
     * Which credential deleted it (`api_key:<id>`, or `anonymous` while
     * authentication is off). Null while live, and for activities deleted
     * before migration 0007.
     */
    deletedBy: text('deleted_by'),
  },
  (t) => [
    uniqueIndex('activity_definitions_name_live_uq')
      .on(t.name)
      .where(sql`${t.deletedAt} IS NULL`),
    index('activity_definitions_enabled_idx')
      .on(t.enabled)
      .where(sql`${t.deletedAt} IS NULL`),
  ],
);

/** Every version an activity ever had: a run's definition snapshot can always be looked up. */
export const activityDefinitionVersions = pgTable(
  'activity_definition_versions',
  {
    activityId: uuid('activity_id').notNull(),
    version: integer('version').notNull(),
    name: text('name').notNull(),
    enabled: boolean('enabled').notNull(),
    definition: jsonb('definition').notNull(),
    /** When this version was written. */
    createdAt: createdAt(),
    /**
     * Which credential wrote this version (`api_key:<id>`, or `anonymous`
     * while authentication is off); the same form as `events.credential`.
     * Null for versions written before migration 0007.
     */
    changedBy: text('changed_by'),
  },
  (t) => [primaryKey({ columns: [t.activityId, t.version] })],
);

export const activityRuns = pgTable(
  'activity_runs',
  {
    runId: uuid('run_id').primaryKey(),
    workflowId: text('workflow_id').notNull(),
    activityId: uuid('activity_id').notNull(),
    activityVersion: integer('activity_version').notNull(),
    triggerType: text('trigger_type').notNull(),
    scheduledFor: ts('scheduled_for'),
    eventId: text('event_id'),
    windowStart: ts('window_start'),
    windowEnd: ts('window_end'),
    status: text('status').notNull(),
    error: jsonb('error'),
    startedAt: ts('started_at').notNull().defaultNow(),
    finishedAt: ts('finished_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** When the run reconciler last confirmed with Temporal that a `running` row is really running. */
    checkedAt: ts('checked_at'),
    /** The event whose `cancel_on` match requested this run's cancellation (migration 0011); null otherwise. */
    cancelledByEvent: text('cancelled_by_event'),
    /** The cron run whose trigger's `cancel_other` overlap policy requested this run's cancellation (migration 0013); null otherwise. */
    cancelledByRun: text('cancelled_by_run'),
    /** The run whose `run_activity` task started this one (trigger type `call`, migration 0017); null otherwise. */
    parentRunId: uuid('parent_run_id'),
    /** The Temporal priority the run was started with, 1 (highest) to 5 (migration 0025); null for runs recorded before it. */
    priority: smallint('priority'),
    /** The Temporal fairness key the run was started with, ≤ 64 bytes (migration 0025); null for runs recorded before it. */
    fairnessKey: text('fairness_key'),
  },
  (t) => [
    uniqueIndex('activity_runs_workflow_id_uq').on(t.workflowId),
    index('activity_runs_running_checked_idx')
      .on(t.checkedAt)
      .where(sql`${t.status} = 'running'`),
    index('activity_runs_activity_created_idx').on(t.activityId, t.createdAt, t.runId),
    index('activity_runs_created_idx').on(t.createdAt, t.runId),
    index('activity_runs_activity_status_idx').on(t.activityId, t.status),
    check(
      'activity_runs_status_ck',
      sql`${t.status} IN ('running','waiting_for_slot','succeeded','failed','cancelled','skipped')`,
    ),
    check('activity_runs_trigger_ck', sql`${t.triggerType} IN ('event','cron','manual','backfill','call')`),
    check('activity_runs_priority_ck', sql`${t.priority} BETWEEN 1 AND 5`),
    check('activity_runs_fairness_key_ck', sql`octet_length(${t.fairnessKey}) <= 64`),
    index('activity_runs_parent_run_id_idx')
      .on(t.parentRunId)
      .where(sql`${t.parentRunId} IS NOT NULL`),
  ],
);

export const taskInstances = pgTable(
  'task_instances',
  {
    id: uuid('id').primaryKey(),
    runId: uuid('run_id').notNull(),
    taskType: text('task_type').notNull(),
    taskIndex: integer('task_index').notNull(),
    workflowId: text('workflow_id').notNull(),
    status: text('status').notNull(),
    attemptCount: integer('attempt_count').notNull().default(0),
    result: jsonb('result'),
    error: jsonb('error'),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    /** The task's `key` in the definition, when it has one. */
    taskKey: text('task_key'),
    /** The item of a `for_each` task this row is (0-based); null for a task that is not fanned out. */
    itemIndex: integer('item_index'),
    /** Why a `skipped` task did not run (its condition and value, or its trigger rule and the needs that failed). */
    detail: jsonb('detail'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('task_instances_workflow_id_uq').on(t.workflowId),
    uniqueIndex('task_instances_run_index_uq').on(t.runId, t.taskIndex, sql`coalesce(${t.itemIndex}, -1)`),
    check('task_instances_status_ck', sql`${t.status} IN ('running','succeeded','failed','cancelled','skipped')`),
  ],
);

/** Every accepted event. A row here is the promise behind a 2xx. */
export const events = pgTable(
  'events',
  {
    eventId: text('event_id').primaryKey(),
    source: text('source').notNull(),
    eventType: text('event_type').notNull(),
    subject: text('subject'),
    occurredAt: ts('occurred_at').notNull(),
    payload: jsonb('payload').notNull(),
    fingerprint: text('fingerprint').notNull(),
    idOrigin: text('id_origin').notNull(),
    receivedAt: ts('received_at').notNull().defaultNow(),
    /** pending → routed; retried by the dispatcher while pending. */
    routingState: text('routing_state').notNull().default('pending'),
    routingAttempts: integer('routing_attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    routedAt: ts('routed_at'),
    lastError: text('last_error'),
    /**
     * Which credential delivered the event: `api_key:<id>`, `ingest_key:<id>`
     * (a key id, never the key), `webhook:<source>`, `emit:<run id>`, or
     * `anonymous` while authentication is off. Null for events stored before
     * credentials were recorded.
     */
    credential: text('credential'),
    /** emit_event steps between this event and an external one (posted, webhook, cron): 0 for external events. */
    hops: integer('hops').notNull().default(0),
    /**
     * When the retention purger cleared the event's `data` (EVENT_PAYLOAD_RETENTION_DAYS,
     * migration 0026): the envelope keeps its other fields, a replay answers 410. Null: kept.
     */
    payloadExpiredAt: ts('payload_expired_at'),
  },
  (t) => [
    check('events_hops_ck', sql`${t.hops} >= 0`),
    index('events_pending_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.routingState} = 'pending'`),
    index('events_received_idx').on(t.receivedAt),
    index('events_payload_kept_idx')
      .on(t.receivedAt)
      .where(sql`${t.payloadExpiredAt} IS NULL`),
    check('events_routing_state_ck', sql`${t.routingState} IN ('pending','routed')`),
  ],
);

/** The routing decision for one event and one matching activity: the answer to "why did this run". */
export const eventRoutes = pgTable(
  'event_routes',
  {
    eventId: text('event_id').notNull(),
    activityId: uuid('activity_id').notNull(),
    activityVersion: integer('activity_version').notNull(),
    activityName: text('activity_name').notNull(),
    workflowId: text('workflow_id').notNull(),
    runId: uuid('run_id').notNull(),
    /**
     * pending until Temporal answered; then started or duplicate. `filtered`
     * and `filter_error` record activities whose type matched but whose
     * filter said no (or failed): no run, and the reason is kept in `detail`.
     */
    outcome: text('outcome').notNull().default('pending'),
    detail: text('detail'),
    /** When the activity's throttle / rate limit decided this route (once; migration 0019). Null: not paced. */
    pacedAt: ts('paced_at'),
    /** A throttled route's run starts at this time (Temporal's start delay). */
    notBefore: ts('not_before'),
    /** The debounce window or batch the event joined (migration 0018, docs/coalescing.md); null: none. */
    windowId: uuid('window_id'),
    /** The event's 1-based place in its batch, in arrival order (migration 0022); null outside batches. */
    windowPosition: integer('window_position'),
    /** Until when a `held` route is held (migration 0023, docs/recovery.md); kept after its release, discard or expiry. Null: never held. */
    expiresAt: ts('expires_at'),
    /** A `dead_letter` route's reason (migration 0024, docs/recovery.md "Dead letters"); null for every other outcome. */
    reasonCode: text('reason_code'),
    /** How many times the route became a dead letter (1, plus one per retry that failed again). */
    deadLetterCount: integer('dead_letter_count').notNull().default(0),
    /** When the route last became a dead letter. */
    deadLetteredAt: ts('dead_lettered_at'),
    /** When (and by which credential) an operator discarded the dead letter (or `filter_error`): no longer listed. */
    discardedAt: ts('discarded_at'),
    discardedBy: text('discarded_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.eventId, t.activityId] }),
    check(
      'event_routes_outcome_ck',
      sql`${t.outcome} IN ('pending','started','duplicate','filtered','filter_error','dropped','coalescing','merged','batched','held','discarded','expired','dead_letter')`,
    ),
    check(
      'event_routes_reason_code_ck',
      sql`(${t.outcome} = 'dead_letter') = (${t.reasonCode} IS NOT NULL) AND ${t.reasonCode} IN ('definition_deleted','start_refused','retry_budget_exhausted','not_matched')`,
    ),
    index('event_routes_dead_letters_idx')
      .on(t.activityId)
      .where(sql`${t.outcome} IN ('dead_letter','filter_error') AND ${t.discardedAt} IS NULL`),
    index('event_routes_window_idx')
      .on(t.windowId)
      .where(sql`${t.windowId} IS NOT NULL`),
    index('event_routes_held_idx')
      .on(t.activityId, t.createdAt, t.eventId)
      .where(sql`${t.outcome} = 'held'`),
    index('event_routes_held_expiry_idx')
      .on(t.expiresAt)
      .where(sql`${t.outcome} = 'held'`),
    index('event_routes_ever_held_idx')
      .on(t.activityId, t.outcome)
      .where(sql`${t.expiresAt} IS NOT NULL`),
  ],
);

/**
 * One GCRA bucket per (activity, policy, key) of a throttle or rate limit
 * (migration 0019, ADR 0067): `tat` is the theoretical arrival time. Updated
 * under its row lock by every API process; a row whose `tat` has passed holds
 * nothing and is deleted by the sweep.
 */
export const pacingBuckets = pgTable(
  'pacing_buckets',
  {
    activityId: uuid('activity_id').notNull(),
    policy: text('policy').notNull(),
    key: text('key').notNull(),
    /** Microseconds: a throttle's interval (period / limit) is often not whole milliseconds. */
    tat: timestamp('tat', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'pacing_buckets_pk', columns: [t.activityId, t.policy, t.key] }),
    check('pacing_buckets_policy_ck', sql`${t.policy} IN ('throttle','rate_limit')`),
    check('pacing_buckets_key_ck', sql`char_length(${t.key}) <= 500`),
    index('pacing_buckets_tat_idx').on(t.tat),
  ],
);

/**
 * One row per debounce window or batch (migrations 0018, 0022, docs/coalescing.md):
 * a burst (kind `debounce`) or a batch (kind `batch`) of events of one (activity, key). At most one `open` window per (activity, key);
 * its members are the routes naming it (`event_routes.window_id`). Closed in
 * one transaction with its members' outcomes; `run_workflow_id` names the run.
 */
export const coalesceWindows = pgTable(
  'coalesce_windows',
  {
    id: uuid('id').primaryKey(),
    activityId: uuid('activity_id').notNull(),
    kind: text('kind').notNull(),
    /** `trailing`: the window's workflow starts the last event's run when it closes; `leading`: its first event ran at once. */
    mode: text('mode').notNull().default('trailing'),
    key: text('key').notNull(),
    state: text('state').notNull().default('open'),
    /** The `coalesce-…` workflow that holds the window's timer. */
    workflowId: text('workflow_id').notNull(),
    periodMs: integer('period_ms').notNull(),
    openedAt: ts('opened_at').notNull().defaultNow(),
    lastEventAt: ts('last_event_at').notNull().defaultNow(),
    /** When the window closes unless a later event pushes it (never past `deadline_at`). */
    dueAt: ts('due_at').notNull(),
    /** opened_at + max_wait: the latest the window closes. */
    deadlineAt: ts('deadline_at').notNull(),
    memberCount: integer('member_count').notNull().default(1),
    memberBytes: bigint('member_bytes', { mode: 'number' }).notNull().default(0),
    firstEventId: text('first_event_id').notNull(),
    lastEventId: text('last_event_id').notNull(),
    lastActivityVersion: integer('last_activity_version').notNull(),
    /** The run the window became: set at close (trailing), at open (leading: its first event's run). */
    runWorkflowId: text('run_workflow_id'),
    closedAt: ts('closed_at'),
  },
  (t) => [
    uniqueIndex('coalesce_windows_open_key_uq')
      .on(t.activityId, t.key)
      .where(sql`${t.state} = 'open'`),
    check('coalesce_windows_kind_ck', sql`${t.kind} IN ('debounce','batch')`),
    check('coalesce_windows_state_ck', sql`${t.state} IN ('open','closed')`),
    check('coalesce_windows_mode_ck', sql`${t.mode} IN ('trailing','leading')`),
    check('coalesce_windows_closed_ck', sql`${t.state} = 'open' OR ${t.runWorkflowId} IS NOT NULL`),
  ],
);

/**
 * One row per (event, activity with a `cancel_on` entry for the event's type):
 * the event's look at that activity's running runs, made once (migration
 * 0011). Its presence means the cancellation decisions for that activity are
 * in `event_cancellations`; `capped` says not every running run was examined.
 */
export const eventCancelScans = pgTable(
  'event_cancel_scans',
  {
    eventId: text('event_id')
      .notNull()
      .references(() => events.eventId, { onDelete: 'cascade' }),
    activityId: uuid('activity_id').notNull(),
    activityVersion: integer('activity_version').notNull(),
    activityName: text('activity_name').notNull(),
    examined: integer('examined').notNull(),
    capped: boolean('capped').notNull(),
    matched: integer('matched').notNull(),
    /** Runs on which the match expression failed (e.g. a missing key): not cancelled. */
    errors: integer('errors').notNull(),
    scannedAt: ts('scanned_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.activityId] })],
);

/**
 * One row per run an event's `cancel_on` match chose to cancel: pending until
 * Temporal took the cancellation request (`cancel_requested`) or said the run
 * had already closed (`already_closed`). Pending rows keep their event pending,
 * so the dispatcher retries them like routes.
 */
export const eventCancellations = pgTable(
  'event_cancellations',
  {
    eventId: text('event_id')
      .notNull()
      .references(() => events.eventId, { onDelete: 'cascade' }),
    runId: uuid('run_id').notNull(),
    activityId: uuid('activity_id').notNull(),
    workflowId: text('workflow_id').notNull(),
    outcome: text('outcome').notNull().default('pending'),
    detail: text('detail'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.eventId, t.runId] }),
    check('event_cancellations_outcome_ck', sql`${t.outcome} IN ('pending','cancel_requested','already_closed')`),
  ],
);

/**
 * One row per `wait_for_event` task that began waiting (migration 0012),
 * keyed by the task workflow's id. `waiting` until an event matched it
 * (`matched`, with `matched_event_id`: a wait takes the first match only),
 * its timeout passed (`timed_out`) or its run was cancelled (`cancelled`).
 * `signal_state` follows a match: `pending` until Temporal took the signal
 * that resumes the task workflow (`delivered`) or said it had closed
 * (`already_closed`); pending signals keep their event pending, so the
 * dispatcher retries them like routes. No foreign key to `events`: the wait
 * belongs to its run and outlives the retention of the event that ended it.
 */
export const eventWaits = pgTable(
  'event_waits',
  {
    waitId: text('wait_id').primaryKey(),
    runId: uuid('run_id').notNull(),
    activityId: uuid('activity_id').notNull(),
    taskIndex: integer('task_index').notNull(),
    eventType: text('event_type').notNull(),
    /** The only sources whose events are matched against the wait (migration 0016); null: any source. */
    sources: text('sources').array(),
    match: text('match'),
    /** The run's trigger event (what `trigger.event` reads); null for runs not started by an event. */
    triggerEvent: jsonb('trigger_event'),
    status: text('status').notNull().default('waiting'),
    matchedEventId: text('matched_event_id'),
    signalState: text('signal_state'),
    detail: text('detail'),
    registeredAt: ts('registered_at').notNull().defaultNow(),
    expiresAt: ts('expires_at').notNull(),
    closedAt: ts('closed_at'),
    updatedAt: updatedAt(),
  },
  (t) => [
    index('event_waits_open_type_idx')
      .on(t.eventType, t.registeredAt)
      .where(sql`${t.status} = 'waiting'`),
    index('event_waits_matched_event_idx')
      .on(t.matchedEventId)
      .where(sql`${t.matchedEventId} IS NOT NULL`),
    index('event_waits_run_idx').on(t.runId),
    check('event_waits_status_ck', sql`${t.status} IN ('waiting','matched','timed_out','cancelled')`),
    check(
      'event_waits_signal_state_ck',
      sql`${t.signalState} IS NULL OR ${t.signalState} IN ('pending','delivered','already_closed')`,
    ),
    check('event_waits_matched_ck', sql`(${t.status} = 'matched') = (${t.matchedEventId} IS NOT NULL)`),
  ],
);

/**
 * One row per event of a type some open wait listened for when it was
 * accepted: the event's one look at the open waits (migration 0012). Its
 * presence means the event's matches are recorded in `event_waits`.
 */
export const eventWaitScans = pgTable('event_wait_scans', {
  eventId: text('event_id')
    .primaryKey()
    .references(() => events.eventId, { onDelete: 'cascade' }),
  examined: integer('examined').notNull(),
  capped: boolean('capped').notNull(),
  matched: integer('matched').notNull(),
  /** Waits on which the match expression failed (e.g. a missing key): not matched. */
  errors: integer('errors').notNull(),
  scannedAt: ts('scanned_at').notNull().defaultNow(),
});

/** Webhook sources configured over the API: how to verify and read deliveries from one provider. */
export const webhookSources = pgTable('webhook_sources', {
  name: text('name').primaryKey(),
  scheme: text('scheme').notNull(),
  /** The validated source config, secret included (needed to verify signatures; never returned by the API). */
  config: jsonb('config').notNull(),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

/**
 * The schedule manager's durable state for one cron trigger (one Temporal
 * Schedule). `processed_through` is the promise behind "exactly once": every
 * nominal fire time at or before it has a decision in `schedule_fires`, and
 * the row lock on this row serialises everyone who makes decisions.
 */
export const scheduleStates = pgTable(
  'schedule_states',
  {
    activityId: uuid('activity_id').notNull(),
    triggerIndex: integer('trigger_index').notNull(),
    scheduleId: text('schedule_id').notNull(),
    /** The cron trigger as last applied; a change resets `processed_through` to the time of the change. */
    trigger: jsonb('trigger').notNull(),
    /** Every nominal fire time up to and including this instant has been decided (run or skipped). */
    processedThrough: ts('processed_through').notNull(),
    /** `scheduled_for` of the latest run this trigger started: where a compressed window starts. */
    lastWindowEnd: ts('last_window_end'),
    /** Whether the activity was enabled when this row was last synced (detects re-enabling). */
    active: boolean('active').notNull(),
    /** Paused by an operator over the API (independent of the activity being disabled). */
    paused: boolean('paused').notNull().default(false),
    pauseNote: text('pause_note'),
    pausedAt: ts('paused_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.activityId, t.triggerIndex] }),
    uniqueIndex('schedule_states_schedule_id_uq').on(t.scheduleId),
  ],
);

/**
 * One decision per nominal fire time of a cron trigger: the answer to "why
 * did / didn't this run". A row with `range_end` stands for every nominal
 * time from `scheduled_for` to `range_end` (a long outage, a disabled period).
 */
export const scheduleFires = pgTable(
  'schedule_fires',
  {
    activityId: uuid('activity_id').notNull(),
    triggerIndex: integer('trigger_index').notNull(),
    scheduledFor: ts('scheduled_for').notNull(),
    rangeEnd: ts('range_end'),
    /** pending → started | duplicate for runs; skipped for fire times that get no run. */
    status: text('status').notNull(),
    reason: text('reason').notNull(),
    /** `cron` or `backfill` for runs; null for skips. */
    triggerType: text('trigger_type'),
    workflowId: text('workflow_id'),
    runId: uuid('run_id'),
    windowStart: ts('window_start'),
    windowEnd: ts('window_end'),
    /** For `compressed` skips: the workflow id of the run whose window covers this time. */
    coveredBy: text('covered_by'),
    /** How late the decision was made, relative to the nominal time. */
    /** bigint (migration 0021): a backfilled fire time may be years late. */
    lateByMs: bigint('late_by_ms', { mode: 'number' }),
    detail: text('detail'),
    decidedAt: ts('decided_at').notNull().defaultNow(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.activityId, t.triggerIndex, t.scheduledFor] }),
    index('schedule_fires_activity_time_idx').on(t.activityId, t.scheduledFor),
    index('schedule_fires_pending_idx')
      .on(t.activityId, t.triggerIndex)
      .where(sql`${t.status} = 'pending'`),
    check('schedule_fires_status_ck', sql`${t.status} IN ('pending','started','duplicate','skipped')`),
    check(
      'schedule_fires_reason_ck',
      sql`${t.reason} IN ('on_time','misfire_catchup','misfire_compress','backfill','misfire_skip','catchup_limit','compressed','activity_disabled','trigger_changed')`,
    ),
    check('schedule_fires_trigger_type_ck', sql`${t.triggerType} IS NULL OR ${t.triggerType} IN ('cron','backfill')`),
  ],
);

/**
 * Every signed message a webhook source has delivered, by the SHA-256 of the
 * exact bytes its signature covers. The signature does not cover the headers
 * that carry the delivery id (and, for GitHub, the event type), so a captured
 * delivery re-sent under a new id is recognised here and answered as a
 * duplicate of `event_id`. A row goes when its event does (a trigger on
 * `events`, so event retention applies to it too).
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    source: text('source').notNull(),
    bodySha256: text('body_sha256').notNull(),
    /** The event the first delivery of these bytes became (or is becoming). */
    eventId: text('event_id').notNull(),
    receivedAt: ts('received_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.source, t.bodySha256] }),
    index('webhook_deliveries_event_idx').on(t.eventId),
    check('webhook_deliveries_body_sha256_ck', sql`${t.bodySha256} ~ '^[0-9a-f]{64}$'`),
  ],
);

/**
 * One row whose `version` goes up with every change to activity_definitions
 * (a statement trigger on insert, update, delete and truncate, in the
 * changing transaction). Every process that routes events keeps its own
 * index of the enabled definitions and reloads it only when this number
 * moved, so a registration through any process is seen by the next event
 * in every other one at the cost of one single-row read.
 */
export const definitionsVersion = pgTable(
  'definitions_version',
  {
    id: integer('id').primaryKey(),
    version: bigint('version', { mode: 'bigint' }).notNull(),
  },
  () => [check('definitions_version_single_row_ck', sql`id = 1`)],
);

/**
 * The same kind of one-row change counter for webhook_sources (migration
 * 0008): every process keeps the sources (and their opened secrets) in
 * memory and re-reads them only when this number moved, so a source
 * registered, changed, rotated or removed through any process governs the
 * next delivery in every other one.
 */
export const webhookSourcesVersion = pgTable(
  'webhook_sources_version',
  {
    id: integer('id').primaryKey(),
    version: bigint('version', { mode: 'bigint' }).notNull(),
  },
  () => [check('webhook_sources_version_single_row_ck', sql`id = 1`)],
);

/**
 * One row per re-run (migration 0009): the link between an original run and
 * its re-run number `attempt`, whose workflow id is
 * `rerun-{rerun_of}:{attempt}`. Unique per (original, attempt) and per
 * (original, Idempotency-Key): the same key names the same re-run, and two
 * requests never share an attempt. Written before the re-run is started, so
 * a start that fails is retried with the same id and input.
 */
export const runReruns = pgTable(
  'run_reruns',
  {
    runId: uuid('run_id').primaryKey(),
    workflowId: text('workflow_id').notNull(),
    rerunOf: uuid('rerun_of').notNull(),
    attempt: integer('attempt').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    /** The run whose definition version, trigger and earlier task results the re-run reuses. */
    sourceRunId: uuid('source_run_id').notNull(),
    fromTaskIndex: integer('from_task_index').notNull(),
    /** The workflow input's `resume` (tasks before from_task_index and their outcomes); null when from the start. */
    resume: jsonb('resume'),
    bulkRerunId: uuid('bulk_rerun_id'),
    requestedAt: ts('requested_at').notNull().defaultNow(),
    /** The priority the request named (migration 0025); null: the default, one lower than the definition's. */
    priority: smallint('priority'),
  },
  (t) => [
    uniqueIndex('run_reruns_workflow_id_uq').on(t.workflowId),
    uniqueIndex('run_reruns_of_attempt_uq').on(t.rerunOf, t.attempt),
    uniqueIndex('run_reruns_of_key_uq').on(t.rerunOf, t.idempotencyKey),
    check('run_reruns_attempt_ck', sql`${t.attempt} >= 1`),
    check('run_reruns_priority_ck', sql`${t.priority} BETWEEN 1 AND 5`),
  ],
);

/**
 * The durable progress record of a bulk re-run. The API process that holds
 * the lease pages through the selection (keyset on the originals'
 * `created_at, run_id`, recorded in the cursor columns with the counters in
 * one statement per page); another process takes over when the lease lapses.
 */
export const bulkReruns = pgTable(
  'bulk_reruns',
  {
    id: uuid('id').primaryKey(),
    filter: jsonb('filter').notNull(),
    fromMode: text('from_mode').notNull(),
    status: text('status').notNull(),
    total: integer('total').notNull(),
    processed: integer('processed').notNull().default(0),
    started: integer('started').notNull().default(0),
    skipped: integer('skipped').notNull().default(0),
    skippedReasons: jsonb('skipped_reasons').notNull().default({}),
    cursorCreatedAt: ts('cursor_created_at'),
    cursorRunId: uuid('cursor_run_id'),
    leaseUntil: ts('lease_until'),
    leaseOwner: text('lease_owner'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    completedAt: ts('completed_at'),
    /** The priority of every re-run it starts, as its request named it (migration 0025); null: the default. */
    priority: smallint('priority'),
  },
  (t) => [
    index('bulk_reruns_running_idx')
      .on(t.leaseUntil)
      .where(sql`${t.status} = 'running'`),
    check('bulk_reruns_status_ck', sql`${t.status} IN ('running','completed')`),
    check('bulk_reruns_from_mode_ck', sql`${t.fromMode} IN ('start','failed_task')`),
    check('bulk_reruns_priority_ck', sql`${t.priority} BETWEEN 1 AND 5`),
  ],
);

/**
 * Every change and operator action taken through the API: who (`actor`, a
 * credential label), what (`action` on `target_type`/`target_id`, the
 * activity it concerns), the answer (`outcome`, `status`) and the request id.
 * Append-only: triggers refuse UPDATE, DELETE and TRUNCATE (migration 0014).
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: uuid('id').primaryKey(),
    at: ts('at').notNull().defaultNow(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    targetType: text('target_type').notNull(),
    targetId: text('target_id'),
    activityId: uuid('activity_id'),
    outcome: text('outcome').notNull(),
    status: integer('status').notNull(),
    requestId: text('request_id').notNull(),
  },
  (t) => [
    index('audit_log_at_idx').on(t.at, t.id),
    index('audit_log_actor_idx').on(t.actor, t.at, t.id),
    index('audit_log_activity_idx')
      .on(t.activityId, t.at, t.id)
      .where(sql`${t.activityId} IS NOT NULL`),
    check('audit_log_outcome_ck', sql`${t.outcome} IN ('succeeded','refused','failed')`),
  ],
);

/**
 * How many events `emit_event` tasks have emitted from one root event (the
 * external event, cron or manual run at the start of a chain): the breadth
 * bound EMIT_MAX_PER_ROOT is checked against `emitted` under this row's lock.
 */
export const emitBudgets = pgTable(
  'emit_budgets',
  {
    rootSource: text('root_source').notNull(),
    rootEventId: text('root_event_id').notNull(),
    emitted: integer('emitted').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.rootSource, t.rootEventId] }),
    check('emit_budgets_emitted_ck', sql`${t.emitted} >= 0`),
  ],
);

/**
 * The root of every emitted event that was counted: a retried emit finds its
 * event here and is not counted twice, and an emit by a run that an emitted
 * event triggered finds its chain's root.
 */
export const emittedEventRoots = pgTable('emitted_event_roots', {
  eventId: text('event_id').primaryKey(),
  rootSource: text('root_source').notNull(),
  rootEventId: text('root_event_id').notNull(),
  createdAt: createdAt(),
});

/**
 * A forced replay (`mode: force`) of an event for one activity (migration
 * 0020): `replay-{replay_of}:{attempt}`, where `replay_of` is the run id of
 * the event's own run of that activity. Allocated under the request's key
 * before it is started, so the same request again names the same replay.
 */
export const eventReplays = pgTable(
  'event_replays',
  {
    runId: uuid('run_id').primaryKey(),
    workflowId: text('workflow_id').notNull(),
    eventId: text('event_id').notNull(),
    activityId: uuid('activity_id').notNull(),
    activityVersion: integer('activity_version').notNull(),
    replayOf: uuid('replay_of').notNull(),
    attempt: integer('attempt').notNull(),
    requestKey: text('request_key').notNull(),
    bulkReplayId: uuid('bulk_replay_id'),
    requestedBy: text('requested_by'),
    requestedAt: ts('requested_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('event_replays_workflow_id_uq').on(t.workflowId),
    uniqueIndex('event_replays_of_attempt_uq').on(t.replayOf, t.attempt),
    uniqueIndex('event_replays_of_key_uq').on(t.replayOf, t.requestKey),
    index('event_replays_event_idx').on(t.eventId),
    check('event_replays_attempt_ck', sql`${t.attempt} >= 1`),
  ],
);

/** The durable progress record of a bulk replay (migration 0020); the shape of `bulk_reruns`, keyed on events. */
export const bulkReplays = pgTable(
  'bulk_replays',
  {
    id: uuid('id').primaryKey(),
    filter: jsonb('filter').notNull(),
    mode: text('mode').notNull(),
    status: text('status').notNull(),
    total: integer('total').notNull(),
    processed: integer('processed').notNull().default(0),
    started: integer('started').notNull().default(0),
    skipped: integer('skipped').notNull().default(0),
    skippedReasons: jsonb('skipped_reasons').notNull().default({}),
    cursorReceivedAt: ts('cursor_received_at'),
    cursorEventId: text('cursor_event_id'),
    leaseUntil: ts('lease_until'),
    leaseOwner: text('lease_owner'),
    requestedBy: text('requested_by'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    completedAt: ts('completed_at'),
  },
  (t) => [
    index('bulk_replays_running_idx')
      .on(t.leaseUntil)
      .where(sql`${t.status} = 'running'`),
    check('bulk_replays_status_ck', sql`${t.status} IN ('running','completed')`),
    check('bulk_replays_mode_ck', sql`${t.mode} IN ('if_no_runs','force')`),
  ],
);
