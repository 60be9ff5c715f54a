import { describe, expect, test } from 'vitest';
import { UsageError } from '../context';
import { planRerun, type RerunOptions } from './rerun';

const RUN_ID = '0b8f2a52-5bfc-500d-b265-f0bb62f7b33a';
const options = (overrides: Partial<RerunOptions>): RerunOptions => ({
  args: [],
  from: undefined,
  to: undefined,
  rerunFrom: undefined,
  activity: undefined,
  status: undefined,
  trigger: undefined,
  idempotencyKey: undefined,
  bulk: undefined,
  dryRun: false,
  wait: false,
  output: undefined,
  ...overrides,
});

describe('rerun --priority', () => {
  test('one re-run and a bulk re-run take a priority from 1 to 5 and send it as a number', () => {
    expect(planRerun(options({ args: [RUN_ID], priority: '1' }), () => 'k')).toMatchObject({
      mode: 'one',
      priority: 1,
    });
    expect(
      planRerun(options({ from: '2026-11-03T00:00:00Z', to: '2026-11-04T00:00:00Z', priority: '5' }), () => 'k'),
    ).toMatchObject({ mode: 'bulk', priority: 5 });
  });

  test('without --priority the plan names none, so the server applies its default', () => {
    expect(planRerun(options({ args: [RUN_ID] }), () => 'k')).toMatchObject({ mode: 'one', priority: undefined });
  });

  test('a priority outside 1 to 5, or not a whole number, is a usage error naming the option', () => {
    for (const priority of ['0', '6', '2.5', 'high', '']) {
      expect(() => planRerun(options({ args: [RUN_ID], priority }))).toThrow(UsageError);
      expect(() => planRerun(options({ args: [RUN_ID], priority }))).toThrow(/--priority/);
    }
  });

  test('--bulk <id> shows progress and refuses a --priority', () => {
    expect(() => planRerun(options({ bulk: RUN_ID, priority: '2' }))).toThrow(/--priority/);
  });
});
