export { createDatabase, guardClient, type Database, type DatabaseOptions, type Db } from './client';
export {
  DatabaseUnreachableError,
  failedToConnect,
  isConnectionError,
  pgFaultOfCode,
  translatePgError,
  UniqueViolationError,
  UnstorableTextError,
  type PgFault,
} from './errors';
export { runMigrations, MIGRATIONS_FOLDER } from './migrate';
export { createStatementRunner, type StatementRunner } from './statements';
export { encodeCursor, decodeCursor, type Cursor } from './cursor';
export {
  createDefinitionsRepository,
  DefinitionIdTakenError,
  DefinitionNameTakenError,
  type ChangedBy,
  type DefinitionHistoryHead,
  type DefinitionRow,
  type DefinitionsRepository,
  type DefinitionVersionRow,
} from './repositories/definitions-repository';
export {
  createRunsRepository,
  type ErrorInfo,
  type NewRun,
  type RunRow,
  type RunRowWithDelay,
  type RunsRepository,
  type TaskInstanceRow,
  type TaskInstanceUpsert,
} from './repositories/runs-repository';
export {
  createRerunsRepository,
  type BulkRerunRow,
  type RerunPlan,
  type RerunRow,
  type RerunSelection,
  type RerunsRepository,
  type RerunWithStatus,
  type SelectionCursor,
} from './repositories/reruns-repository';
export {
  createCoalesceWindowsRepository,
  type AdvanceOutcome,
  type CoalesceWindowRow,
  type CoalesceWindowsRepository,
  type JoinOutcome,
} from './repositories/coalesce-windows-repository';
export {
  createEventsRepository,
  type AcceptResult,
  type EventRouteRow,
  type EventRow,
  type EventsRepository,
  type NewRoute,
  type RouteSettlement,
} from './repositories/events-repository';
export {
  createSchedulesRepository,
  type FireReason,
  type FireStatus,
  type NewScheduleFire,
  type NewScheduleState,
  type ScheduleFireRow,
  type ScheduleFireWithRun,
  type ScheduleQueries,
  type SchedulesRepository,
  type ScheduleStatePatch,
  type ScheduleStateRow,
} from './repositories/schedules-repository';
export {
  createCancellationsRepository,
  type CancelCandidate,
  type CancellationsRepository,
  type CancelScanDecision,
  type CancelCandidateCursor,
  type CancelScanRecord,
  type EventCancellationRow,
  type EventCancelScanRow,
} from './repositories/cancellations-repository';
export {
  createEventWaitsRepository,
  type EventWaitRow,
  type EventWaitScanRow,
  type EventWaitsRepository,
  type EventWaitStatus,
  type RegisterWaitInput,
  type WaitCandidate,
  type WaitScanDecision,
  type WaitState,
} from './repositories/event-waits-repository';
export {
  createRunOutcomesRepository,
  type RunOutcomeRecord,
  type RunOutcomesRepository,
} from './repositories/run-outcomes-repository';
export {
  createWebhookSourcesRepository,
  type WebhookSourceRow,
  type WebhookSourcesRepository,
} from './repositories/webhook-sources-repository';
export {
  createAuditRepository,
  type AuditQuery,
  type AuditRepository,
  type AuditRow,
  type NewAuditRow,
} from './repositories/audit-repository';
export {
  createEmitBudgetsRepository,
  type EmitBudgetsRepository,
  type EmitClaim,
  type EmitClaimResult,
  type EmitRoot,
} from './repositories/emit-budgets-repository';
export {
  createPacingRepository,
  type PacingBucketRequest,
  type PacingDecision,
  type PacingRepository,
  type PacingRequest,
} from './repositories/pacing-repository';
export {
  createReplaysRepository,
  type BulkReplayRow,
  type EventReplayRow,
  type ReplayCursor,
  type ReplayRoute,
  type ReplaySelection,
  type ReplaysRepository,
} from './repositories/replays-repository';
export {
  createHeldEventsRepository,
  type HeldEventRow,
  type HeldEventsRepository,
  type ReleaseOutcome,
} from './repositories/held-events-repository';
export {
  createDeadLettersRepository,
  type DeadLetterCursor,
  type DeadLetterFilter,
  type DeadLetterReopen,
  type DeadLetterRow,
  type DeadLettersRepository,
} from './repositories/dead-letters-repository';
