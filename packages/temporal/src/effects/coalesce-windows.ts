import {
  batchRunWorkflowId,
  eventRunWorkflowId,
  runIdFor,
  type ActivityDefinition,
  type EventEnvelope,
} from '@activity-core/contracts';
import type { CoalesceWindowsRepository, DefinitionsRepository } from '@activity-core/db';
import type { RunStarter, StartRunRequest } from '../client/run-starter';

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
  coalesceWindows: Pick<CoalesceWindowsRepository, 'advance' | 'envelopeOf' | 'batchEnvelopesOf' | 'markStarted'>;
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
      const step = await coalesceWindows.advance(input.windowId, (window) => {
        // A debounce window becomes the run of its last event; a batch, the run named after the batch (ids.ts).
        const workflowId =
          window.kind === 'batch'
            ? batchRunWorkflowId(window.activityId, window.id)
            : eventRunWorkflowId(window.activityId, window.lastEventId);
        return { workflowId, runId: runIdFor(workflowId) };
      });
      const { window } = step;
      if (step.state === 'open') return { state: 'open', dueInMs: step.dueInMs, members: window.memberCount };
      const snapshot = await definitions.getVersion(window.activityId, window.lastActivityVersion);
      if (snapshot === undefined)
        throw new Error(`activity ${window.activityId} version ${window.lastActivityVersion} is missing`);
      const coalesced = {
        kind: window.kind === 'batch' ? ('batch' as const) : ('debounce' as const),
        window_id: window.id,
        count: window.memberCount,
        first_event_id: window.firstEventId,
        last_event_id: window.lastEventId,
      };
      let trigger: Extract<StartRunRequest['trigger'], { type: 'event' }>;
      if (window.kind === 'batch') {
        // The run's input holds every member, in arrival order; `event` is the last (ADR 0070).
        const members = await coalesceWindows.batchEnvelopesOf(window.id);
        const events = members.envelopes as EventEnvelope[];
        if (events.length !== window.memberCount)
          throw new Error(`batch ${window.id} has ${events.length} stored members, its row says ${window.memberCount}`);
        trigger = {
          type: 'event',
          event: events[events.length - 1]!,
          ...(members.hops > 0 ? { hops: members.hops } : {}),
          coalesced,
          events,
        };
      } else {
        const last = await coalesceWindows.envelopeOf(window.lastEventId);
        if (last === undefined) throw new Error(`event ${window.lastEventId} of window ${window.id} is missing`);
        trigger = {
          type: 'event',
          event: last.envelope as EventEnvelope,
          ...(last.hops > 0 ? { hops: last.hops } : {}),
          coalesced,
        };
      }
      const outcome = await runStarter.start({
        workflowId: step.window.runWorkflowId,
        activity: {
          id: snapshot.id,
          name: snapshot.name,
          version: snapshot.version,
          definition: snapshot.definition as ActivityDefinition,
        },
        trigger,
      });
      await coalesceWindows.markStarted(window, outcome);
      return { state: 'closed', runWorkflowId: step.window.runWorkflowId, members: window.memberCount };
    },
  };
}
