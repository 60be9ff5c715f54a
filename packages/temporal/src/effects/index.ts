import type { Logger } from '@activity-core/contracts';
import type { DefinitionsRepository, EventWaitsRepository, RunsRepository } from '@activity-core/db';
import { createCoalesceWindowEffects, type CoalescingEffectDeps } from './coalesce-windows';
import type { Client } from '@temporalio/client';
import type { EgressPolicy } from './egress';
import { createCalledRunEffects } from './called-runs';
import { createConcurrencyEffects } from './slot-requests';
import { createEventWaitEffects } from './event-waits';
import { createHttpTaskEffects, type HttpFetch } from './http-task';
import { createRunRecordEffects } from './run-records';
import type { RunOutcomeAnnouncer } from './run-outcome-events';
import { createScheduleTickEffects, type ProcessScheduleTick } from './schedule-tick';
import { createTaskControlEffects, type EmitBudget, type EmitEvent } from './task-control';
import { createTaskExpressionEffects } from './task-expressions';
import type { TaskSecretSource } from './task-secrets';

export interface EffectDeps {
  runs: RunsRepository;
  client: Client;
  emitEvent: EmitEvent;
  /** Most emit_event steps between an emitted event and an external one (EMIT_MAX_HOPS). @default 8 */
  emitMaxHops?: number;
  /** Counts emitted events per root event (EMIT_MAX_PER_ROOT); absent: no breadth bound (unit tests only). */
  emitBudget?: EmitBudget;
  /** The byte bound of a concurrency queue (CONCURRENCY_QUEUE_MAX_BYTES); absent: the coordinator's default. */
  concurrencyQueueMaxBytes?: number;
  /** The schedule manager's tick processing (`@activity-core/schedule-manager`). */
  processScheduleTick: ProcessScheduleTick;
  /** Secrets `http` tasks may reference as `{{ secrets.NAME }}` (from `TASK_SECRET_<NAME>`). */
  secrets: TaskSecretSource;
  /** Where `http` tasks may connect (HTTP_TASK_EGRESS_ALLOW); default: no private, loopback or link-local address. */
  egress?: EgressPolicy;
  fetch?: HttpFetch;
  /** Announces runs that end failed or cancelled with a system event (absent: no system events). */
  announcer?: Pick<RunOutcomeAnnouncer, 'announce'>;
  /** The worker's log (an http task that got no answer is logged with its cause). */
  logger?: Pick<Logger, 'warn'>;
  /** Where `wait_for_event` tasks record their waits (absent: such a task fails, saying so). */
  eventWaits?: Pick<EventWaitsRepository, 'register' | 'close'>;
  /** Where `run_activity` tasks look up the activity they run (absent: such a task fails, saying so). */
  definitions?: Pick<DefinitionsRepository, 'findByName' | 'get'>;
  /** Debounce windows (docs/coalescing.md); absent: a window's workflow fails its step, saying so. */
  coalescing?: CoalescingEffectDeps;
  /** Counts the runs `run_activity` tasks start per root run (MAX_CALLS_PER_ROOT); absent: no breadth bound (unit tests only). */
  callBudget?: Pick<EmitBudget, 'claim'>;
}

/** Every activity the worker registers, built from its dependencies. */
export function createEffects(deps: EffectDeps) {
  return {
    ...createRunRecordEffects(deps),
    ...createHttpTaskEffects(deps),
    ...createTaskControlEffects(deps),
    ...createScheduleTickEffects(deps),
    ...createConcurrencyEffects(deps),
    ...createEventWaitEffects(deps),
    ...createTaskExpressionEffects(),
    ...createCalledRunEffects(deps),
    ...createCoalesceWindowEffects(deps.coalescing),
  };
}

export type Effects = ReturnType<typeof createEffects>;
export {
  ATTEMPT_ID_HEADER,
  HTTP_TASK_RESULT_BODY_MAX_BYTES,
  IDEMPOTENCY_KEY_HEADER,
  RUN_ID_HEADER,
  type HttpFetch,
  type HttpTaskInput,
  type HttpTaskResult,
} from './http-task';
export { EgressDeniedError, EgressPolicy, parseEgressAllowEntry } from './egress';
export type { LogRunInput, RecordTaskInput } from './run-records';
export { EMIT_BUDGET_EXCEEDED, type EmitBudget, type EmitEvent } from './task-control';
export type { EventWaitAnswer, RegisterEventWaitInput } from './event-waits';
export type { EvaluateTaskExpressionInput } from './task-expressions';
export type { PrepareCalledRunInput, PreparedCalledRun } from './called-runs';
export type { CoalesceWindowStep, CoalescingEffectDeps } from './coalesce-windows';
export type {
  RequestConcurrencySlotInput,
  RequestConcurrencySlotResult,
  RequestOverlapSlotInput,
} from './slot-requests';
export {
  createRunOutcomeAnnouncer,
  runOutcomeEvent,
  SYSTEM_EVENT_MESSAGE_MAX,
  type EmitSystemEvent,
  type RunOutcomeAnnouncement,
  type RunOutcomeAnnouncer,
  type RunOutcomeSkipReason,
} from './run-outcome-events';
export type {
  ProcessScheduleTick,
  ProcessScheduleTickInput,
  ProcessScheduleTickResult,
  ScheduleTickInput,
} from './schedule-tick';
