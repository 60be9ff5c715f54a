import { describe, expect, test } from 'vitest';
import { createAvailabilityGate, isTemporalUnreachable, StartTimeoutError } from './availability-gate';

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

describe('the Temporal availability gate', () => {
  test('lets every caller through while Temporal answers', () => {
    const gate = createAvailabilityGate();
    expect(gate.tryEnter()).toEqual({ probe: false });
    expect(gate.tryEnter()).toEqual({ probe: false });
    expect(gate.healthy).toBe(true);
  });

  test('after an unreachable verdict callers skip until the retry window passes, then exactly one probes', () => {
    const time = clock();
    const gate = createAvailabilityGate({ initialRetryMs: 500, now: time.now });
    gate.unreachable(gate.tryEnter()!);
    expect(gate.healthy).toBe(false);
    expect(gate.tryEnter()).toBeUndefined();
    expect(gate.retryInMs()).toBe(500);
    time.advance(500);
    expect(gate.tryEnter()).toEqual({ probe: true });
    expect(gate.tryEnter()).toBeUndefined();
  });

  test('failed probes double the window up to the cap', () => {
    const time = clock();
    const gate = createAvailabilityGate({ initialRetryMs: 500, maxRetryMs: 3_000, now: time.now });
    gate.unreachable(gate.tryEnter()!);
    const windows: number[] = [];
    for (let i = 0; i < 5; i++) {
      time.advance(gate.retryInMs());
      gate.unreachable(gate.tryEnter()!);
      windows.push(gate.retryInMs());
    }
    expect(windows).toEqual([1_000, 2_000, 3_000, 3_000, 3_000]);
  });

  test('a successful probe closes the gate for everyone', () => {
    const time = clock();
    const gate = createAvailabilityGate({ now: time.now });
    gate.unreachable(gate.tryEnter()!);
    time.advance(gate.retryInMs());
    gate.reachable(gate.tryEnter()!);
    expect(gate.healthy).toBe(true);
    expect(gate.tryEnter()).toEqual({ probe: false });
  });

  test('calls that were in flight when Temporal went away do not stretch the window', () => {
    const time = clock();
    const gate = createAvailabilityGate({ initialRetryMs: 500, now: time.now });
    const inFlight = [gate.tryEnter()!, gate.tryEnter()!, gate.tryEnter()!];
    for (const pass of inFlight) gate.unreachable(pass);
    expect(gate.retryInMs()).toBe(500);
  });
});

describe('telling "unreachable" from "refused"', () => {
  test('deadline exceeded and unavailable, also as a cause, mean unreachable', () => {
    expect(isTemporalUnreachable(Object.assign(new Error('x'), { code: 14 }))).toBe(true);
    expect(isTemporalUnreachable(new Error('Failed to start Workflow', { cause: Object.assign(new Error('DEADLINE_EXCEEDED'), { code: 4 }) }))).toBe(true);
    expect(isTemporalUnreachable(new StartTimeoutError('timed out'))).toBe(true);
  });

  test('an invalid argument or an unknown error is a refusal', () => {
    expect(isTemporalUnreachable(Object.assign(new Error('bad id'), { code: 3 }))).toBe(false);
    expect(isTemporalUnreachable(new Error('boom'))).toBe(false);
    expect(isTemporalUnreachable(undefined)).toBe(false);
  });
});
