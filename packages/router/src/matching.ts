import {
  assertNever,
  type ActivityDefinition,
  type EventEnvelope,
  type EventTrigger,
  type Trigger,
} from '@activity-core/contracts';
import { compileFilter, evaluateFilter, type CompileFilterResult } from '@activity-core/filters';

/**
 * `order.paid` matches only `order.paid`; `order.*` matches `order.paid` and
 * `order.refund.created` but not `order` itself; `*` matches everything.
 */
export function eventTypeMatches(pattern: string, eventType: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return eventType.startsWith(pattern.slice(0, -1));
  return pattern === eventType;
}

export function eventTriggerMatches(trigger: EventTrigger, envelope: EventEnvelope): boolean {
  if (!eventTypeMatches(trigger.event_type, envelope.event_type)) return false;
  if (trigger.source !== undefined && trigger.source !== envelope.source) return false;
  return true;
}

/**
 * What one activity's triggers decide for an event whose type and source one
 * of them matches: a run (`pending` until Temporal confirms), or no run
 * because every matching trigger's filter said no (`filtered`) or could not
 * say (`filter_error`). `detail` names the filters and errors.
 */
export type ActivityDecision =
  { outcome: 'pending' } | { outcome: 'filtered'; detail: string } | { outcome: 'filter_error'; detail: string };

/** Longest `detail` recorded; the decision log is for people, not for payload dumps. */
const MAX_DETAIL_LENGTH = 1_000;

/**
 * Compiled filters by expression. Definitions change rarely and events are
 * many, so each expression is compiled once per process; the cache is
 * bounded so a stream of edits cannot grow it without limit.
 */
const compiled = new Map<string, CompileFilterResult>();
const COMPILED_CACHE_SIZE = 1_000;

function compiledFilter(expression: string): CompileFilterResult {
  let result = compiled.get(expression);
  if (result === undefined) {
    result = compileFilter(expression);
    if (compiled.size >= COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value as string);
    compiled.set(expression, result);
  }
  return result;
}

function evaluate(
  expression: string,
  envelope: EventEnvelope,
): { ok: true; match: boolean } | { ok: false; message: string } {
  const result = compiledFilter(expression);
  // Registration validated the expression; this only happens if the filter
  // language got stricter since. The event is not routed, and the log says why.
  if (!result.ok) return { ok: false, message: `the filter no longer compiles: ${result.error.message}` };
  const outcome = evaluateFilter(result.filter, envelope);
  switch (outcome.outcome) {
    case 'match':
      return { ok: true, match: true };
    case 'no_match':
      return { ok: true, match: false };
    case 'error':
      return {
        ok: false,
        message:
          outcome.position === undefined ? outcome.message : `${outcome.message} (at position ${outcome.position})`,
      };
    default:
      return assertNever(outcome);
  }
}

/** Whether a matching trigger's filter (when it has one) lets the event through; compiled once per process. */
export function filterPasses(trigger: EventTrigger, envelope: EventEnvelope): boolean {
  if (trigger.filter === undefined) return true;
  const result = evaluate(trigger.filter, envelope);
  return result.ok && result.match;
}

function truncate(text: string): string {
  return text.length <= MAX_DETAIL_LENGTH ? text : `${text.slice(0, MAX_DETAIL_LENGTH - 1)}…`;
}

/**
 * Decides for one activity. `undefined` when no event trigger matches the
 * event's type and source: the event is not about this activity and nothing
 * is recorded. Otherwise one run if any matching trigger has no filter or a
 * filter that is true — an activity gets at most one run per event however
 * many of its triggers match. Never throws: a filter that fails on this event
 * is a recorded outcome, not an ingress error.
 */
export function decideForActivity(triggers: readonly Trigger[], envelope: EventEnvelope): ActivityDecision | undefined {
  const matching = triggers.filter(
    (trigger): trigger is EventTrigger => trigger.type === 'event' && eventTriggerMatches(trigger, envelope),
  );
  if (matching.length === 0) return undefined;
  const rejected: string[] = [];
  const failed: string[] = [];
  for (const trigger of matching) {
    if (trigger.filter === undefined) return { outcome: 'pending' };
    const result = evaluate(trigger.filter, envelope);
    if (result.ok && result.match) return { outcome: 'pending' };
    if (result.ok) rejected.push(`filter \`${trigger.filter}\` is false`);
    else failed.push(`filter \`${trigger.filter}\` failed: ${result.message}`);
  }
  if (failed.length > 0) return { outcome: 'filter_error', detail: truncate([...failed, ...rejected].join('; ')) };
  return { outcome: 'filtered', detail: truncate(rejected.join('; ')) };
}

/**
 * Emit_event tasks whose event one of the same definition's event triggers
 * matches by type and source: each run would start another, a loop ended
 * only by EMIT_MAX_HOPS. Filters are not consulted (they may depend on data
 * the task renders at run time), so a filtered self-trigger is reported too.
 * Empty when the definition sets `allow_self_trigger: true`.
 */
export function selfTriggerIssues(
  definition: Pick<ActivityDefinition, 'triggers' | 'tasks' | 'allow_self_trigger'>,
): Array<{ path: string; message: string }> {
  if (definition.allow_self_trigger === true) return [];
  const issues: Array<{ path: string; message: string }> = [];
  for (const [index, task] of definition.tasks.entries()) {
    if (task.type !== 'emit_event') continue;
    const emitted = { event_type: task.config.event_type, source: task.config.source };
    const trigger = definition.triggers.findIndex(
      (candidate) =>
        candidate.type === 'event' &&
        eventTypeMatches(candidate.event_type, emitted.event_type) &&
        (candidate.source === undefined || candidate.source === emitted.source),
    );
    if (trigger === -1) continue;
    issues.push({
      path: `tasks[${index}].config.event_type`,
      message:
        `emits ${emitted.event_type} from ${emitted.source}, which this activity's triggers[${trigger}] matches: every run would start another. ` +
        'Set allow_self_trigger: true to allow it (chains end after EMIT_MAX_HOPS emits)',
    });
  }
  return issues;
}
