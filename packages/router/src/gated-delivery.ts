/**
 * The last step that cancel_on and wait_for_event share: asking Temporal
 * about each pending row (cancel a run, signal a waiting task) through the
 * availability gate, then recording Temporal's answer on the row. Never
 * throws: what could not be done stays pending and is returned, so the
 * event stays pending and the dispatcher repeats the step (Temporal takes a
 * repeated request as the same one, and a row is settled at most once).
 */
import type { Logger } from '@activity-core/contracts';
import { isTemporalUnreachable } from '@activity-core/temporal/client';
import type { AvailabilityGate } from './availability-gate';

/** Why some of an event's Temporal work is not done yet (the event stays pending for the dispatcher). */
export interface PendingWorkFailure {
  message: string;
  /** True when Temporal did not answer (the gate's retry window applies rather than per-event backoff). */
  unreachable: boolean;
}

export async function deliverPending<Row, Outcome>(input: {
  rows: readonly Row[];
  gate: AvailabilityGate;
  timeouts: { timeoutMs: number; probeTimeoutMs: number };
  /** The Temporal call for one row. */
  call: (row: Row, deadline: Date) => Promise<Outcome>;
  /** Records the answer on the row. */
  settle: (row: Row, outcome: Outcome) => Promise<void>;
  logger: Logger;
  /** Log fields naming the row (with the event id). */
  logFields: (row: Row) => Record<string, unknown>;
  messages: { deferred: string; notCalled: string; settled: string; notSettled: string };
  /** A failure from the steps before this one, kept unless a later one replaces it. */
  failure: PendingWorkFailure | undefined;
}): Promise<PendingWorkFailure | undefined> {
  const { gate, logger, messages } = input;
  let failure = input.failure;
  for (const row of input.rows) {
    const pass = gate.tryEnter();
    if (pass === undefined) {
      failure ??= { message: messages.deferred, unreachable: true };
      continue;
    }
    let outcome: Outcome;
    try {
      const timeout = pass.probe ? input.timeouts.probeTimeoutMs : input.timeouts.timeoutMs;
      outcome = await input.call(row, new Date(Date.now() + timeout));
      gate.reachable(pass);
    } catch (error) {
      const unreachable = isTemporalUnreachable(error);
      if (unreachable) gate.unreachable(pass);
      else gate.reachable(pass);
      failure = { message: (error as Error).message, unreachable: unreachable && (failure?.unreachable ?? true) };
      logger.warn({ ...input.logFields(row), err: error }, messages.notCalled);
      continue;
    }
    try {
      // Lost, the row stays pending: the retry asks again, which Temporal takes as the same request.
      await input.settle(row, outcome);
      logger.info({ ...input.logFields(row), outcome }, messages.settled);
    } catch (error) {
      failure = { message: (error as Error).message, unreachable: false };
      logger.warn({ ...input.logFields(row), err: error }, messages.notSettled);
    }
  }
  return failure;
}
