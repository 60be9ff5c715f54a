import { Cron } from 'croner';
import { z } from 'zod';
import { DURATION_PATTERN, parseDurationMs, tryParseDurationMs } from './duration';
import type { FieldIssue } from './errors';
import { EventType } from './event-envelope';
import { expressionString } from './expressions';
import { DEFINITION_JSON_MAX_DEPTH, jsonDepthExceeds } from './json-bounds';
import { durationPattern, ON_WRITE } from './schema-patterns';
import { TASK_GRAPH_LIMITS, TASK_KEY_PATTERN, taskGraphIssues, TRIGGER_RULES } from './task-graph';
import { secretPlaceholderIssues } from './task-secrets';

/**
 * Terminology
 * - activity: a registered unit of recurring or event-driven work.
 * - definition: the validated body of an activity (triggers, tasks, policies);
 *   every change stores a new version, and every run records the version it ran.
 * - trigger: what starts a run — an event type or a cron schedule.
 * - task: one ordered step of a run, executed as its own child workflow.
 */

/**
 * What one definition may ask for. Each refusal is a 400 naming the field and
 * the limit. Durations are bounded so that no value reaches a limit deeper in
 * the engine (setTimeout's 2^31-1 ms, Go's 292-year durations in Temporal).
 *
 * Checked when a definition is written (ActivityDefinition), not when a stored
 * one is read back (StoredActivityDefinition): definitions stored before a
 * limit existed keep being served and run.
 */
export const DEFINITION_LIMITS = {
  /** Tasks in one definition; each is a child workflow of every run. */
  maxTasks: 50,
  /** Triggers in one definition; each cron trigger is a Temporal Schedule. */
  maxTriggers: 20,
  /** Any duration in a definition. */
  maxDuration: '365d',
  /** A `delay` task: a durable Temporal timer, so it may be long. */
  maxDelay: '365d',
  /** `run_timeout`: the run workflow's execution timeout. */
  maxRunTimeout: '365d',
  /** An http task's per-attempt `timeout` (an in-process timer in the worker). */
  maxHttpTimeout: '15m',
  /** A `wait_for_event` task's `timeout`: at least this, so a wait is not a race with its own registration. */
  minWaitTimeout: '1s',
  /** A `wait_for_event` task's `timeout`: a durable Temporal timer, like a delay. */
  maxWaitTimeout: '365d',
  /** Nesting of objects and arrays in an http `body` or emit_event `data`. */
  maxJsonDepth: DEFINITION_JSON_MAX_DEPTH,
} as const;

const DURATION_SYNTAX = 'must be a duration such as 500ms, 30s, 5m, 2h or 1d';

/** At most 365d wherever it appears (see DEFINITION_LIMITS). */
export const Duration = z.string().regex(DURATION_PATTERN, DURATION_SYNTAX);
export type Duration = z.infer<typeof Duration>;

/**
 * A definition's duration: its DEFINITION_LIMITS ceiling is checked when a
 * definition is written (definitionLimitIssues) and stated in the request
 * schema as a pattern; stored definitions may predate the limit.
 */
const limitedDuration = (max: string) =>
  Duration.meta({ [ON_WRITE]: { pattern: durationPattern({ max }), description: `At most ${max}.` } });
const DefinitionDuration = limitedDuration(DEFINITION_LIMITS.maxDuration);

export const MisfirePolicy = z.enum(['skip', 'catchup', 'compress']);
export type MisfirePolicy = z.infer<typeof MisfirePolicy>;

/**
 * What a cron trigger's run does while the run of an earlier fire of the same
 * trigger is still going (Temporal Schedules' overlap vocabulary, applied to
 * the runs; docs/schedules.md, "Overlapping runs"). Absent: `allow_all`.
 */
export const CronOverlapPolicy = z.enum(['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all']);
export type CronOverlapPolicy = z.infer<typeof CronOverlapPolicy>;

/** Exact type (`order.paid`) or a prefix wildcard (`order.*`). */
export const EventTypePattern = z
  .string()
  .min(1)
  .max(200)
  .regex(
    /^(\*|[A-Za-z0-9][A-Za-z0-9_.:/-]*?(\.\*)?)$/,
    'must be an exact event type (order.paid) or a prefix wildcard (order.*)',
  );

/**
 * A CEL expression over the event envelope that must be true for the event to
 * start a run; the server compiles it on every write (DEFINITION_EXPRESSION_SITES).
 */
export const FilterExpression = expressionString('filter').meta({
  description:
    'A CEL expression over the event envelope (event_id, event_type, source, subject, occurred_at, data) that must be true for the event to start a run, e.g. `data.amount > 100 && subject.startsWith("orders/")`.',
});
export type FilterExpression = z.infer<typeof FilterExpression>;

/** A CEL expression over `event` (the incoming event) and `trigger` (the run's trigger); compiled by the server on every write. */
export const CancelMatchExpression = expressionString('match').meta({
  description:
    'A CEL expression over `event` (the incoming event: event_id, event_type, source, subject, occurred_at as text, data) and `trigger` (`trigger.event` is the event that started the run) that must be true for the event to cancel the run, e.g. `event.data.order_id == trigger.event.data.order_id`.',
});

/** Most `cancel_on` entries one event trigger may have. */
export const MAX_CANCEL_ON_ENTRIES = 10;

/** Most sources one `cancel_on` entry or `wait_for_event` task may accept. */
export const MAX_ACCEPTED_SOURCES = 20;

/**
 * The sources whose events a `cancel_on` entry or a `wait_for_event` task
 * accepts, each exact (as a trigger's `source`): an event from any other
 * source is not looked at, so only a key allowed one of these sources can
 * cancel or wake a run. Absent: any source.
 */
export const AcceptedSources = z
  .array(z.string().min(1).max(500))
  .min(1)
  .max(MAX_ACCEPTED_SOURCES)
  .meta({
    description: `The exact sources (1 to ${MAX_ACCEPTED_SOURCES}) whose events are accepted; an event from any other source is ignored. Absent: any source.`,
  });

/** Whether an event from `source` is one `sources` accepts (absent: every source). */
export function acceptsSource(sources: readonly string[] | undefined, source: string): boolean {
  return sources === undefined || sources.includes(source);
}

