import type { Logger } from '@activity-core/contracts';
import type { RunsRepository } from '@activity-core/db';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

export interface RunOutcomeRecoveryOptions {
  client: Client;
  runs: Pick<RunsRepository, 'listRunningToCheck' | 'markChecked' | 'setRunStatus'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Runs younger than this are left alone (they record their own outcome). @default 60000 */
  minAgeMs?: number;
  /** A running run is re-confirmed at most this often. @default 300000 */
  recheckAfterMs?: number;
  /**
   * Announces a run recorded `failed` or `cancelled` here with its system event
   * (the worker's run-outcome announcer), as the run would have itself.
   */
  announcer?: { announce(runId: string): Promise<unknown> };
}

export type RecoveredOutcome = {
  runId: string;
  workflowId: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  reason: string;
};

/**
 * A run records its own outcome, except when it cannot: an operator
 * terminates it in the Temporal UI, it hits its run_timeout, or its history
 * is gone. Those rows would say `running` forever; this asks Temporal about
 * old `running` rows and writes down what really happened, and why.
 */
export function createRunOutcomeRecovery(options: RunOutcomeRecoveryOptions) {
  const minAgeMs = options.minAgeMs ?? 60_000;
  const recheckAfterMs = options.recheckAfterMs ?? 300_000;

  async function settle(
    runId: string,
    workflowId: string,
    status: RecoveredOutcome['status'],
    type: string,
    message: string,
  ): Promise<RecoveredOutcome> {
    await options.runs.setRunStatus(runId, status, status === 'succeeded' ? null : { message, type });
    options.logger.info({ runId, workflowId, status, type }, 'run outcome recorded from Temporal');
    if ((status === 'failed' || status === 'cancelled') && options.announcer !== undefined) {
      try {
        await options.announcer.announce(runId);
      } catch (error) {
        // The row is no longer `running`, so this run is not visited again: say so loudly.
        options.logger.warn(
          { err: error, runId, workflowId, status },
          'could not emit the system event announcing this run outcome',
        );
      }
    }
    return { runId, workflowId, status, reason: message };
  }

  return {
    async recoverOnce(limit = 100): Promise<RecoveredOutcome[]> {
      const now = Date.now();
      const candidates = await options.runs.listRunningToCheck(
        new Date(now - recheckAfterMs),
        new Date(now - minAgeMs),
        limit,
      );
      const settled: RecoveredOutcome[] = [];
      for (const run of candidates) {
        let status: string;
        try {
          status = (await options.client.workflow.getHandle(run.workflowId).describe()).status.name;
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) {
            settled.push(
              await settle(
                run.runId,
                run.workflowId,
                'failed',
                'workflow_not_found',
                'Temporal has no record of this run (deleted, or its history outlived namespace retention)',
              ),
            );
          } else {
            options.logger.warn({ err: error, runId: run.runId }, 'could not check run with Temporal; will retry');
          }
          continue;
        }
        switch (status) {
          case 'RUNNING':
          case 'CONTINUED_AS_NEW':
            await options.runs.markChecked(run.runId);
            break;
          case 'TERMINATED':
            settled.push(
              await settle(
                run.runId,
                run.workflowId,
                'cancelled',
                'terminated',
                'the run workflow was terminated in Temporal',
              ),
            );
            break;
          case 'TIMED_OUT':
            settled.push(
              await settle(run.runId, run.workflowId, 'failed', 'timed_out', 'the run exceeded its run_timeout'),
            );
            break;
          case 'CANCELLED':
            settled.push(
              await settle(run.runId, run.workflowId, 'cancelled', 'cancelled', 'the run workflow was cancelled'),
            );
            break;
          case 'FAILED':
            settled.push(
              await settle(
                run.runId,
                run.workflowId,
                'failed',
                'workflow_failed',
                'the run workflow failed before recording its outcome',
              ),
            );
            break;
          case 'COMPLETED':
            settled.push(await settle(run.runId, run.workflowId, 'succeeded', 'completed', 'completed'));
            break;
          default:
            await options.runs.markChecked(run.runId);
        }
      }
      return settled;
    },
  };
}

export type RunOutcomeRecovery = ReturnType<typeof createRunOutcomeRecovery>;
