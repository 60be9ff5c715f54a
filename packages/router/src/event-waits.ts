import type { EventEnvelope, Logger } from '@activity-core/contracts';
import type { EventWaitRow, EventWaitsRepository, WaitCandidate, WaitScanDecision } from '@activity-core/db';
import {
  compileMatchExpression,
  evaluateMatch,
  MAX_FILTER_EVALUATION_COST,
  type CompileFilterResult,
} from '@activity-core/filters';
import type { WaitSignaller } from '@activity-core/temporal/client';
import type { AvailabilityGate } from './availability-gate';
import { deliverPending, type PendingWorkFailure } from './gated-delivery';

/**
 * wait_for_event: an accepted event resumes the `wait_for_event` tasks
 * waiting for its type whose match expression it satisfies. Per event one
 * scan of the open waits registered before it was accepted, recorded with
 * its matches in one transaction (a wait takes the first event that matches
 * it); then each matched task workflow is signalled. Signals Temporal did
 * not take stay pending, and the event stays pending with them, so the
 * dispatcher retries them as it retries routes. See docs/wait-for-event.md.
 */

/** What `trigger.event` reads for a run not started by an event: every field empty, so reading its data fails. */
const NO_TRIGGER_EVENT: EventEnvelope = { event_id: '', event_type: '', source: '', occurred_at: '', data: {} };

const compiled = new Map<string, CompileFilterResult>();
const COMPILED_CACHE_SIZE = 1_000;

function compiledMatch(expression: string): CompileFilterResult {
  let result = compiled.get(expression);
  if (result === undefined) {
    result = compileMatchExpression(expression);
    if (compiled.size >= COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value as string);
    compiled.set(expression, result);
  }
  return result;
}

function isEnvelope(value: unknown): value is EventEnvelope {
  return (
    typeof value === 'object' && value !== null && typeof (value as { event_type?: unknown }).event_type === 'string'
  );
}

/**
 * Most cost units (the filters' counted units) one event's scan spends on
 * all the match expressions it evaluates together. Each expression keeps its
 * own limit (MAX_FILTER_EVALUATION_COST); this one bounds their sum, which
 * would otherwise grow with the number of open waits (up to 1,000 of them,
 * one per run the event senders started). Ordinary expressions spend tens of
 * units, so 1,000 of them stay far below it; the adversarial worst case is
 * about twice one filter's (some 0.8 s on the 2-vCPU dev container). When it
 * is spent, the rest of the waits are not examined (the scan is `capped`)
 * and keep waiting for a later event.
 * @default 10_000_000
 */
export const MAX_WAIT_SCAN_COST = 2 * MAX_FILTER_EVALUATION_COST;

/** What is left of one scan's MAX_WAIT_SCAN_COST, shared by the pages of candidates it decides. */
export interface WaitScanBudget {
  remaining: number;
}

/**
 * Which of `candidates` (open waits for the event's type) `event` matches.
 * A wait without a match expression takes any event of its type; one whose
 * expression fails on this event (a missing key) is not matched and is
 * counted in `errors`. Evaluations spend `budget` (a fresh
 * MAX_WAIT_SCAN_COST when absent); once it cannot pay for a wait's whole
 * evaluation, that wait and the rest are left unexamined (`examined` says how
 * many were).
 */
export function decideWaitMatches(
  event: EventEnvelope,
  candidates: readonly WaitCandidate[],
  budget: WaitScanBudget = { remaining: MAX_WAIT_SCAN_COST },
): WaitScanDecision {
  const decision: WaitScanDecision = { matched: [], errors: 0, examined: candidates.length };
  for (const [index, candidate] of candidates.entries()) {
    if (budget.remaining <= 0) {
      decision.examined = index;
      break;
    }
    if (candidate.match === null) {
      decision.matched.push({ waitId: candidate.waitId, detail: 'no match expression: the first event of the type' });
      continue;
    }
    const expression = compiledMatch(candidate.match);
    if (!expression.ok) {
      decision.errors += 1;
      continue;
    }
    const trigger = { event: isEnvelope(candidate.triggerEvent) ? candidate.triggerEvent : NO_TRIGGER_EVENT };
    const limit = Math.min(MAX_FILTER_EVALUATION_COST, budget.remaining);
    let spent = 0;
    const outcome = evaluateMatch(expression.filter, { event, trigger }, { limit, spent: (units) => (spent = units) });
    budget.remaining -= spent;
    if (outcome.outcome === 'error' && spent >= limit && limit < MAX_FILTER_EVALUATION_COST) {
      // Stopped by what was left of the scan's budget, not by its own limit: this wait was not examined.
      decision.examined = index;
      break;
    }
    if (outcome.outcome === 'match')
      decision.matched.push({ waitId: candidate.waitId, detail: `matched: ${candidate.match}`.slice(0, 1_000) });
    else if (outcome.outcome === 'error') decision.errors += 1;
  }
  return decision;
}