/**
 * An event that cancels running runs this trigger started: an event of type
 * `event_type` (exact, no wildcard), from one of `sources` when given, for
 * which `match` is true against a run's trigger event cancels that run. See
 * docs/cancel-on.md.
 */
export const CancelOn = z
  .object({
    event_type: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/-]*$/, 'must be an exact event type (order.cancelled)'),
    sources: AcceptedSources.optional(),
    match: CancelMatchExpression,
  })
  .strict();
export type CancelOn = z.infer<typeof CancelOn>;

/**
 * Bounds of a trigger's `debounce` (docs/coalescing.md): a quiet `period` of
 * 1 s to 7 d, a `max_wait` of at least the period and at most 7 d.
 */
export const DEBOUNCE_LIMITS = { minPeriod: '1s', maxPeriod: '7d', maxWait: '7d' } as const;

/** A CEL expression over the event envelope whose value is the debounce key; compiled by the server on every write. */
export const DebounceKeyExpression = expressionString('key').meta({
  description:
    'A CEL expression over the event envelope (event_id, event_type, source, subject, occurred_at, data) whose value (a string, int, double or bool) is the debounce key, e.g. `data.contact_id`. ' +
    'Absent: one key for the whole activity. An event on which it fails runs alone (recorded).',
});

const debounceDuration = (min: string, max: string) =>
  Duration.meta({
    [ON_WRITE]: { pattern: durationPattern({ min, max }), description: `At least ${min}, at most ${max}.` },
  });

/**
 * Debounce (docs/coalescing.md): events of one key that arrive within
 * `period` of each other are one burst, and a burst is one run. `trailing`
 * (the default): the run starts once the key was quiet for `period` (or
 * `max_wait` after the burst opened, whichever is first) with the burst's
 * last event; every other event of the burst is recorded `merged`.
 */
export const Debounce = z
  .object({
    key: DebounceKeyExpression.optional(),
    period: debounceDuration(DEBOUNCE_LIMITS.minPeriod, DEBOUNCE_LIMITS.maxPeriod),
    /** Longest a burst is held open by a steady stream (at least the period). @default "7d", the bound */
    max_wait: debounceDuration(DEBOUNCE_LIMITS.minPeriod, DEBOUNCE_LIMITS.maxWait).optional(),
    /**
     * Which event of the burst runs: `trailing`, the last, once the key is
     * quiet; `leading`, the first, at once (the rest of the burst is merged
     * into its run). @default "trailing"
     */
    mode: z.enum(['trailing', 'leading']).default('trailing'),
  })
  .strict()
  .superRefine((debounce, ctx) => {
    const bounded = (field: 'period' | 'max_wait', value: string | undefined, max: string): number | undefined => {
      if (value === undefined) return undefined;
      const ms = tryParseDurationMs(value);
      if (ms === undefined) return undefined;
      if (ms < parseDurationMs(DEBOUNCE_LIMITS.minPeriod) || ms > parseDurationMs(max)) {
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `must be at least ${DEBOUNCE_LIMITS.minPeriod} and at most ${max}`,
        });
        return undefined;
      }
      return ms;
    };
    const period = bounded('period', debounce.period, DEBOUNCE_LIMITS.maxPeriod);
    const maxWait = bounded('max_wait', debounce.max_wait, DEBOUNCE_LIMITS.maxWait);
    if (period !== undefined && maxWait !== undefined && maxWait < period)
      ctx.addIssue({ code: 'custom', path: ['max_wait'], message: 'max_wait must be at least the period' });
  });
export type Debounce = z.infer<typeof Debounce>;

/**
 * Bounds of a trigger's `batch` (docs/coalescing.md, "Batching"): 1 to 1000
 * events, a `timeout` of 1 s to 7 d after the batch's first event, and at
 * most 1 MiB of events (the default): the run's input carries every member's
 * envelope, and this keeps it well inside Temporal's 2 MB payload limit.
 */
export const BATCH_LIMITS = {
  maxSize: 1000,
  minTimeout: '1s',
  maxTimeout: '7d',
  minBytes: 1024,
  maxBytes: 1_048_576,
  defaultBytes: 262_144,
} as const;

/** A CEL expression over the event envelope whose value is the batch key; compiled by the server on every write. */
export const BatchKeyExpression = expressionString('key').meta({
  description:
    'A CEL expression over the event envelope (event_id, event_type, source, subject, occurred_at, data) whose value (a string, int, double or bool) is the batch key, e.g. `data.customer_id`. ' +
    'Absent: one key for the whole activity. An event on which it fails runs alone (recorded).',
});

/**
 * Batching (docs/coalescing.md, "Batching"): the events of one key are
 * collected, in arrival order, into a batch that becomes one run receiving
 * all of them (`events` in templates and task expressions). A batch closes
 * when it holds `max_size` events, when `timeout` passed since its first
 * event, or when the next event would take it past `max_bytes` (that event
 * opens the next batch). Every member is recorded `batched` into the run.
 */
export const Batch = z
  .object({
    /** Most events in one batch (1..1000): the event that makes it full closes it and its run starts at once. */
    max_size: z.number().int().min(1).max(BATCH_LIMITS.maxSize),
    /** How long after its first event a batch that is not full closes (1s..7d). */
    timeout: debounceDuration(BATCH_LIMITS.minTimeout, BATCH_LIMITS.maxTimeout),
    key: BatchKeyExpression.optional(),
    /**
     * Most bytes of event envelopes (their JSON) in one batch: an event that
     * would pass it closes the batch without it and opens the next (1024..1048576). @default 262144 (256 KiB)
     */
    max_bytes: z.number().int().min(BATCH_LIMITS.minBytes).max(BATCH_LIMITS.maxBytes).optional(),
  })
  .strict()
  .superRefine((batch, ctx) => {
    const ms = tryParseDurationMs(batch.timeout);
    if (
      ms !== undefined &&
      (ms < parseDurationMs(BATCH_LIMITS.minTimeout) || ms > parseDurationMs(BATCH_LIMITS.maxTimeout))
    )
      ctx.addIssue({
        code: 'custom',
        path: ['timeout'],
        message: `must be at least ${BATCH_LIMITS.minTimeout} and at most ${BATCH_LIMITS.maxTimeout}`,
      });
  });
