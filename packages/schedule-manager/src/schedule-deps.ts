/**
 * What every part of the schedule manager is built from, and the two lookups
 * they all share. No logic of its own.
 */
import { NotFoundError, type Logger } from '@activity-core/contracts';
import type { DefinitionRow, DefinitionsRepository, RunsRepository, SchedulesRepository } from '@activity-core/db';
import type { RunStarter } from '@activity-core/temporal/client';
import { ScheduleNotFoundError, type Client } from '@temporalio/client';

export interface ScheduleManagerDeps {
  client: Client;
  namespace: string;
  taskQueue: string;
  schedules: SchedulesRepository;
  definitions: Pick<DefinitionsRepository, 'get'>;
  runs: Pick<RunsRepository, 'getRunByWorkflowId'>;
  starter: RunStarter;
  logger: Logger;
  /** For links in schedule views. @default "http://127.0.0.1:8233" */
  temporalUiUrl?: string;
  /**
   * The clock of operator actions and views. @default () => new Date()
   * Fire decisions take Postgres' clock unless this is set (tests).
   */
  clock?: () => Date;
}

/** The live activity, or a 404 naming it. */
export async function requireActivity(
  definitions: ScheduleManagerDeps['definitions'],
  activityId: string,
): Promise<DefinitionRow> {
  const row = await definitions.get(activityId);
  if (row === undefined) throw new NotFoundError('activity', activityId);
  return row;
}

export function isScheduleNotFound(error: unknown): boolean {
  return error instanceof ScheduleNotFoundError;
}
