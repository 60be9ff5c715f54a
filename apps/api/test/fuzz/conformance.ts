import type { RecordedInteraction } from './schemathesis';

/**
 * schemathesis's checks that hold the served OpenAPI document and the server
 * to each other. Every one of them fails the fuzz test on any finding, except
 * a rejected schema-valid request that UNSTATED_RULES explains.
 *
 * Not run: use_after_free and ensure_resource_availability (stateful-phase
 * checks; the run has no stateful phase: its links would need every
 * operation's response shapes wired by hand, and each scenario deletes what
 * others aim at), object_level_authorization (needs two identities with
 * different rights; every management key has the same rights).
 */
export const CONFORMANCE_CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
  'negative_data_rejection',
  'positive_data_acceptance',
  'missing_required_header',
  'unsupported_method',
  'allow_header_conformance',
  'ignored_auth',
] as const;

interface FieldError {
  path: string;
  message: string;
}

/**
 * A rule the server checks that JSON Schema cannot state (the document
 * describes it in words), so a schema-valid request may break it. These are
 * the only reasons a schema-valid request may be refused; each names the
 * operations it concerns and the problem it is refused with.
 */
interface UnstatedRule {
  rule: string;
  /** Why JSON Schema cannot state it. */
  why: string;
  operations: readonly string[];
  /** Whether one field error of the refusal (or, without field errors, its type and detail) is this rule's. */
  matches(error: FieldError, problem: { type: string; detail: string }): boolean;
}

const ACTIVITY_WRITES = ['POST /v1/activities', 'PUT /v1/activities/{id}'];
const SOURCE_WRITES = ['POST /v1/webhook-sources', 'PUT /v1/webhook-sources/{name}'];
const LISTS = [
  'GET /v1/activities',
  'GET /v1/runs',
  'GET /v1/activities/{id}/fires',
  'GET /v1/activities/{id}/versions',
  'GET /v1/activities/{id}/held-events',
  'GET /v1/audit',
  'GET /v1/dead-letters',
];
const STORING = [
  ...ACTIVITY_WRITES,
  ...SOURCE_WRITES,
  'POST /v1/events',
  'POST /v1/activities/{id}/schedules/pause',
  'POST /v1/activities/{id}/schedules/resume',
];

