import type { Logger } from '@activity-core/contracts';
import type { CoalesceWindowsRepository } from '@activity-core/db';
import type { CoalesceStarter } from '@activity-core/temporal/client';

/** How long past its due time an open window waits before its workflow is looked at. @default 60000 */
export const WINDOW_REVIVAL_GRACE_MS = 60_000;

/**
 * Debounce windows and batches whose workflow ended without closing them
 * (an operator terminated it in the Temporal UI) would keep their events in
 * `coalescing` for ever. The dispatcher calls this once a minute: every
 * window still open `graceMs` past its due time gets its workflow started
 * again under the same id (`restart`: only when the last run did not
 * complete), which closes it once with all its members. A window whose
 * workflow is still running (no worker polls) is left alone.
 */
export function createWindowRevival(options: {
  windows: Pick<CoalesceWindowsRepository, 'overdueOpen'>;
  starter: Pick<CoalesceStarter, 'restart'>;
  logger: Logger;
  graceMs?: number;
  /** Windows looked at per call. @default 100 */
  limit?: number;
}) {
  const graceMs = options.graceMs ?? WINDOW_REVIVAL_GRACE_MS;
  const limit = options.limit ?? 100;
  return {
    /** Looks at the overdue windows once; answers how many workflows it started again. */
    async reviveOverdue(): Promise<number> {
      let revived = 0;
      for (const window of await options.windows.overdueOpen(graceMs, limit)) {
        const outcome = await options.starter.restart({
          workflowId: window.workflowId,
          windowId: window.id,
          activityId: window.activityId,
          activityName: window.activityName,
          key: window.key,
          kind: window.kind === 'batch' ? 'batch' : 'debounce',
        });
        if (outcome !== 'started') continue;
        revived++;
        options.logger.warn(
          { windowId: window.id, workflowId: window.workflowId, dueAt: window.dueAt.toISOString() },
          'the workflow of an overdue coalescing window had ended without closing it; started it again',
        );
      }
      return revived;
    },
  };
}

export type WindowRevival = ReturnType<typeof createWindowRevival>;
