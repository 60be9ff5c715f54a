import type { RunsRepository } from '@activity-core/db';
import type { Client } from '@temporalio/client';
import { createHttpTaskActivities } from './http-task';
import { createRunRecordActivities } from './run-records';
import { createScheduleTickActivities, type ProcessScheduleTick } from './schedule-tick';
import { createTaskControlActivities, type EmitEvent } from './task-control';
import type { TaskSecretSource } from './task-secrets';

export interface ActivityDeps {
  runs: RunsRepository;
  client: Client;
  emitEvent: EmitEvent;
  /** The schedule manager's tick processing (`@activity-core/schedule-manager`). */
  processScheduleTick: ProcessScheduleTick;
  /** Secrets `http` tasks may reference as `{{ secrets.NAME }}` (from `TASK_SECRET_<NAME>`). */
  secrets: TaskSecretSource;
  fetch?: typeof fetch;
}

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createRunRecordActivities(deps),
    ...createHttpTaskActivities(deps),
    ...createTaskControlActivities(deps),
    ...createScheduleTickActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export { ATTEMPT_ID_HEADER, IDEMPOTENCY_KEY_HEADER, RUN_ID_HEADER, type HttpTaskInput, type HttpTaskResult } from './http-task';
export type { LogRunInput, RecordTaskInput } from './run-records';
export type { EmitEvent } from './task-control';
export type { ProcessScheduleTick, ProcessScheduleTickInput, ProcessScheduleTickResult, ScheduleTickInput } from './schedule-tick';