export interface EventWaitsDeps {
  eventWaits: Pick<EventWaitsRepository, 'state' | 'scan' | 'settleSignal'>;
  signaller: Pick<WaitSignaller, 'signal'>;
  logger: Logger;
  /** Most open waits one event is matched against; the scan records when there were more. @default 1000 */
  maxWaitsPerEvent?: number;
}

/** Why some of an event's wait work is not done yet (the event stays pending for the dispatcher). */
export type EventWaitsFailure = PendingWorkFailure;

export function createEventWaits(deps: EventWaitsDeps) {
  const maxWaits = deps.maxWaitsPerEvent ?? 1_000;

  return {
    /**
     * Scans the open waits (once per event), then signals every task this
     * event matched whose signal is still pending. Never throws: what could
     * not be done is returned, and stays recorded as pending. `quick` with
     * `waitsOpen` false skips everything: a just-accepted event of a type no
     * wait was open for (the accept looked in the same statement).
     */
    async process(
      envelope: EventEnvelope,
      gate: AvailabilityGate,
      options: { quick: boolean; waitsOpen: boolean; timeoutMs: number; probeTimeoutMs: number },
    ): Promise<EventWaitsFailure | undefined> {
      if (options.quick && !options.waitsOpen) return undefined;
      let failure: EventWaitsFailure | undefined;
      let pending: EventWaitRow[];
      let scanned: boolean;
      try {
        // A just-accepted event (its accept saw an open wait) has no record yet: nothing to read.
        ({ pending, scanned } = options.quick
          ? { pending: [], scanned: false }
          : await deps.eventWaits.state(envelope.event_id));
      } catch (error) {
        deps.logger.warn(
          { eventId: envelope.event_id, err: error },
          'wait_for_event: could not read the wait state; the dispatcher will retry',
        );
        return { message: (error as Error).message, unreachable: false };
      }
      if (!scanned) {
        try {
          // One budget for the whole scan: its pages of candidates share it.
          const budget: WaitScanBudget = { remaining: MAX_WAIT_SCAN_COST };
          const fresh = await deps.eventWaits.scan({
            eventId: envelope.event_id,
            eventType: envelope.event_type,
            source: envelope.source,
            maxWaits,
            decide: (candidates) => decideWaitMatches(envelope, candidates, budget),
          });
          if (fresh !== undefined) pending.push(...fresh);
          // Another dispatch of this event (a concurrent dispatcher, another API process) made the scan:
          // its marker insert waited for that commit, so the matches are visible now. That process may die
          // before it signals them, and this one would then settle the event with matches never signalled
          // (their runs left waiting until their timeout): signal the pending ones too (a repeat is ignored).
          else pending = (await deps.eventWaits.state(envelope.event_id)).pending;
        } catch (error) {
          failure = { message: (error as Error).message, unreachable: false };
          deps.logger.warn(
            { eventId: envelope.event_id, err: error },
            'wait_for_event: scan failed; the dispatcher will retry',
          );
        }
      }
      return await deliverPending({
        rows: pending,
        gate,
        timeouts: options,
        call: (row, deadline) => deps.signaller.signal(row.waitId, envelope, { deadline }),
        // The task ignores a repeated signal.
        settle: (row, outcome) => deps.eventWaits.settleSignal(row.waitId, outcome),
        logger: deps.logger,
        logFields: (row) => ({ eventId: envelope.event_id, waitId: row.waitId }),
        messages: {
          deferred: 'Temporal is unreachable; resuming waits deferred until it answers',
          notCalled: 'wait_for_event: task not signalled; the dispatcher will retry',
          settled: 'wait_for_event: waiting task resumed',
          notSettled: 'wait_for_event: could not record the signal; the dispatcher will retry',
        },
        failure,
      });
    },
  };
}

export type EventWaits = ReturnType<typeof createEventWaits>;
