import { describe, expect, test } from 'vitest';
import { createAvailabilityGate } from './availability-gate';
import { deliverPending } from './gated-delivery';

const quietLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const unreachable = () => Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });
const messages = { deferred: 'deferred', notCalled: 'not called', notSettled: 'not settled' };

function deliver(
  rows: string[],
  steps: {
    prepare?: (row: string) => Promise<string | undefined>;
    call?: (row: string) => Promise<string>;
  },
  gate = createAvailabilityGate(),
) {
  const calls: string[] = [];
  const settled: Array<[string, string]> = [];
  const failure = deliverPending({
    rows,
    gate,
    timeouts: { timeoutMs: 1_000, probeTimeoutMs: 500 },
    ...(steps.prepare === undefined ? {} : { prepare: steps.prepare }),
    call: async (row) => {
      calls.push(row);
      return (await steps.call?.(row)) ?? `done ${row}`;
    },
    settle: async (row, outcome) => void settled.push([row, outcome]),
    logger: quietLogger,
    logFields: (row) => ({ row }),
    messages,
    failure: undefined,
  });
  return { failure, calls, settled, gate };
}

describe('delivering pending rows through the availability gate', () => {
  test('each row is prepared, asked about and settled in turn', async () => {
    const run = deliver(['a', 'b'], { prepare: async (row) => row.toUpperCase() });
    expect(await run.failure).toBeUndefined();
    expect(run.calls).toEqual(['A', 'B']);
    expect(run.settled).toEqual([
      ['A', 'done A'],
      ['B', 'done B'],
    ]);
  });

  test('a row its preparation settles is not asked about', async () => {
    const run = deliver(['a', 'b'], { prepare: async (row) => (row === 'a' ? undefined : row) });
    expect(await run.failure).toBeUndefined();
    expect(run.calls).toEqual(['b']);
  });

  test('a failed preparation leaves its row pending, teaches the gate nothing and does not stop the next row', async () => {
    const run = deliver(['a', 'b'], {
      prepare: async (row) => {
        if (row === 'a') throw new Error('definition missing');
        return row;
      },
    });
    expect(await run.failure).toEqual({ message: 'definition missing', unreachable: false });
    expect(run.calls).toEqual(['b']);
    expect(run.gate.healthy).toBe(true);
  });

  test('an unreachable Temporal closes the gate and the rows after it are deferred without a call', async () => {
    const run = deliver(['a', 'b'], {
      call: async () => {
        throw unreachable();
      },
    });
    expect(await run.failure).toEqual({ message: '14 UNAVAILABLE: No connection established', unreachable: true });
    expect(run.calls).toEqual(['a']);
    expect(run.gate.healthy).toBe(false);
  });
});
