import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import { COALESCE_WINDOW_WORKFLOW } from '../names';
import type { CoalesceWindowInput } from '../workflows/coalesce-window-workflow';

/** What starting a debounce window's workflow needs: its id (ids.ts), the window, and the key for the UI. */
export interface StartCoalesceWindowRequest extends CoalesceWindowInput {
  workflowId: string;
  /** The window's key, shown (cut to 100 characters) in the summary; `''` is the activity-wide key. */
  key: string;
}

/**
 * Starts the workflow that holds an open debounce window's timer
 * (docs/coalescing.md). A window's workflow id is its own (it names the
 * window), so a repeated start is answered `duplicate` and changes nothing.
 */
export function createCoalesceStarter(deps: { client: Client; taskQueue: string }) {
  return {
    async start(
      request: StartCoalesceWindowRequest,
      options: { deadline?: Date } = {},
    ): Promise<'started' | 'duplicate'> {
      const key = request.key === '' ? 'activity-wide key' : `key ${JSON.stringify(request.key.slice(0, 100))}`;
      const start = () =>
        deps.client.workflow.start(COALESCE_WINDOW_WORKFLOW, {
          workflowId: request.workflowId,
          taskQueue: deps.taskQueue,
          args: [{ windowId: request.windowId, activityId: request.activityId, activityName: request.activityName }],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          staticSummary: `${request.activityName} · debounce window (${key})`,
          staticDetails: `activity ${request.activityId} window ${request.windowId}`,
        });
      try {
        await (options.deadline === undefined ? start() : deps.client.withDeadline(options.deadline, start));
        return 'started';
      } catch (error) {
        if (error instanceof WorkflowExecutionAlreadyStartedError) return 'duplicate';
        throw error;
      }
    },
  };
}

export type CoalesceStarter = ReturnType<typeof createCoalesceStarter>;