export type Batch = z.infer<typeof Batch>;

export const EventTrigger = z
  .object({
    type: z.literal('event'),
    event_type: EventTypePattern,
    /** When set, only events from this source match. */
    source: z.string().min(1).max(500).optional(),
    /**
     * A CEL expression over the envelope that must be true for the event to
     * start a run, e.g. `data.amount > 100`. Checked at registration (a bad
     * expression is a 400); an event it rejects, or on which it fails, is
     * recorded in the event's decision log as `filtered` / `filter_error`.
     */
    filter: FilterExpression.optional(),
    /**
     * Events that cancel a running run this trigger started, each matched by
     * a CEL expression against the run's trigger event. Decisions are
     * recorded in the cancelling event's decision log.
     */
    cancel_on: z.array(CancelOn).max(MAX_CANCEL_ON_ENTRIES).optional(),
    /** Turns a burst of events per key into one run (docs/coalescing.md). */
    debounce: Debounce.optional(),
    /** Collects the events of a key into one run over the list (docs/coalescing.md, "Batching"). */
    batch: Batch.optional(),
  })
  .strict();
export type EventTrigger = z.infer<typeof EventTrigger>;

function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export const CronTrigger = z
  .object({
    type: z.literal('cron'),
    /** 5 fields (minute precision) or 6 fields (leading seconds). */
    cron: z
      .string()
      .min(1)
      .max(200)
      .meta({
        description:
          '5 fields (minute precision) or 6 (a leading seconds field, only where the server sets CRON_ALLOW_SECONDS), in croner syntax; it must fire at least once. ' +
          'The server parses it; a schema cannot state cron syntax.',
      }),
    /** IANA zone the expression is read in. @default "UTC" */
    timezone: z.string().default('UTC').meta({
      description: 'An IANA time zone the server knows (its ICU data decides which); the expression is read in it.',
    }),
    /** What happens to fire times that passed without a run. @default "skip" */
    misfire_policy: MisfirePolicy.default('skip'),
    /** Most missed fire times a catch-up replays; older ones are recorded as skipped. @default 10 */
    max_catchup: z.number().int().min(1).max(1000).default(10),
    /** How late a fire may start and still count as on time. @default "60s" */
    misfire_grace: DefinitionDuration.default('60s'),
    /** Random delay added to each fire to spread load; the nominal time is unchanged. */
    jitter: DefinitionDuration.optional(),
    /**
     * What a run of this trigger does while the run of an earlier fire is still
     * going: `skip`, `buffer_one`, `buffer_all`, `cancel_other` or `allow_all`.
     * Absent means `allow_all` (runs overlap freely).
     */
    overlap: CronOverlapPolicy.optional().meta({
      description:
        'What a run of this trigger does while the run of an earlier fire of the same trigger is still going: ' +
        '`skip` (recorded as skipped), `buffer_one` (one waits, later ones are skipped), `buffer_all` (all wait, in order; at most 1000), ' +
        '`cancel_other` (the running one is cancelled, the new one runs after it) or `allow_all` (they overlap). Absent: `allow_all`.',
    }),
  })
  .strict()
  .superRefine((trigger, ctx) => {
    const fields = trigger.cron.trim().split(/\s+/);
    if (fields.length !== 5 && fields.length !== 6) {
      ctx.addIssue({ code: 'custom', path: ['cron'], message: `cron must have 5 or 6 fields, got ${fields.length}` });
      return;
    }
    if (!isValidTimeZone(trigger.timezone)) {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: `unknown IANA timezone: ${trigger.timezone}` });
      return;
    }
    try {
      const cron = new Cron(trigger.cron, { timezone: trigger.timezone, paused: true });
      if (cron.nextRun() === null) {
        ctx.addIssue({ code: 'custom', path: ['cron'], message: 'cron expression never fires' });
      }
    } catch (error) {
      ctx.addIssue({ code: 'custom', path: ['cron'], message: `invalid cron expression: ${(error as Error).message}` });
    }
  });
export type CronTrigger = z.infer<typeof CronTrigger>;

export const Trigger = z.discriminatedUnion('type', [EventTrigger, CronTrigger], {
  error: (issue) => (issue.code === 'invalid_union' ? 'trigger type must be one of: event, cron' : undefined),
});
export type Trigger = z.infer<typeof Trigger>;

/** Temporal retry policy for a task's activities, in definition terms. */
export const RetryPolicy = z
  .object({
    /** Attempts in total, first included. @default 3 */
    max_attempts: z.number().int().min(1).max(100).default(3),
    /** Wait before the first retry. @default "1s" */
    initial_interval: DefinitionDuration.default('1s'),
    /** Each wait is the previous one times this. @default 2 */
    backoff_coefficient: z.number().min(1).max(10).default(2),
    /** Ceiling for the wait between attempts. @default "1m" */
    maximum_interval: DefinitionDuration.default('1m'),
    /** Error codes that are never retried (e.g. `http_status_404`). */
    non_retryable_errors: z.array(z.string().min(1)).max(50).default([]),
  })
  .strict();
export type RetryPolicy = z.infer<typeof RetryPolicy>;

export const HttpMethod = z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);

/**
 * The http task url rules as one pattern (for the JSON Schema): http or https
 * in any case, a host (up to the first `/`, `?` or `#`) that is not empty and
 * holds no `{{`, and no `{{` after the first `#`.
 */
export const HTTP_TASK_URL_PATTERN =
  '^[Hh][Tt][Tt][Pp][Ss]?://(?:(?:[^/?#{]|\\{[^/?#{])+\\{?|\\{)(?:[/?][^#]*)?(?:#(?:[^{]|\\{[^{])*\\{?)?$';

