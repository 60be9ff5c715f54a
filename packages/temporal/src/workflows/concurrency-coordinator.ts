import type { RunActivityInput, RunOutcome } from '@activity-core/contracts';
import { runIdFor } from '@activity-core/contracts/ids';
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineSignal,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Effects } from '../effects';
import { BOOKKEEPING_OPTIONS } from './effect-options';
import { recordedPriority } from './run-priority';
import {
  isIdle,
  releaseSlot,
  requestSlot,
  type SlotAnswer,
  type SlotEffect,
  type SlotRequest,
  type SlotState,
} from './concurrency-slots';

/** Run → coordinator: "give me a slot" (sent with signal-with-start by the requestConcurrencySlot activity). */
export const slotRequestSignal = defineSignal<[SlotRequest]>('concurrencySlotRequest');
/** Run → coordinator: "I am done with my slot, or with waiting for one". */
export const slotReleaseSignal = defineSignal<[{ runWorkflowId: string }]>('concurrencySlotRelease');
/** Coordinator → run: granted, or skipped with a reason. */
export const slotAnswerSignal = defineSignal<[SlotAnswer]>('concurrencySlotAnswer');
/**
 * Overlap coordinator → cron run: the same answers under a name of their own,
 * so a run that waits for its trigger's overlap slot and then for a
 * concurrency slot tells the two coordinators apart.
 */
export const overlapSlotAnswerSignal = defineSignal<[SlotAnswer]>('overlapSlotAnswer');

const slots = proxyActivities<Effects>(BOOKKEEPING_OPTIONS);

/**
 * A waiting run repeats its request this often. A request is idempotent in
 * the coordinator, so this only matters when an answer or a request was lost
 * (a coordinator that ended idle as the request arrived): it bounds how long
 * such a run could wait for nothing.
 */
const REREQUEST_EVERY = '2 minutes';

/**
 * Runs `run` once this run holds a slot of its activity's concurrency limit
 * (docs/concurrency.md), and gives the slot back when `run` ends however it
 * ends. Only called for definitions with `concurrency`: runs without it issue
 * exactly the commands they always did.
 */
export async function withConcurrencySlot(
  input: RunActivityInput,
  run: () => Promise<RunOutcome>,
): Promise<RunOutcome> {
  const concurrency = input.activity.definition.concurrency!;
  const { workflowId } = workflowInfo();
  const runId = runIdFor(workflowId);
  const { activity, trigger } = input;
  let answer: SlotAnswer | undefined;
  setHandler(slotAnswerSignal, (received) => {
    if (received.runWorkflowId === workflowId) answer ??= received;
  });
  const request = () =>
    slots.requestConcurrencySlot({
      run: {
        runId,
        workflowId,
        activityId: activity.id,
        activityVersion: activity.version,
        triggerType: trigger.type,
        ...(trigger.type === 'event' ? { eventId: trigger.event.event_id } : {}),
        ...(trigger.type === 'cron' || trigger.type === 'backfill'
          ? { scheduledFor: trigger.scheduled_for, windowStart: trigger.window_start, windowEnd: trigger.window_end }
          : {}),
        ...recordedPriority(),
      },
      activityName: activity.name,
      concurrency,
      ...(trigger.type === 'event' ? { event: trigger.event } : {}),
    });

  const requested = await request();
  if (requested.outcome === 'key_error') {
    const message = `the concurrency key could not be evaluated: ${requested.message}`;
    await slots.setRunStatus({ runId, status: 'failed', error: { message, type: 'concurrency_key_error' } });
    throw ApplicationFailure.nonRetryable(message, 'concurrency_key_error');
  }
  return await holdSlot({
    runId,
    workflowId,
    coordinatorWorkflowId: requested.coordinatorWorkflowId,
    answer: () => answer,
    request,
    skipped: (reason) => ({ message: reason, type: 'concurrency_limit', key: requested.key }),
    run,
  });
}

/**
 * What a run waiting for a coordinator's slot does once it has asked for one
 * (concurrency limits and cron overlap policies alike): waits for the answer,
 * asking again every REREQUEST_EVERY; records `skipped` with `skipped(reason)`
 * as its error, or holds the slot and runs `run`; records `cancelled` when
 * cancelled while it waits; and gives the slot (or its place in the queue)
 * back however it ends.
 */
