/**
 * The slot bookkeeping of one concurrency coordinator, as pure functions over
 * plain data (the coordinator's state is carried across continue-as-new as it
 * is). Deterministic: no clock, no randomness, no I/O.
 *
 * - holders: runs (by workflow id) that hold a slot, in grant order.
 * - queue: runs waiting for a slot, in the order their requests arrived.
 * A run is in at most one of the two.
 */
import type { RunActivityInput } from '@activity-core/contracts';

export type OnLimit = 'queue' | 'skip' | 'replace';

/**
 * A cron trigger's overlap policy as its coordinator applies it (one slot:
 * the run of the trigger that is going). `allow_all` never reaches a coordinator.
 */
export type OverlapMode = 'skip' | 'buffer_one' | 'buffer_all' | 'cancel_other';

/** Most runs a `buffer_all` trigger keeps waiting (Temporal Schedules buffer at most 1000 starts too). */
export const MAX_OVERLAP_BUFFER = 1000;

/**
 * Temporal's default limit on one payload (BlobSizeLimitError, 2 MiB): the
 * coordinator's state travels as one when it continues as new.
 */
const TEMPORAL_PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024;

/**
 * Most bytes of run workflow ids (UTF-8, plus three for the JSON quotes and
 * comma) a concurrency queue holds: half the payload limit, which leaves the
 * other half for the holders (at most the limit, 1,000) and the rest of the
 * state. About 4,000 event-triggered runs; a run beyond it is skipped with
 * the reason (CONCURRENCY_QUEUE_MAX_BYTES lowers it).
 */
export const DEFAULT_MAX_QUEUE_BYTES = TEMPORAL_PAYLOAD_LIMIT_BYTES / 2;

const ASCII = /^[^\u0080-\uffff]*$/;