export const UNSTATED_RULES: readonly UnstatedRule[] = [
  {
    rule: 'a cron expression parses (croner syntax), fires at least once, and has a seconds field only where CRON_ALLOW_SECONDS is set',
    why: 'cron syntax is a grammar over five or six fields; whether it ever fires depends on the calendar; the seconds switch is server configuration',
    operations: ACTIVITY_WRITES,
    matches: ({ path }) => /^triggers\[\d+\]\.cron$/.test(path),
  },
  {
    rule: "a time zone is one the server's ICU data knows",
    why: "the set of zone names is the runtime's, not a fixed list",
    operations: ACTIVITY_WRITES,
    matches: ({ path }) => /^triggers\[\d+\]\.timezone$/.test(path),
  },
  {
    rule: 'the CEL expressions of a definition parse and type-check: trigger filters, cancel_on matches, debounce and batch keys, wait_for_event matches, the concurrency, throttle, rate_limit and fairness keys, task conditions (if) and fan-outs (for_each)',
    why: 'CEL is a grammar with types',
    operations: ACTIVITY_WRITES,
    matches: ({ path }) =>
      /^triggers\[\d+\]\.(?:filter|cancel_on\[\d+\]\.match)$/.test(path) ||
      /^tasks\[\d+\]\.(?:config\.match|if|for_each)$/.test(path) ||
      /^triggers\[\d+\]\.(?:debounce|batch)\.key$/.test(path) ||
      ['concurrency.key', 'throttle.key', 'rate_limit.key', 'fairness.key'].includes(path),
  },
  {
    rule: 'the durations of pacing, debounce and batching are within their bounds: throttle and rate_limit periods 1s to 7d, a debounce period 1s to 7d, its max_wait at least its period and at most 7d, a batch timeout 1s to 7d',
    why: "a duration is text ('90s', '1h'); the bounds are on the time it names, and max_wait's on another field's value",
    operations: ACTIVITY_WRITES,
    matches: ({ path }) =>
      /^(?:throttle|rate_limit)\.period$/.test(path) ||
      /^triggers\[\d+\]\.(?:debounce\.(?:period|max_wait)|batch\.timeout)$/.test(path),
  },
  {
    rule: "a trigger's debounce or batch is not combined with throttle or rate_limit on one activity, and an activity coalesces one way: debounce or batch, not both",
    why: 'a rule across fields in different parts of the definition',
    operations: ACTIVITY_WRITES,
    matches: ({ path, message }) =>
      /^triggers\[\d+\]\.(?:debounce|batch)$/.test(path) &&
      /cannot be combined|debounce or batch, not both|cannot batch on another/.test(message),
  },
  {
    rule: "a definition's tasks form a graph: keys are unique, depends_on names other tasks' keys without a cycle, templates and expressions read only tasks the reading task depends on, and max_parallel is set on for_each tasks only, at most the definition's",
    why: 'rules across the elements of an array (references between them, cycles), and across the text of templates',
    operations: ACTIVITY_WRITES,
    matches: ({ path, message }) =>
      /^tasks\[\d+\]\.(?:key|depends_on(?:\[\d+\])?|max_parallel)$/.test(path) ||
      (/^tasks\[\d+\]\./.test(path) && /not a task this one depends on|no task has that key or index/.test(message)),
  },
  {
    rule: 'an activity does not run itself with run_activity, directly or through the activities it calls, and its calls go at most 5 deep',
    why: "it depends on the activity's own name and on the stored activities it calls",
    operations: ACTIVITY_WRITES,
    matches: ({ path }) => /^tasks\[\d+\]\.config\.activity$/.test(path),
  },
  {
    rule: 'text holds no character Postgres cannot store (U+0000)',
    why: 'it holds for every string at any depth, free-form event data and http bodies included; the document says it once, in its description',
    operations: STORING,
    matches: ({ message }, { detail }) =>
      /cannot be stored|cannot store/.test(message) || /cannot be stored|cannot store/.test(detail),
  },
  {
    rule: 'a cursor is one a previous page of this list returned',
    why: 'a cursor is opaque: only the server can tell its own',
    operations: LISTS,
    matches: ({ path }) => path === 'querystring.cursor',
  },
  {
    rule: 'a backfill range ends after it starts and in the past, holds at most 1000 fire times of the trigger, and trigger_index names a cron trigger of the activity',
    why: 'a comparison of two fields, the clock, the cron expression, and the stored activity',
    operations: ['POST /v1/activities/{id}/schedules/backfill'],
    matches: ({ message }, { detail }) =>
      /end is before start|past fire times only|is not a cron trigger of this activity|at most 1000 fire times/.test(
        `${message} ${detail}`,
      ),
  },
  {
    rule: 'a diff of version 1 names the version to compare it with in from (version 1 has no previous version)',
    why: 'a rule across two query parameters and the stored versions',
    operations: ['GET /v1/activities/{id}/diff'],
    matches: ({ path, message }) => path === 'querystring.from' && /required when to is 1/.test(message),
  },
  {
    rule: "a bulk re-run filter's range ends after it starts, starts in the past, spans at most 31 days, and selects at most the bulk limit of runs",
    why: 'a comparison of two fields, the clock, and the stored runs',
    operations: ['POST /v1/runs/rerun'],
    matches: ({ path, message }, { detail }) =>
      (path === 'filter.to' && /must be after filter.from/.test(message)) ||
      /filter spans more than|the filter selects \d+ runs/.test(`${message} ${detail}`),
  },
  {
    rule: "a bulk replay filter's range ends after it starts, starts in the past, spans at most 31 days, and selects at most the bulk limit of events",
    why: 'a comparison of two fields, the clock, and the stored events',
    operations: ['POST /v1/events/replay'],
    matches: ({ path, message }) =>
      (path === 'filter.to' && /must be after filter.from|must be at most \d+ days after/.test(message)) ||
      (path === 'filter' && /selects more than \d+ events/.test(message)),
  },
  {
    rule: 'a dead-letter retry or discard names one dead letter by both event_id and activity_id, or gives a filter, not both',
    why: 'a rule across three optional fields',
    operations: ['POST /v1/dead-letters/retry', 'POST /v1/dead-letters/discard'],
    matches: ({ path, message }) =>
      ['filter', 'event_id', 'activity_id'].includes(path) &&
      /not both|one dead letter is named by both|name one dead letter/.test(message),
  },
  {
    rule: 'the name in a PUT body, when given, is the name in the path',
    why: 'a rule across the path and the body',
    operations: ['PUT /v1/webhook-sources/{name}'],
    matches: ({ path, message }) => path === 'name' && /must equal the name in the path/.test(message),
  },
  {
    rule: 'an event id is used for one event only (422 event-id-reused)',
    why: 'it depends on the events already stored: the fuzzer sends one id with many payloads',
    operations: ['POST /v1/events'],
    matches: (_error, { type }) => type === 'urn:activity-core:problem:event-id-reused',
  },
  {
    rule: 'the Idempotency-Key header and a body event id, when both are sent, are the same',
    why: 'a rule across a header and the body',
    operations: ['POST /v1/events'],
    matches: ({ path }) => path === 'headers.idempotency-key',
  },
  {
    rule: "in CloudEvents binary mode (ce-specversion present) ce-id, ce-source and ce-type are present and valid, and the body is the event's data: a JSON object",
    why: 'each header is its own parameter: JSON Schema cannot make one header require others, nor change what the body must be',
    operations: ['POST /v1/events'],
    // `data` is refused only in binary mode here: an envelope's or CloudEvent's own `data` is typed in the schema.
    matches: ({ path }) => path.startsWith('header.ce-') || path === 'data',
  },
];

