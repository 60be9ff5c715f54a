/**
 * The one way the event path asks Temporal about pending work: starting an
 * event's runs, cancelling runs for cancel_on, signalling tasks for
 * wait_for_event. Each pending row is asked about through the availability
 * gate, then Temporal's answer is recorded on the row. Never throws: what
 * could not be done stays pending and is returned, so the event stays
 * pending and the dispatcher repeats the step (Temporal takes a repeated
 * request as the same one, and a row is settled at most once).
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

export async function deliverPending<Row, Outcome, Ready = Row>(input: {
  rows: readonly Row[];
  gate: AvailabilityGate;
  timeouts: { timeoutMs: number; probeTimeoutMs: number };
  /**
   * Work of our own before Temporal is asked about a row, outside the gate
   * (it takes no pass, and its failure teaches the gate nothing): what the
   * call needs, or undefined when the row needs no call (prepare settled it
   * itself). Throwing leaves the row pending. @default the row as it is
   */
  prepare?: (row: Row) => Promise<Ready | undefined>;
  /** The Temporal call for one row. */
  call: (row: Ready, deadline: Date) => Promise<Outcome>;
  /** Records the answer on the row. */
  settle: (row: Ready, outcome: Outcome) => Promise<void>;
  logger: Logger;
  /** Log fields naming the row (with the event id). */
  logFields: (row: Row) => Record<string, unknown>;
  /** `settled` may be left out when `settle` logs the answer itself. */
  messages: { deferred: string; notCalled: string; settled?: string; notSettled: string };
  /** A failure from the steps before this one, kept unless a later one replaces it. */
  failure: PendingWorkFailure | undefined;
}): Promise<PendingWorkFailure | undefined> {
  const { gate, logger, messages } = input;
  let failure = input.failure;
  for (const row of input.rows) {
    let ready: Ready | undefined;
    try {
      ready = input.prepare === undefined ? (row as unknown as Ready) : await input.prepare(row);
    } catch (error) {
      // Our own store, not Temporal: the gate learns nothing from it.
      failure = { message: (error as Error).message, unreachable: false };
      logger.warn({ ...input.logFields(row), err: error }, messages.notCalled);
      continue;
    }
    if (ready === undefined) continue;
    const pass = gate.tryEnter();
    if (pass === undefined) {
      failure ??= { message: messages.deferred, unreachable: true };
      continue;
    }
    let outcome: Outcome;
    try {
      const timeout = pass.probe ? input.timeouts.probeTimeoutMs : input.timeouts.timeoutMs;
      outcome = await input.call(ready, new Date(Date.now() + timeout));
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
      await input.settle(ready, outcome);
      if (messages.settled !== undefined) logger.info({ ...input.logFields(row), outcome }, messages.settled);
    } catch (error) {
      failure = { message: (error as Error).message, unreachable: false };
      logger.warn({ ...input.logFields(row), err: error }, messages.notSettled);
    }
  }
  return failure;
}