/** What one queued id adds to the state's JSON: its UTF-8 bytes, two quotes and a comma. */
export function queuedBytes(id: string): number {
  // Run ids are ASCII but for event ids that are not: count those by hand, as the workflow sandbox has no Buffer.
  if (ASCII.test(id)) return id.length + 3;
  let bytes = 3;
  for (let i = 0; i < id.length; i++) {
    const code = id.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

export interface SlotState {
  limit: number;
  onLimit: OnLimit;
  holders: string[];
  queue: string[];
  /** Set on the coordinator of a cron trigger's overlap policy; absent on concurrency coordinators. */
  overlap?: OverlapMode;
  /** `cancel_other`: holders whose cancellation was already requested (asked once). */
  cancelling?: string[];
}

export interface SlotRequest {
  runWorkflowId: string;
  /** The definition's limit and choice as the requesting run saw them: the newest request's values apply. */
  limit: number;
  onLimit: OnLimit;
  /** A run of a cron trigger with an overlap policy (limit 1); the newest request's policy applies. */
  overlap?: OverlapMode;
  /** The queue's byte bound as the requesting worker is configured; absent: DEFAULT_MAX_QUEUE_BYTES. */
  maxQueueBytes?: number;
}

/** How the coordinator applies requests; `boundQueue` is false only when replaying histories from before the bound. */
export interface SlotRules {
  boundQueue: boolean;
}

/** What the coordinator tells one run. */
export type SlotAnswer =
  { runWorkflowId: string; answer: 'granted' } | { runWorkflowId: string; answer: 'skipped'; reason: string };

/** `cancel_other`: the coordinator asks for the cancellation of a holder, on behalf of the run that replaces it. */
export interface CancelHolder {
  runWorkflowId: string;
  answer: 'cancel';
  /** The run that waits for the slot. */
  by: string;
}

/** What the coordinator does after a request or a release: answer runs, or cancel a holder. */
export type SlotEffect = SlotAnswer | CancelHolder;

export function emptySlotState(limit: number, onLimit: OnLimit): SlotState {
  return { limit, onLimit, holders: [], queue: [] };
}

/**
 * A run asks for a slot. A request from a run that already holds one is
 * answered `granted` again (the run was reset or its request retried); one
 * from a run already queued changes nothing.
 */
export function requestSlot(
  state: SlotState,
  request: SlotRequest,
  rules: SlotRules = { boundQueue: true },
): SlotEffect[] {
  if (request.overlap !== undefined) return requestOverlapSlot(state, request.runWorkflowId, request.overlap);
  state.limit = request.limit;
  state.onLimit = request.onLimit;
  const id = request.runWorkflowId;
  if (state.holders.includes(id)) return [{ runWorkflowId: id, answer: 'granted' }];
  if (state.queue.includes(id)) return [];
  if (state.holders.length < state.limit && state.queue.length === 0) {
    state.holders.push(id);
    return [{ runWorkflowId: id, answer: 'granted' }];
  }
  if (state.onLimit === 'replace') return replaceOldest(state, id);
  if (state.onLimit === 'skip') {
    return [
      {
        runWorkflowId: id,
        answer: 'skipped',
        reason: `the concurrency limit of ${state.limit} was reached (${state.holders.length} running); on_limit is skip`,
      },
    ];
  }
  if (rules.boundQueue) {
    const max = request.maxQueueBytes ?? DEFAULT_MAX_QUEUE_BYTES;
    const used = state.queue.reduce((sum, queued) => sum + queuedBytes(queued), 0);
    // The state is carried across continue-as-new as one payload: a queue past the bound would stop the coordinator.
    if (used + queuedBytes(id) > max)
      return [
        {
          runWorkflowId: id,
          answer: 'skipped',
          reason: `the concurrency limit of ${state.limit} was reached (${state.holders.length} running) and its queue is full: ${state.queue.length} runs wait (${used} of at most ${max} bytes of run ids)`,
        },
      ];
  }
  state.queue.push(id);
  // A raised limit frees slots for the queue at once.
  return grantFree(state);
}

/**
 * A run gives its slot back, or leaves the queue (it ended while waiting).
 * Unknown runs change nothing, so a release may be delivered twice.
 */
export function releaseSlot(state: SlotState, runWorkflowId: string): SlotAnswer[] {
  state.holders = state.holders.filter((id) => id !== runWorkflowId);
  state.queue = state.queue.filter((id) => id !== runWorkflowId);
  if (state.cancelling !== undefined) state.cancelling = state.cancelling.filter((id) => id !== runWorkflowId);
  return grantFree(state);
}

/**
 * Whether the run `a` is of an earlier fire than `b`. The runs of one
 * coordinator are cron runs of one activity, `activity-{activity_id}:{scheduled_for}`
 * with the fixed-width `YYYY-MM-DDTHH:MM:SS+00:00` form, so their ids sort as
 * their fire times. Runs started together (a misfire catch-up) ask in whatever
 * order their requests happen to arrive; this keeps the queue in fire order anyway.
 */
const earlierFire = (a: string, b: string): boolean => a < b;

/**
 * A cron run asks for its trigger's one slot. Temporal Schedules' overlap
 * policies, applied to runs: the slot is free → granted; otherwise
 * - `skip`: skipped;
 * - `buffer_one`: waits when nobody waits yet, else skipped: the earliest
 *   fire keeps the one place (Temporal's BUFFER_ONE keeps the first buffered start);
 * - `buffer_all`: waits, in fire order (skipped beyond MAX_OVERLAP_BUFFER waiting);
 * - `cancel_other`: the newest fire wins: it waits, and the cancellation of an
 *   earlier holder is requested; a run that was waiting is skipped, replaced
 *   by the newer one; a run of an earlier fire than one already holding or
 *   waiting (it asked late) is skipped and cancels nothing.
 * Repeated requests change nothing, as for concurrency slots.
 */
function requestOverlapSlot(state: SlotState, id: string, overlap: OverlapMode): SlotEffect[] {
  state.limit = 1;
  state.overlap = overlap;
  if (state.holders.includes(id)) return [{ runWorkflowId: id, answer: 'granted' }];
  if (state.queue.includes(id)) return [];
  if (state.holders.length < state.limit && state.queue.length === 0) {
    state.holders.push(id);
    return [{ runWorkflowId: id, answer: 'granted' }];
  }
  const holder = state.holders[0];
  const busy = holder === undefined ? 'the slot is being handed over' : `${holder} is still running`;
  const skipped = (reason: string): SlotAnswer[] => [{ runWorkflowId: id, answer: 'skipped', reason }];
  switch (overlap) {
    case 'skip':
      return skipped(`${busy}; the trigger's overlap policy is skip`);
    case 'buffer_one': {
      const waiting = state.queue[0];
      if (waiting !== undefined && !earlierFire(id, waiting))
        return skipped(`${busy} and ${waiting} already waits for it; the trigger's overlap policy is buffer_one`);
      // Nobody waits, or a run of an earlier fire asked late: it takes the one place.
      const effects: SlotEffect[] = state.queue.splice(0).map((later) => ({
        runWorkflowId: later,
        answer: 'skipped' as const,
        reason: `${busy} and the earlier fire's run ${id} waits for it; the trigger's overlap policy is buffer_one`,
      }));
      state.queue.push(id);
      return [...effects, ...grantFree(state)];
    }
    case 'buffer_all': {
      if (state.queue.length >= MAX_OVERLAP_BUFFER)
        return skipped(
          `${busy} and ${state.queue.length} runs already wait for it, the most the overlap policy buffer_all keeps`,
        );
      const before = state.queue.findIndex((waiting) => earlierFire(id, waiting));
      if (before === -1) state.queue.push(id);
      else state.queue.splice(before, 0, id);
      return grantFree(state);
    }
    case 'cancel_other': {
      const newer = [...state.holders, ...state.queue].find((other) => earlierFire(id, other));
      if (newer !== undefined)
        return skipped(`replaced by the newer run ${newer}; the trigger's overlap policy is cancel_other`);
      const effects: SlotEffect[] = state.queue.splice(0).map((waiting) => ({
        runWorkflowId: waiting,
        answer: 'skipped' as const,
        reason: `replaced by the newer run ${id}; the trigger's overlap policy is cancel_other`,
      }));
      state.queue.push(id);
      const cancelling = (state.cancelling ??= []);
      for (const running of state.holders) {
        if (cancelling.includes(running)) continue;
        cancelling.push(running);
        effects.push({ runWorkflowId: running, answer: 'cancel', by: id });
      }
      return [...effects, ...grantFree(state)];
    }
  }
}

/**
 * `on_limit: replace` (docs/pacing.md): the newest `limit` runs keep the
 * slots. The new run waits for a slot; among the holders not yet being
 * cancelled and the runs waiting, oldest first, those beyond the newest
 * `limit` go: a holder is cancelled on behalf of the new run (recorded as
 * cancelled by it), a waiting run is skipped, replaced by it. The new run is
 * granted its slot when the cancelled holder has released it, so no more than
 * `limit` runs ever hold one.
 */
function replaceOldest(state: SlotState, id: string): SlotEffect[] {
  const cancelling = (state.cancelling ??= []);
  state.queue.push(id);
  const staying = state.holders.filter((holder) => !cancelling.includes(holder));
  const effects: SlotEffect[] = [];
  let surplus = staying.length + state.queue.length - state.limit;
  for (const holder of staying) {
    if (surplus <= 0) break;
    cancelling.push(holder);
    effects.push({ runWorkflowId: holder, answer: 'cancel', by: id });
    surplus--;
  }
  while (surplus > 0 && state.queue.length > 1) {
    const replaced = state.queue.shift()!;
    effects.push({
      runWorkflowId: replaced,
      answer: 'skipped',
      reason: `replaced by the newer run ${id}; on_limit is replace`,
    });
    surplus--;
  }
  return [...effects, ...grantFree(state)];
}

/** Grants free slots to the queue's head, oldest first. */
function grantFree(state: SlotState): SlotAnswer[] {
  const answers: SlotAnswer[] = [];
  while (state.holders.length < state.limit && state.queue.length > 0) {
    const next = state.queue.shift()!;
    state.holders.push(next);
    answers.push({ runWorkflowId: next, answer: 'granted' });
  }
  return answers;
}

export function isIdle(state: SlotState): boolean {
  return state.holders.length === 0 && state.queue.length === 0;
}

/**
 * The overlap policy a run is subject to: only cron runs that know their
 * trigger (`trigger_index`) of a trigger whose `overlap` is set and is not
 * `allow_all`. Everything else — events, manual runs, backfills, cron runs
 * without `trigger_index`, `allow_all` — is undefined and takes no overlap
 * slot.
 */
export function overlapOf(input: RunActivityInput): { mode: OverlapMode; triggerIndex: number } | undefined {
  const { trigger } = input;
  if (trigger.type !== 'cron' || trigger.trigger_index === undefined) return undefined;
  const cron = input.activity.definition.triggers[trigger.trigger_index];
  if (cron?.type !== 'cron' || cron.overlap === undefined || cron.overlap === 'allow_all') return undefined;
  return { mode: cron.overlap, triggerIndex: trigger.trigger_index };
}
