import { ActivityDefinition, MAX_CALL_DEPTH, type RunContext } from '@activity-core/contracts';
import type { DefinitionRow } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { createCalledRunEffects } from './called-runs';

const row = (id: string, name: string, enabled = true): DefinitionRow => ({
  id,
  name,
  version: 3,
  enabled,
  definition: ActivityDefinition.parse({ name, tasks: [{ type: 'noop' }] }),
  createdAt: new Date(0),
  updatedAt: new Date(0),
  deletedAt: null,
});
const CHILD = '00000000-0000-4000-8000-00000000000c';
const rows = [row(CHILD, 'child'), row('00000000-0000-4000-8000-00000000000d', 'off', false)];
const definitions = {
  findByName: async (name: string) => rows.find((candidate) => candidate.name === name),
  get: async (id: string) => rows.find((candidate) => candidate.id === id),
};
const context = (run: Partial<RunContext['run']> = {}): RunContext => ({
  run: { run_id: '11111111-1111-4111-8111-111111111111', workflow_id: 'w', trigger_type: 'event', ...run },
  activity: { id: '00000000-0000-4000-8000-00000000000a', name: 'caller', version: 1 },
  event: {
    event_id: 'e1',
    event_type: 'order.created',
    source: 'shop',
    occurred_at: '2026-01-01T00:00:00Z',
    data: { order: 7 },
  },
  tasks: [],
});

describe('preparing the run a run_activity task starts', () => {
  test('finds the activity by name or id, renders the input over the calling run, and extends the chain', async () => {
    const { prepareCalledRun } = createCalledRunEffects({ definitions });
    const prepared = await prepareCalledRun({
      activity: 'child',
      input: { order: '{{ event.data.order }}' },
      context: context(),
      taskIndex: 0,
    });
    expect(prepared).toMatchObject({
      ok: true,
      activity: { id: CHILD, name: 'child', version: 3 },
      input: { order: 7 },
      chain: ['00000000-0000-4000-8000-00000000000a'],
      rootRunId: '11111111-1111-4111-8111-111111111111',
    });
    expect((await prepareCalledRun({ activity: CHILD, input: {}, context: context(), taskIndex: 0 })).ok).toBe(true);
  });

  test('refuses an unknown or disabled activity, a loop and a chain past the depth limit, saying which', async () => {
    const { prepareCalledRun } = createCalledRunEffects({ definitions });
    const refusal = async (activity: string, ctx: RunContext) => {
      const prepared = await prepareCalledRun({ activity, input: {}, context: ctx, taskIndex: 0 });
      return prepared.ok ? 'granted' : prepared.message;
    };
    expect(await refusal('ghost', context())).toMatch(/no activity is named or has the id "ghost"/);
    expect(await refusal('off', context())).toMatch(/disabled/);
    expect(await refusal('child', context({ call_chain: [CHILD] }))).toMatch(/already running in this chain/);
    const deep = Array.from(
      { length: MAX_CALL_DEPTH },
      (_, i) => `00000000-0000-4000-8000-0000000001${String(i).padStart(2, '0')}`,
    );
    expect(await refusal('child', context({ call_chain: deep }))).toMatch(/the limit is 5/);
  });

  test('counts every called run against the outermost run, once per called run id, and refuses past the budget', async () => {
    const counted = new Map<string, Set<string>>();
    const limit = 2;
    const claim = async (input: { eventId: string; trigger: { source: string; eventId: string }; limit: number }) => {
      const ids = counted.get(input.trigger.eventId) ?? new Set<string>();
      counted.set(input.trigger.eventId, ids);
      if (!ids.has(input.eventId) && ids.size >= Math.min(limit, input.limit))
        return { granted: false, root: input.trigger, emitted: ids.size };
      ids.add(input.eventId);
      return { granted: true, root: input.trigger, emitted: ids.size };
    };
    const { prepareCalledRun } = createCalledRunEffects({ definitions, callBudget: { claim } });
    const root = '22222222-2222-4222-8222-222222222222';
    const nested = context({ call_root_run_id: root, call_chain: ['00000000-0000-4000-8000-0000000000ff'] });
    const call = (taskIndex: number) => prepareCalledRun({ activity: 'child', input: {}, context: nested, taskIndex });
    expect((await call(0)).ok).toBe(true);
    expect((await call(0)).ok).toBe(true); // a retried task: the same called run, not counted again
    expect((await call(1)).ok).toBe(true);
    const third = await call(2);
    expect(third.ok ? 'granted' : third.message).toMatch(
      new RegExp(`run ${root} and the runs it called have started 2 runs`),
    );
    expect([...counted.keys()]).toEqual([root]);
  });
});