/** A refused request's problem+json body, when it is one. */
function problemOf(body: string | undefined): { type: string; detail: string; errors: FieldError[] } | undefined {
  try {
    const parsed = JSON.parse(body ?? '') as { type?: unknown; detail?: unknown; errors?: unknown };
    if (typeof parsed.type !== 'string') return undefined;
    const errors = Array.isArray(parsed.errors) ? (parsed.errors as FieldError[]) : [];
    return { type: parsed.type, detail: typeof parsed.detail === 'string' ? parsed.detail : '', errors };
  } catch {
    return undefined;
  }
}

/** The rules that explain why this schema-valid request was refused, or undefined when something in the refusal is not one of them. */
export function unstatedRulesBehind(interaction: RecordedInteraction): UnstatedRule[] | undefined {
  if (interaction.status === undefined || interaction.status < 400 || interaction.status >= 500) return undefined;
  const problem = problemOf(interaction.responseBody);
  if (problem === undefined) return undefined;
  const rules = UNSTATED_RULES.filter((rule) => rule.operations.includes(interaction.operation));
  // Without field errors the problem as a whole must be one rule's.
  const errors = problem.errors.length > 0 ? problem.errors : [{ path: '', message: problem.detail }];
  const behind = new Set<UnstatedRule>();
  for (const error of errors) {
    const rule = rules.find((candidate) => candidate.matches(error, problem));
    if (rule === undefined) return undefined;
    behind.add(rule);
  }
  return [...behind];
}

/** The checks that failed for one request and are not explained by UNSTATED_RULES. */
export function unexplainedFailures(interaction: RecordedInteraction): RecordedInteraction['checks'] {
  return interaction.checks.filter(
    (check) =>
      check.status === 'failure' &&
      !(check.name === 'positive_data_acceptance' && unstatedRulesBehind(interaction) !== undefined),
  );
}

/** One place the server and its document disagree: an operation, a check and what it found. */
export function findingsOf(interactions: readonly RecordedInteraction[]): string[] {
  const findings = new Set<string>();
  for (const interaction of interactions) {
    for (const check of unexplainedFailures(interaction))
      findings.add(`${interaction.operation} — ${check.name}: ${(check.message ?? '').split('\n')[0]!.split(':')[0]}`);
  }
  return [...findings].sort();
}