export async function holdSlot(options: {
  runId: string;
  workflowId: string;
  coordinatorWorkflowId: string;
  /** The coordinator's answer so far (set by the caller's signal handler). */
  answer: () => SlotAnswer | undefined;
  request: () => Promise<unknown>;
  skipped: (reason: string) => Record<string, unknown> & { message: string; type: string };
  run: () => Promise<RunOutcome>;
}): Promise<RunOutcome> {
  const { runId, workflowId } = options;
  const coordinator = getExternalWorkflowHandle(options.coordinatorWorkflowId);
  let started = false;
  try {
    while (!(await condition(() => options.answer() !== undefined, REREQUEST_EVERY))) await options.request();
    const answer = options.answer()!;
    if (answer.answer === 'skipped') {
      await slots.setRunStatus({ runId, status: 'skipped', error: options.skipped(answer.reason) });
      return { runId, status: 'skipped', tasks: [] };
    }
    await slots.markRunHoldsSlot({ runId });
    started = true;
    return await options.run();
  } catch (error) {
    if (!started && isCancellation(error)) {
      await CancellationScope.nonCancellable(() => slots.setRunStatus({ runId, status: 'cancelled', error: null }));
    }
    throw error;
  } finally {
    if (options.answer()?.answer !== 'skipped') {
      await CancellationScope.nonCancellable(async () => {
        try {
          await coordinator.signal(slotReleaseSignal, { runWorkflowId: workflowId });
        } catch {
          // The coordinator is gone: it holds no slot for anyone, so there is nothing to release.
        }
      });
    }
  }
}

export interface ConcurrencyCoordinatorInput {
  activityId: string;
  /** The key's value (`''`: the activity-wide key). */
  key: string;
  state: SlotState;
}

/** The patch that bounds a coordinator's queue (DEFAULT_MAX_QUEUE_BYTES). */
const QUEUE_BOUND_PATCH = 'concurrency-queue-bound';

/** How often the watchdog asks Temporal whether the holders are still open. */
const WATCHDOG_INTERVAL_MS = 10_000;
/** An idle coordinator (no holder, no queue) ends after this long without a request. */
const IDLE_EXIT_MS = 60_000;
/** History length at which the coordinator continues as new, carrying its state. */
const MAX_HISTORY_EVENTS = 5_000;

const watchdog = proxyActivities<Effects>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
});

/**
 * Hands out the slots of one (activity, key): `concurrency-{activity_id}[:{key hash}]`.
 * Requests and releases arrive as signals; answers go out as signals to the
 * runs, in FIFO order. A grant that cannot be delivered (the run was
 * terminated while it waited) frees the slot for the next run; a holder that
 * closed without releasing (terminated from the Temporal UI) is found by the
 * watchdog within WATCHDOG_INTERVAL_MS and its slot freed.
 */
export async function ConcurrencyCoordinatorWorkflow(input: ConcurrencyCoordinatorInput): Promise<void> {
  const state = input.state;
  const outbox: SlotEffect[] = [];
  // Coordinators recorded before the queue had a bound replay without it.
  const rules = { boundQueue: patched(QUEUE_BOUND_PATCH) };
  setHandler(slotRequestSignal, (request) => void outbox.push(...requestSlot(state, request, rules)));
  setHandler(slotReleaseSignal, ({ runWorkflowId }) => void outbox.push(...releaseSlot(state, runWorkflowId)));
  let nextCheck = Date.now() + WATCHDOG_INTERVAL_MS;
  for (;;) {
    if (outbox.length > 0) {
      const batch = outbox.splice(0);
      // Overlap coordinators answer on their own signal, concurrency coordinators on slotAnswerSignal.
      const answerSignal = state.overlap === undefined ? slotAnswerSignal : overlapSlotAnswerSignal;
      const delivered = await Promise.allSettled(
        batch.map((answer) =>
          answer.answer === 'cancel'
            ? watchdog.cancelOverlappedRun({ workflowId: answer.runWorkflowId, by: answer.by })
            : getExternalWorkflowHandle(answer.runWorkflowId).signal(answerSignal, answer),
        ),
      );
      delivered.forEach((result, index) => {
        const answer = batch[index]!;
        if (result.status === 'rejected' && answer.answer === 'granted')
          outbox.push(...releaseSlot(state, answer.runWorkflowId));
      });
      continue;
    }
    if (isIdle(state)) {
      if (await condition(() => outbox.length > 0 || !isIdle(state), IDLE_EXIT_MS)) continue;
      return;
    }
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > MAX_HISTORY_EVENTS) {
      await continueAsNew<typeof ConcurrencyCoordinatorWorkflow>({ ...input, state });
    }
    const wait = nextCheck - Date.now();
    if (wait > 0 && (await condition(() => outbox.length > 0, wait))) continue;
    nextCheck = Date.now() + WATCHDOG_INTERVAL_MS;
    const closed = await watchdog.closedWorkflows({ workflowIds: [...state.holders] });
    for (const workflowId of closed) outbox.push(...releaseSlot(state, workflowId));
  }
}
