/**
 * The slot bookkeeping of one concurrency coordinator, as pure functions over
 * plain data (the coordinator's state is carried across continue-as-new as it
 * is). Deterministic: no clock, no randomness, no I/O.
 *
 * - holders: runs (by workflow id) that hold a slot, in grant order.
 * - queue: runs waiting for a slot, in the order their requests arrived.
 * A run is in at most one of the two.
 */
export type OnLimit = 'queue' | 'skip';

export interface SlotState {
  limit: number;
  onLimit: OnLimit;
  holders: string[];
  queue: string[];
}

export interface SlotRequest {
  runWorkflowId: string;
  /** The definition's limit and choice as the requesting run saw them: the newest request's values apply. */
  limit: number;
  onLimit: OnLimit;
}

/** What the coordinator tells one run. */
export type SlotAnswer =
  { runWorkflowId: string; answer: 'granted' } | { runWorkflowId: string; answer: 'skipped'; reason: string };

export function emptySlotState(limit: number, onLimit: OnLimit): SlotState {
  return { limit, onLimit, holders: [], queue: [] };
}

/**
 * A run asks for a slot. A request from a run that already holds one is
 * answered `granted` again (the run was reset or its request retried); one
 * from a run already queued changes nothing.
 */
export function requestSlot(state: SlotState, request: SlotRequest): SlotAnswer[] {
  state.limit = request.limit;
  state.onLimit = request.onLimit;
  const id = request.runWorkflowId;
  if (state.holders.includes(id)) return [{ runWorkflowId: id, answer: 'granted' }];
  if (state.queue.includes(id)) return [];
  if (state.holders.length < state.limit && state.queue.length === 0) {
    state.holders.push(id);
    return [{ runWorkflowId: id, answer: 'granted' }];
  }
  if (state.onLimit === 'skip') {
    return [
      {
        runWorkflowId: id,
        answer: 'skipped',
        reason: `the concurrency limit of ${state.limit} was reached (${state.holders.length} running); on_limit is skip`,
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
  return grantFree(state);
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