export const HttpTaskConfig = z
  .object({
    method: HttpMethod.default('POST'),
    /**
     * May contain `{{path.to.value}}` placeholders over the run context, in
     * the path and query only: the scheme, host and fragment are fixed at
     * registration, so event data can never point the worker at another host.
     * At run time each value is percent-encoded into its one path segment or
     * query key/value (see renderUrl in @activity-core/temporal).
     */
    url: z
      .string()
      .min(1)
      .max(2000)
      .superRefine((url, ctx) => {
        const origin = /^(https?):\/\/([^/?#]*)/i.exec(url);
        if (origin === null) ctx.addIssue({ code: 'custom', message: 'url must start with http:// or https://' });
        else if (origin[2]!.includes('{{') || origin[2]!.length === 0) {
          ctx.addIssue({
            code: 'custom',
            message: 'placeholders are allowed in the path and query only; the host must be fixed',
          });
        } else if (url.indexOf('#') !== -1 && url.indexOf('{{', url.indexOf('#')) !== -1) {
          // A fragment is never sent, so a placeholder there could only serve to confuse; refused rather than encoded.
          ctx.addIssue({
            code: 'custom',
            message: 'placeholders are allowed in the path and query only, not in the #fragment (it is never sent)',
          });
        }
      })
      .meta({ pattern: HTTP_TASK_URL_PATTERN }),
    /** Values may contain placeholders, e.g. `Bearer {{ secrets.VENDOR_TOKEN }}`. */
    headers: z.record(z.string(), z.string()).default({}),
    /** JSON body; string values may contain placeholders. */
    body: z.unknown().optional(),
    /** Per-attempt timeout, at most 15m. @default "30s" */
    timeout: limitedDuration(DEFINITION_LIMITS.maxHttpTimeout).default('30s'),
    /** Statuses that count as success. @default 2xx */
    success_statuses: z.array(z.number().int().min(100).max(599)).min(1).optional(),
  })
  .strict()
  .superRefine((config, ctx) => {
    // The one task whose url, header values and body may use `{{ secrets.NAME }}` (see task-secrets.ts).
    for (const issue of secretPlaceholderIssues({ url: config.url, headers: config.headers, body: config.body })) {
      ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    }
  });
export type HttpTaskConfig = z.infer<typeof HttpTaskConfig>;

/** `duration`: a durable timer in the task workflow, at most 365d. */
export const DelayTaskConfig = z.object({ duration: limitedDuration(DEFINITION_LIMITS.maxDelay) }).strict();
export type DelayTaskConfig = z.infer<typeof DelayTaskConfig>;

export const EmitEventTaskConfig = z
  .object({
    /** Validated like a posted event's type, so the emitted event is one the ingress would accept. */
    event_type: EventType,
    /** Source of the emitted event. @default "activity-core" */
    source: z.string().min(1).max(500).default('activity-core'),
    subject: z.string().min(1).max(500).optional(),
    /** Event data; string values may contain placeholders, except secrets. */
    data: z.record(z.string(), z.unknown()).default({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    // An emitted event is stored and routed like any other: a secret rendered into it would leak.
    const refused = 'secrets can only be used in the url, header values and body of an http task';
    for (const issue of secretPlaceholderIssues(config, { refused })) {
      ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    }
  });
export type EmitEventTaskConfig = z.infer<typeof EmitEventTaskConfig>;

/** A CEL expression over `event` (the incoming event) and `trigger` (the run's trigger) that a waited-for event must satisfy. */
export const WaitMatchExpression = CancelMatchExpression.meta({
  description:
    'A CEL expression over `event` (the incoming event: event_id, event_type, source, subject, occurred_at as text, data) and `trigger` (`trigger.event` is the event that started the run; empty for runs not started by an event) that must be true for the event to end the wait, e.g. `event.data.order_id == trigger.event.data.order_id`.',
});

/**
 * `wait_for_event`: the task waits (a durable wait, no worker busy) until an
 * event of `event_type` for which `match` is true is accepted, or `timeout`
 * passes. Its result is the event's envelope, or `{ "status": "timed_out" }`.
 * See docs/wait-for-event.md.
 */
export const WaitForEventTaskConfig = z
  .object({
    /** Exact type of the event waited for (no wildcard). */
    event_type: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/-]*$/, 'must be an exact event type (order.paid)'),
    /** When set, only events from one of these sources are matched against the wait. */
    sources: AcceptedSources.optional(),
    /** When absent, the first event of the type ends the wait. */
    match: WaitMatchExpression.optional(),
    /** How long to wait, 1s to 365d. */
    timeout: Duration.meta({
      [ON_WRITE]: {
        pattern: durationPattern({ min: DEFINITION_LIMITS.minWaitTimeout, max: DEFINITION_LIMITS.maxWaitTimeout }),
        description: `At least ${DEFINITION_LIMITS.minWaitTimeout}, at most ${DEFINITION_LIMITS.maxWaitTimeout}.`,
      },
    }),
  })
  .strict();
export type WaitForEventTaskConfig = z.infer<typeof WaitForEventTaskConfig>;

export const NoopTaskConfig = z.object({}).strict().default({});

/**
 * `run_activity`: starts a run of another registered activity (by name or id)
 * and waits for it; the task's result is the run's id, status and task
 * results. The run's id is derived from this run and task, it records this
 * run as its parent, and it is cancelled when this run is. See docs/task-graphs.md.
 */
export const RunActivityTaskConfig = z
  .object({
    /** The activity to run: its name or its id. */
    activity: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[a-z0-9][a-z0-9._-]*$/, 'must be an activity name or id'),
    /** What the called run reads as `{{ input.… }}`; string values may contain placeholders, except secrets. */
    input: z.record(z.string(), z.unknown()).default({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    const refused = 'secrets can only be used in the url, header values and body of an http task';
    for (const issue of secretPlaceholderIssues(config, { refused })) {
      ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    }
  });
export type RunActivityTaskConfig = z.infer<typeof RunActivityTaskConfig>;

/** How many calls deep one chain of `run_activity` tasks may go (A calls B calls C: 2). */
export const MAX_CALL_DEPTH = 5;

/** How many runs `run_activity` tasks may start, at every depth together, below one run that no call started. */
export const MAX_CALLS_PER_ROOT = 1000;

/** A CEL expression of a task (`if`, `for_each`): compiled by the server at registration (DEFINITION_EXPRESSION_SITES). */
const taskExpression = (noun: string, description: string) => expressionString(noun).min(1).meta({ description });

/** The name other tasks use for a task in `depends_on`, templates (`{{ tasks.<key>.result }}`) and conditions. */
export const TaskKey = z
  .string()
  .regex(TASK_KEY_PATTERN, 'a task key is 1–63 lowercase letters, digits and _ and starts with a letter');

const taskCommon = {
  /** Human label shown in the run's task list and the Temporal UI. */
  name: z.string().min(1).max(200).optional(),
  /** Overrides the definition's retry policy for this task. */
  retry: RetryPolicy.optional(),
  /** When true a failure of this task is recorded and the run goes on. @default false */
  continue_on_failure: z.boolean().default(false),
  /** Names this task for `depends_on`, templates and conditions; unique in the definition. */
  key: TaskKey.optional(),
  /**
   * The tasks (by key) this one needs; it starts once they have settled and
   * its `trigger_rule` allows. Absent: the task before it (none for the first
   * task), so a definition without `depends_on` runs its tasks one after the
   * other. `[]`: starts with the run. See docs/task-graphs.md.
   */
  depends_on: z
    .array(TaskKey)
    .max(TASK_GRAPH_LIMITS.maxDependencies, `a task may depend on at most ${TASK_GRAPH_LIMITS.maxDependencies} tasks`)
    .optional(),
  /** When the task runs, given how its needs ended. @default "all_succeeded" */
  trigger_rule: z.enum(TRIGGER_RULES).optional(),
  /**
   * A CEL expression over `event`, `run` and `tasks` (the results of the tasks
   * this one depends on); false skips the task, recording the expression and its value.
   */
  if: taskExpression(
    'condition',
    'A CEL expression over `event` (the trigger event, empty for runs not started by one), `run` and `tasks` (`tasks.<key>.result`, `tasks.<key>.status` of the tasks this one depends on, directly or through others) that must be true for the task to run, e.g. `tasks.score.result.body.value < 0.5`.',
  ).optional(),
  /**
   * A CEL expression giving a list: the task runs once per item (`{{ item }}`
   * and `{{ item_index }}` in its templates), and its result is the list of
   * the items' results, in item order.
   */
  for_each: taskExpression(
    'for_each',
    'A CEL expression over `event`, `run` and `tasks` whose value is a list; the task runs once per item, with `{{ item }}` and `{{ item_index }}` in its templates. At most 1000 items at run time.',
  ).optional(),
  /** Items of a `for_each` task running at once; at most the definition's `max_parallel`. @default the definition's max_parallel */
  max_parallel: z.number().int().min(1).max(TASK_GRAPH_LIMITS.maxParallel).optional(),
};

export const HttpTask = z.object({ type: z.literal('http'), config: HttpTaskConfig, ...taskCommon }).strict();
export const DelayTask = z.object({ type: z.literal('delay'), config: DelayTaskConfig, ...taskCommon }).strict();
export const EmitEventTask = z
  .object({ type: z.literal('emit_event'), config: EmitEventTaskConfig, ...taskCommon })
  .strict();
export const NoopTask = z.object({ type: z.literal('noop'), config: NoopTaskConfig, ...taskCommon }).strict();
export const WaitForEventTask = z
  .object({ type: z.literal('wait_for_event'), config: WaitForEventTaskConfig, ...taskCommon })
  .strict();
export const RunActivityTask = z
  .object({ type: z.literal('run_activity'), config: RunActivityTaskConfig, ...taskCommon })
  .strict();

export const Task = z.discriminatedUnion(
  'type',
  [HttpTask, DelayTask, EmitEventTask, NoopTask, WaitForEventTask, RunActivityTask],
  {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? 'task type must be one of: http, delay, emit_event, noop, wait_for_event, run_activity'
        : undefined,
  },
);
export type Task = z.infer<typeof Task>;
export type TaskType = Task['type'];
export const TASK_TYPES = [
  'http',
  'delay',
  'emit_event',
  'noop',
  'wait_for_event',
  'run_activity',
] as const satisfies readonly TaskType[];

/** How many runs of one activity (or of one key of it) may hold a slot at once. */
export const CONCURRENCY_MAX_LIMIT = 1000;

export const ConcurrencyOnLimit = z.enum(['queue', 'skip', 'replace']);
export type ConcurrencyOnLimit = z.infer<typeof ConcurrencyOnLimit>;

/** A CEL expression over the event envelope whose value is a concurrency key; compiled by the server on every write. */
export const ConcurrencyKeyExpression = expressionString('key').meta({
  description:
    'A CEL expression over the event envelope (event_id, event_type, source, subject, occurred_at, data) whose value (a string, int, double or bool) is the key, e.g. `data.customer`. ' +
    'Evaluated once per run; runs not started by an event (cron, backfill, manual) use the activity-wide key.',
});

/**
 * At most `limit` runs of this activity hold a slot at once, counted per value
 * of `key` when it is given. A run over the limit waits for a slot in arrival
 * order (`queue`), is recorded as `skipped` (`skip`), or takes the slot of the
 * oldest run holding one, which is cancelled for it (`replace`). See docs/concurrency.md.
 */
export const Concurrency = z
  .object({
    limit: z.number().int().min(1).max(CONCURRENCY_MAX_LIMIT),
    key: ConcurrencyKeyExpression.optional(),
    /** What a run over the limit does. @default "queue" */
    on_limit: ConcurrencyOnLimit.default('queue'),
  })
  .strict();
export type Concurrency = z.infer<typeof Concurrency>;

/**
 * Pacing (docs/pacing.md, ADR 0067): bounds of a throttle's or rate limit's
 * numbers. A period below `minPeriod` would ask for a resolution the shared
 * bucket clock does not promise; above `maxPeriod`, a bucket would outlive
 * any reasonable retention of its row.
 */
export const PACING_LIMITS = {
  maxLimit: 10_000,
  maxBurst: 10_000,
  minPeriod: '1s',
  maxPeriod: '7d',
} as const;

/** Temporal's task-queue priority scale: 1 is the highest, 5 the lowest. */
export const PRIORITY_HIGHEST = 1;
export const PRIORITY_LOWEST = 5;
/** The priority of a definition that names none (Temporal's own default, 3). */
export const PRIORITY_DEFAULT = 3;
export const Priority = z.number().int().min(PRIORITY_HIGHEST).max(PRIORITY_LOWEST).meta({
  description:
    "1 (highest) to 5 (lowest), Temporal's task-queue priority; default 3. Re-runs, backfills and cron catch-ups default one lower than the definition's.",
});

/**
 * The priority a re-run, bulk re-run or backfill request names for the runs it starts, in place of
 * the default (one lower than the definition's). Recorded on each run (`priority` of the run record).
 */
export const PriorityOverride = z.number().int().min(PRIORITY_HIGHEST).max(PRIORITY_LOWEST).meta({
  description:
    "1 (highest) to 5 (lowest): the Temporal task-queue priority of the runs this request starts, in place of the default (one lower than the definition's `priority`, never below 5). Recorded on each run's record.",
});

/** A CEL expression over the event envelope whose value is a pacing key (throttle, rate limit). */
export const PacingKeyExpression = expressionString('key').meta({
  description:
    'A CEL expression over the event envelope (event_id, event_type, source, subject, occurred_at, data) whose value (a string, int, double or bool, at most 500 characters) is the key, e.g. `data.account`. ' +
    'Absent: one bucket for the whole activity. Only event runs are paced.',
});

/**
 * `limit` runs per `period` (per value of `key`), `burst` of them at once;
 * runs over the rate are started later, in arrival order, never dropped.
 */
export const Throttle = z
  .object({
    limit: z.number().int().min(1).max(PACING_LIMITS.maxLimit),
    period: Duration,
    /** Runs that may start at once before the rate applies. @default 1 */
    burst: z.number().int().min(1).max(PACING_LIMITS.maxBurst).optional(),
    key: PacingKeyExpression.optional(),
  })
  .strict();
export type Throttle = z.infer<typeof Throttle>;

/** At most `limit` runs per `period` (per value of `key`); runs over it are recorded `dropped` and never run. */
export const RateLimit = z
  .object({
    limit: z.number().int().min(1).max(PACING_LIMITS.maxLimit),
    period: Duration,
    key: PacingKeyExpression.optional(),
  })
  .strict();
export type RateLimit = z.infer<typeof RateLimit>;

/** Temporal's bounds of a fairness weight (values outside are clamped by the server; here they are refused). */
export const FAIRNESS_LIMITS = { minWeight: 0.001, maxWeight: 1000 } as const;

/**
 * Temporal's task-queue fairness (docs/pacing.md, "Fairness"): within one priority, the server hands
 * out the tasks of each fairness key in proportion to its weight, so one key's backlog does not
 * starve another's. Every run has a key: the value of `key` over its event, else its activity's id.
 */
export const Fairness = z
  .object({
    key: expressionString('key')
      .meta({
        description:
          "A CEL expression over the event envelope (event_id, event_type, source, subject, occurred_at, data) whose value (a string, int, double or bool, at most 500 characters) is the run's fairness key, e.g. `data.tenant`; a value longer than 64 bytes is replaced by its digest (`sha256:…`). " +
          "Absent, for runs without an event (cron, backfill, manual) and when it cannot be evaluated: the activity's id.",
      })
      .optional(),
    weight: z
      .number()
      .min(FAIRNESS_LIMITS.minWeight)
      .max(FAIRNESS_LIMITS.maxWeight)
      .optional()
      .meta({
        description: `${FAIRNESS_LIMITS.minWeight} to ${FAIRNESS_LIMITS.maxWeight}, default 1: the share of task dispatch this activity's runs get for their key, relative to other keys.`,
      }),
  })
  .strict();
export type Fairness = z.infer<typeof Fairness>;
/**
 * Held events (docs/recovery.md, "Held events"; ADR 0071): bounds of a
 * disabled activity's hold. `minTtl`..`maxTtl` is what `when_disabled.ttl`
 * may be; a hold past `maxTtl` would outlive what an operator remembers
 * holding. `maxPerRequest`: most held events one release or discard request
 * names (`event_ids`), and most one release carries out.
 */
export const HOLD_LIMITS = { minTtl: '1m', maxTtl: '30d', defaultTtl: '7d', maxPerRequest: 1_000 } as const;

/** The issue a hold's ttl out of its bounds gets, or undefined (a ttl the pattern refused is left to that error). */
export function holdTtlIssue(ttl: string): string | undefined {
  const ms = tryParseDurationMs(ttl);
  if (ms === undefined) return undefined;
  if (ms < parseDurationMs(HOLD_LIMITS.minTtl) || ms > parseDurationMs(HOLD_LIMITS.maxTtl))
    return `must be at least ${HOLD_LIMITS.minTtl} and at most ${HOLD_LIMITS.maxTtl}`;
  return undefined;
}

/**
 * What the events an activity's event triggers match do while it is
 * disabled: `drop` (the default) records nothing for it, as if it did not
 * exist; `hold` records each as a `held` route for `ttl`, to be released
 * (its run starts with its own id) or discarded, or recorded `expired`.
 */
export const WhenDisabled = z
  .object({
    action: z.enum(['drop', 'hold']).default('drop'),
    ttl: Duration.meta({
      [ON_WRITE]: {
        pattern: durationPattern({ min: HOLD_LIMITS.minTtl, max: HOLD_LIMITS.maxTtl }),
        description: `At least ${HOLD_LIMITS.minTtl}, at most ${HOLD_LIMITS.maxTtl}.`,
      },
    }).default(HOLD_LIMITS.defaultTtl),
  })
  .strict()
  .superRefine((when, ctx) => {
    const issue = holdTtlIssue(when.ttl);
    if (issue !== undefined) ctx.addIssue({ code: 'custom', path: ['ttl'], message: issue });
  })
  .meta({
    description:
      'What events matching this activity do while it is disabled: `drop` (default) — nothing is recorded for it; `hold` — each is recorded `held` for `ttl` (1m to 30d, default 7d) and can be released or discarded (docs/recovery.md).',
  });
export type WhenDisabled = z.infer<typeof WhenDisabled>;

export const ActivityName = z
  .string()
  .min(1)
  .max(200)
  .regex(
    /^[a-z0-9][a-z0-9._-]*$/,
    'name may contain lowercase letters, digits and . _ - and must start with a letter or digit',
  );

const ActivityDefinitionShape = z
  .object({
    name: ActivityName,
    description: z.string().max(2000).optional(),
    /** Disabled activities match no events and their schedules are paused. @default true */
    enabled: z.boolean().default(true),
    /** What matching events do while the activity is disabled: dropped (default) or held for a release. */
    when_disabled: WhenDisabled.optional(),
    triggers: z
      .array(Trigger)
      .max(DEFINITION_LIMITS.maxTriggers, `at most ${DEFINITION_LIMITS.maxTriggers} triggers per activity`)
      .default([]),
    tasks: z
      .array(Task)
      .min(1)
      .max(DEFINITION_LIMITS.maxTasks, `at most ${DEFINITION_LIMITS.maxTasks} tasks per activity`),
    /**
     * How missed cron fire times are deduplicated; must equal every cron
     * trigger's `misfire_policy` (derived from them when omitted).
     */
    dedupe_key_strategy: MisfirePolicy.optional(),
    /** Default retry policy for every task. */
    retry: RetryPolicy.optional(),
    /** Wall-clock limit for one run, at most 365d; none by default. */
    run_timeout: limitedDuration(DEFINITION_LIMITS.maxRunTimeout).optional(),
    /**
     * Lets an emit_event task emit an event one of this activity's own event
     * triggers matches (a loop, ended only by EMIT_MAX_HOPS). Refused at
     * registration unless set. @default false
     */
    allow_self_trigger: z.boolean().optional(),
    /** Runs of this activity (per key, when given) holding a slot at once; none by default. */
    concurrency: Concurrency.optional(),
    /** Event runs over this rate start later, in arrival order (docs/pacing.md). */
    throttle: Throttle.optional(),
    /** Event runs over this rate are dropped, recorded as such (docs/pacing.md). */
    rate_limit: RateLimit.optional(),
    /** Temporal task-queue priority of this activity's runs, 1 (highest) to 5; default 3. */
    priority: Priority.optional(),
    /** Temporal fairness key (per event, when `key` is given) and weight of this activity's runs (docs/pacing.md). */
    fairness: Fairness.optional(),
    /** Task workflows of one run running at once (parallel branches and for_each items together). @default 10 */
    max_parallel: z.number().int().min(1).max(TASK_GRAPH_LIMITS.maxParallel).optional(),
  })
  .strict();

type DefinitionShape = z.output<typeof ActivityDefinitionShape>;

/**
 * The DEFINITION_LIMITS a definition passes, beyond the array sizes its schema
 * states: durations and the nesting of template JSON. Each issue names the
 * field and the limit.
 */
export function definitionLimitIssues(
  definition: DefinitionShape,
): Array<{ path: Array<string | number>; message: string }> {
  const issues: Array<{ path: Array<string | number>; message: string }> = [];
  const duration = (value: string | undefined, max: string, path: Array<string | number>): void => {
    if (value !== undefined && (tryParseDurationMs(value) ?? 0) > parseDurationMs(max))
      issues.push({ path, message: `must be at most ${max}` });
  };
  const retry = (policy: RetryPolicy | undefined, path: Array<string | number>): void => {
    duration(policy?.initial_interval, DEFINITION_LIMITS.maxDuration, [...path, 'initial_interval']);
    duration(policy?.maximum_interval, DEFINITION_LIMITS.maxDuration, [...path, 'maximum_interval']);
  };
  const depth = (value: unknown, path: Array<string | number>): void => {
    if (jsonDepthExceeds(value, DEFINITION_LIMITS.maxJsonDepth)) {
      const max = DEFINITION_LIMITS.maxJsonDepth;
      issues.push({
        path,
        message: `${String(path[path.length - 1])} nests objects and arrays more than ${max} levels deep; the limit is ${max}`,
      });
    }
  };
  duration(definition.run_timeout, DEFINITION_LIMITS.maxRunTimeout, ['run_timeout']);
  for (const policy of ['throttle', 'rate_limit'] as const) {
    const period = definition[policy]?.period;
    if (period === undefined) continue;
    duration(period, PACING_LIMITS.maxPeriod, [policy, 'period']);
    const ms = tryParseDurationMs(period);
    if (ms !== undefined && ms < parseDurationMs(PACING_LIMITS.minPeriod))
      issues.push({ path: [policy, 'period'], message: `must be at least ${PACING_LIMITS.minPeriod}` });
  }
  retry(definition.retry, ['retry']);
  definition.triggers.forEach((trigger, index) => {
    if (trigger.type !== 'cron') return;
    duration(trigger.misfire_grace, DEFINITION_LIMITS.maxDuration, ['triggers', index, 'misfire_grace']);
    duration(trigger.jitter, DEFINITION_LIMITS.maxDuration, ['triggers', index, 'jitter']);
  });
  definition.tasks.forEach((task, index) => {
    retry(task.retry, ['tasks', index, 'retry']);
    const config = ['tasks', index, 'config'];
    if (task.type === 'http') {
      duration(task.config.timeout, DEFINITION_LIMITS.maxHttpTimeout, [...config, 'timeout']);
      depth(task.config.body, [...config, 'body']);
    } else if (task.type === 'delay')
      duration(task.config.duration, DEFINITION_LIMITS.maxDelay, [...config, 'duration']);
    else if (task.type === 'emit_event') depth(task.config.data, [...config, 'data']);
    else if (task.type === 'run_activity') {
      depth(task.config.input, [...config, 'input']);
      if (task.config.activity === definition.name)
        issues.push({
          path: [...config, 'activity'],
          message: `an activity cannot run itself (${definition.name}); a loop would never end`,
        });
    } else if (task.type === 'wait_for_event') {
      duration(task.config.timeout, DEFINITION_LIMITS.maxWaitTimeout, [...config, 'timeout']);
      const ms = tryParseDurationMs(task.config.timeout);
      if (ms !== undefined && ms < parseDurationMs(DEFINITION_LIMITS.minWaitTimeout))
        issues.push({ path: [...config, 'timeout'], message: `must be at least ${DEFINITION_LIMITS.minWaitTimeout}` });
    }
  });
  return issues;
}

/**
 * The superRefine rule below in JSON Schema: one policy P with
 * `dedupe_key_strategy` (when given) P and every cron trigger's
 * `misfire_policy` P (absent counts as its default, skip).
 */
const DEDUPE_MATCHES_MISFIRE_POLICY = {
  description:
    '`dedupe_key_strategy` (when given) equals the `misfire_policy` of every cron trigger, and all cron triggers share one misfire_policy.',
  anyOf: MisfirePolicy.options.map((policy) => ({
    properties: {
      dedupe_key_strategy: { const: policy },
      triggers: {
        items: {
          anyOf: [
            { properties: { type: { const: 'event' } } },
            {
              properties: { misfire_policy: { const: policy } },
              ...(policy === 'skip' ? {} : { required: ['misfire_policy'] }),
            },
          ],
        },
      },
    },
  })),
};

export const ActivityDefinition = ActivityDefinitionShape.superRefine((definition, ctx) => {
  for (const issue of definitionLimitIssues(definition))
    ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  for (const issue of taskGraphIssues(definition))
    ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message, params: { code: issue.code } });
  // A debounce window's run is started by its window workflow, not through the route a pace is decided on:
  // the two do not combine yet, so the combination is refused rather than half honoured (docs/pacing.md).
  if (definition.throttle !== undefined || definition.rate_limit !== undefined) {
    definition.triggers.forEach((trigger, index) => {
      const pacing = definition.throttle !== undefined ? 'throttle' : 'rate_limit';
      if (trigger.type === 'event' && trigger.debounce !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['triggers', index, 'debounce'],
          message: `debounce cannot be combined with ${pacing} on one activity`,
        });
      if (trigger.type === 'event' && trigger.batch !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['triggers', index, 'batch'],
          message: `batch cannot be combined with ${pacing} on one activity`,
        });
    });
  }
  // A batch and a debounce window of one key would share the key's one open window (coalesce_windows_open_key_uq):
  // an activity coalesces one way, so debounce and batch are refused together, on one trigger or on two.
  const debounced = definition.triggers.some((trigger) => trigger.type === 'event' && trigger.debounce !== undefined);
  definition.triggers.forEach((trigger, index) => {
    if (trigger.type === 'event' && trigger.batch !== undefined && debounced)
      ctx.addIssue({
        code: 'custom',
        path: ['triggers', index, 'batch'],
        message:
          trigger.debounce !== undefined
            ? 'a trigger has debounce or batch, not both'
            : 'an activity with debounce on one trigger cannot batch on another (one coalescing policy per activity)',
      });
  });
  const cronTriggers = definition.triggers
    .map((trigger, index) => ({ trigger, index }))
    .filter((entry): entry is { trigger: CronTrigger; index: number } => entry.trigger.type === 'cron');
  const policies = new Set(cronTriggers.map(({ trigger }) => trigger.misfire_policy));
  if (definition.dedupe_key_strategy !== undefined) {
    for (const { trigger, index } of cronTriggers) {
      if (trigger.misfire_policy !== definition.dedupe_key_strategy) {
        ctx.addIssue({
          code: 'custom',
          path: ['dedupe_key_strategy'],
          message: `dedupe_key_strategy "${definition.dedupe_key_strategy}" must equal the misfire_policy "${trigger.misfire_policy}" of triggers[${index}]`,
        });
      }
    }
  } else if (policies.size > 1) {
    ctx.addIssue({
      code: 'custom',
      path: ['triggers'],
      message: 'all cron triggers of one activity must share a misfire_policy (it is the activity dedupe_key_strategy)',
    });
  }
})
  .transform((definition) => {
    const cron = definition.triggers.find((t): t is CronTrigger => t.type === 'cron');
    return cron !== undefined && definition.dedupe_key_strategy === undefined
      ? { ...definition, dedupe_key_strategy: cron.misfire_policy }
      : definition;
  })
  .meta({
    id: 'ActivityDefinition',
    title: 'Activity definition',
    description:
      'A registered unit of event-driven or scheduled work. Checked by the server beyond this schema: cron syntax and time zones, CEL expressions (filters, matches, keys, task `if` and `for_each`), ' +
      "the form and place of `{{ secrets.NAME }}` placeholders, the task graph (unique keys, `depends_on` naming other tasks without a cycle, templates and expressions reading only tasks the reader depends on, `max_parallel` on `for_each` tasks only and at most the definition's), " +
      'and `run_activity` calls (no activity runs itself, directly or through the activities it calls; at most 5 calls deep).',
    [ON_WRITE]: { allOf: [DEDUPE_MATCHES_MISFIRE_POLICY] },
  });

