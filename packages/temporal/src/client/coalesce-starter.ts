import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import { COALESCE_WINDOW_WAKE_SIGNAL, COALESCE_WINDOW_WORKFLOW } from '../names';
import type { CoalesceWindowInput } from '../workflows/coalesce-window-workflow';

/** What starting a debounce window's workflow needs: its id (ids.ts), the window, and the key for the UI. */
export interface StartCoalesceWindowRequest extends CoalesceWindowInput {
  workflowId: string;
  /** The window's key, shown (cut to 100 characters) in the summary; `''` is the activity-wide key. */
  key: string;
  /** For the summary. @default "debounce" */
  kind?: 'debounce' | 'batch';
}

/**
 * Starts the workflow that holds an open debounce window's timer
 * (docs/coalescing.md). A window's workflow id is its own (it names the
 * window), so a repeated start is answered `duplicate` and changes nothing.
 */
export function createCoalesceStarter(deps: { client: Client; taskQueue: string }) {
  const optionsOf = (request: StartCoalesceWindowRequest) => {
    const key = request.key === '' ? 'activity-wide key' : `key ${JSON.stringify(request.key.slice(0, 100))}`;
    const what = request.kind === 'batch' ? 'batch' : 'debounce window';
    return {
      workflowId: request.workflowId,
      taskQueue: deps.taskQueue,
      args: [{ windowId: request.windowId, activityId: request.activityId, activityName: request.activityName }] as [
        CoalesceWindowInput,
      ],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      staticSummary: `${request.activityName} · ${what} (${key})`,
      staticDetails: `activity ${request.activityId} window ${request.windowId}`,
    };
  };
  const answered = async (
    call: () => Promise<unknown>,
    deadline: Date | undefined,
  ): Promise<'started' | 'duplicate'> => {
    try {
      await (deadline === undefined ? call() : deps.client.withDeadline(deadline, call));
      return 'started';
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return 'duplicate';
      throw error;
    }
  };
  return {
    async start(
      request: StartCoalesceWindowRequest,
      options: { deadline?: Date } = {},
    ): Promise<'started' | 'duplicate'> {
      return await answered(
        () => deps.client.workflow.start(COALESCE_WINDOW_WORKFLOW, optionsOf(request)),
        options.deadline,
      );
    },

    /**
     * Starts a window's workflow again when its last run ended without
     * closing the window (terminated, timed out, failed): the same id, with
     * `ALLOW_DUPLICATE_FAILED_ONLY`, so a run that completed — it closed the
     * window — or one still running is answered `duplicate` and nothing
     * changes. The new run finds the window in Postgres and closes it once.
     */
    async restart(
      request: StartCoalesceWindowRequest,
      options: { deadline?: Date } = {},
    ): Promise<'started' | 'duplicate'> {
      return await answered(
        () =>
          deps.client.workflow.start(COALESCE_WINDOW_WORKFLOW, {
            ...optionsOf(request),
            workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
          }),
        options.deadline,
      );
    },

    /**
     * Makes a batch's workflow look at its window now (signal-with-start: it
     * is started if it is not running yet), after a transaction closed the
     * batch (`max_size`, byte cap). `duplicate`: the workflow had ended
     * already, so the run was started before.
     */
    async wake(
      request: StartCoalesceWindowRequest,
      options: { deadline?: Date } = {},
    ): Promise<'started' | 'duplicate'> {
      return await answered(
        () =>
          deps.client.workflow.signalWithStart(COALESCE_WINDOW_WORKFLOW, {
            ...optionsOf(request),
            signal: COALESCE_WINDOW_WAKE_SIGNAL,
            signalArgs: [],
          }),
        options.deadline,
      );
    },
  };
}

export type CoalesceStarter = ReturnType<typeof createCoalesceStarter>;
