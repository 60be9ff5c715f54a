import { MAX_CALL_DEPTH, type ActivitySnapshot, type RunContext } from '@activity-core/contracts';
import type { DefinitionsRepository } from '@activity-core/db';
import { renderValue, TemplateError } from './templating';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface PrepareCalledRunInput {
  /** The `run_activity` task's `activity`: a name or an id. */
  activity: string;
  /** The task's `input`, not yet rendered. */
  input: Record<string, unknown>;
  /** The calling run's context (templates read it; its chain bounds the call). */
  context: RunContext;
}

export type PreparedCalledRun =
  | { ok: true; activity: ActivitySnapshot; input: Record<string, unknown>; chain: string[] }
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
export function createCalledRunActivities(deps: { definitions?: Pick<DefinitionsRepository, 'findByName' | 'get'> }) {
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
      };
    },
  };
}
