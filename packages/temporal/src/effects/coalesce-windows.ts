import { eventRunWorkflowId, runIdFor, type ActivityDefinition, type EventEnvelope } from '@activity-core/contracts';
import type { CoalesceWindowsRepository, DefinitionsRepository } from '@activity-core/db';
import type { RunStarter } from '../client/run-starter';

/** What one look at a debounce window answers its workflow. */
export type CoalesceWindowStep =
  { state: 'open'; dueInMs: number; members: number } | { state: 'closed'; runWorkflowId: string; members: number };

/**
 * The effect of a debounce window's workflow (docs/coalescing.md, ADR 0066):
 * closes the window when it is due (one transaction: members fixed, each
 * merged into the run of the last event) and starts that run with its
 * deterministic id. Idempotent: repeated after a crash, the window is found
 * closed, the start is answered "already started", and nothing is counted
 * twice.
 */
export interface CoalescingEffectDeps {
  coalesceWindows: Pick<CoalesceWindowsRepository, 'advance' | 'envelopeOf' | 'markStarted'>;
  definitions: Pick<DefinitionsRepository, 'getVersion'>;
  /** Starts the run a closed window became (REJECT_DUPLICATE). */
  runStarter: Pick<RunStarter, 'start'>;
}

export function createCoalesceWindowEffects(deps: CoalescingEffectDeps | undefined) {
  return {
    async advanceCoalesceWindow(input: { windowId: string }): Promise<CoalesceWindowStep> {
      if (deps === undefined)
        throw new Error('this worker was started without coalescing (debounce windows cannot be advanced)');
      const { coalesceWindows, definitions, runStarter } = deps;
      const step = await coalesceWindows.advance(input.windowId, (activityId, eventId) => {
        const workflowId = eventRunWorkflowId(activityId, eventId);
        return { workflowId, runId: runIdFor(workflowId) };
      });
      const { window } = step;
      if (step.state === 'open') return { state: 'open', dueInMs: step.dueInMs, members: window.memberCount };
      const snapshot = await definitions.getVersion(window.activityId, window.lastActivityVersion);
      if (snapshot === undefined)
        throw new Error(`activity ${window.activityId} version ${window.lastActivityVersion} is missing`);
      const last = await coalesceWindows.envelopeOf(window.lastEventId);
      if (last === undefined) throw new Error(`event ${window.lastEventId} of window ${window.id} is missing`);
      const envelope = last.envelope as EventEnvelope;
      const outcome = await runStarter.start({
        workflowId: step.window.runWorkflowId,
        activity: {
          id: snapshot.id,
          name: snapshot.name,
          version: snapshot.version,
          definition: snapshot.definition as ActivityDefinition,
        },
        trigger: {
          type: 'event',
          event: envelope,
          ...(last.hops > 0 ? { hops: last.hops } : {}),
          coalesced: {
            kind: 'debounce',
            window_id: window.id,
            count: window.memberCount,
            first_event_id: window.firstEventId,
            last_event_id: window.lastEventId,
          },
        },
      });
      await coalesceWindows.markStarted(window, outcome);
      return { state: 'closed', runWorkflowId: step.window.runWorkflowId, members: window.memberCount };
    },
  };
}