/**
 * The stored, validated form as responses carry it: the same fields with no
 * input transforms, so response serialisation can encode it.
 */
export const StoredActivityDefinition = ActivityDefinitionShape.extend({
  // The array limits before DEFINITION_LIMITS, so definitions stored then are still served.
  triggers: z.array(Trigger).max(50).default([]),
  tasks: z.array(Task).min(1).max(100),
}).meta({ id: 'StoredActivityDefinition' });

export type ActivityDefinitionInput = z.input<typeof ActivityDefinition>;
export type ActivityDefinition = z.output<typeof ActivityDefinition>;

/** True for a cron expression with a leading seconds field (6 fields). */
export function isSecondsCron(cron: string): boolean {
  return cron.trim().split(/\s+/).length === 6;
}

/**
 * Seconds-level cron triggers, refused unless the operator allows them
 * (CRON_ALLOW_SECONDS): a schedule firing every second starts 86,400 runs a
 * day. Each issue names the trigger's cron field.
 */
export function secondsCronIssues(
  definition: Pick<ActivityDefinition, 'triggers'>,
  options: { allowSeconds: boolean },
): FieldIssue[] {
  if (options.allowSeconds) return [];
  const issues: FieldIssue[] = [];
  definition.triggers.forEach((trigger, index) => {
    if (trigger.type === 'cron' && isSecondsCron(trigger.cron)) {
      issues.push({
        path: `triggers[${index}].cron`,
        message:
          'seconds-level cron (6 fields) is disabled on this server; use 5 fields (minute precision), or ask the operator to set CRON_ALLOW_SECONDS=true',
        code: 'cron_seconds_disabled',
      });
    }
  });
  return issues;
}

/** Milliseconds of a definition duration (re-exported for callers that only know contracts). */
export { parseDurationMs };
