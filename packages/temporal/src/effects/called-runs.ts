import {
  calledRunWorkflowId,
  MAX_CALL_DEPTH,
  MAX_CALLS_PER_ROOT,
  type ActivitySnapshot,
  type RunContext,
} from '@activity-core/contracts';
import type { EmitBudget } from './task-control';
import type { DefinitionsRepository } from '@activity-core/db';
import { renderValue, TemplateError } from './templating';

/**
 * The budget source the called runs of one root run are counted under: empty,
 * which no event's source can be (a source is at least one character), so the
 * counter of a root run is never an event's emit budget.
 */
const CALL_BUDGET_SOURCE = '';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface PrepareCalledRunInput {
  /** The `run_activity` task's `activity`: a name or an id. */
  activity: string;
  /** The task's `input`, not yet rendered. */
  input: Record<string, unknown>;
  /** The calling run's context (templates read it; its chain bounds the call). */
  context: RunContext;
  /** The calling task, and its item in a `for_each`: they make the called run's id. */
  taskIndex: number;
  itemIndex?: number;
}

export type PreparedCalledRun =
  | { ok: true; activity: ActivitySnapshot; input: Record<string, unknown>; chain: string[]; rootRunId: string }
  | { ok: false; message: string };

/**
 * What a `run_activity` task starts: the called activity's current version
 * (looked up by name or id; it must exist and be enabled), the task's input
 * rendered over the calling run's context, and the chain of calling
 * activities. A call that would close a loop (the activity is already in the
 * chain) or go deeper than MAX_CALL_DEPTH is refused. Refusals are answers
 * (the task fails with the message), never retried; a database error is
 * thrown and retried.
 */
export function createCalledRunEffects(deps: {
  definitions?: Pick<DefinitionsRepository, 'findByName' | 'get'>;
  /** Counts called runs per root run (the emit budget's counter, under a source of its own); absent: unit tests only. */
  callBudget?: Pick<EmitBudget, 'claim'>;
}) {
  return {
    async prepareCalledRun(request: PrepareCalledRunInput): Promise<PreparedCalledRun> {
      if (deps.definitions === undefined)
        return { ok: false, message: 'this worker cannot run run_activity tasks (it has no definitions store)' };
      const row = UUID.test(request.activity)
        ? await deps.definitions.get(request.activity)
        : await deps.definitions.findByName(request.activity);
      if (row === undefined) return { ok: false, message: `no activity is named or has the id "${request.activity}"` };
      if (!row.enabled) return { ok: false, message: `activity ${row.name} is disabled` };
      const chain = [...(request.context.run.call_chain ?? []), request.context.activity.id];
      if (chain.includes(row.id))
        return {
          ok: false,
          message: `activity ${row.name} is already running in this chain of calls; running it again would loop`,
        };
      if (chain.length > MAX_CALL_DEPTH)
        return { ok: false, message: `this call would be ${chain.length} calls deep; the limit is ${MAX_CALL_DEPTH}` };
      // Breadth, as the depth above: every run the calls below one root run start is counted, once per
      // called run id (a retried task is not counted twice), in Postgres, exact across workers.
      const rootRunId = request.context.run.call_root_run_id ?? request.context.run.run_id;
      if (deps.callBudget !== undefined) {
        const claim = await deps.callBudget.claim({
          eventId: calledRunWorkflowId(row.id, request.context.run.run_id, request.taskIndex, request.itemIndex),
          trigger: { source: CALL_BUDGET_SOURCE, eventId: rootRunId },
          triggerEmitted: false,
          limit: MAX_CALLS_PER_ROOT,
        });
        if (!claim.granted)
          return {
            ok: false,
            message: `run ${rootRunId} and the runs it called have started ${claim.emitted} runs through run_activity; the limit is ${MAX_CALLS_PER_ROOT}`,
          };
      }
      let input: Record<string, unknown>;
      try {
        input = renderValue(request.input, request.context) as Record<string, unknown>;
      } catch (error) {
        if (error instanceof TemplateError) return { ok: false, message: error.message };
        throw error;
      }
      return {
        ok: true,
        activity: { id: row.id, name: row.name, version: row.version, definition: row.definition },
        input,
        chain,
        rootRunId,
      };
    },
  };
}
