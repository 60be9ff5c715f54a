import { describe, expect, test } from 'vitest';
import { classifyFailure, createAvailabilityGate, createDependencyMonitor } from './availability-gate';

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

describe('classifyFailure', () => {
  test('names a refused or dropped connection unreachable, without looking at who refused it', () => {
    expect(
      classifyFailure(Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), { code: 'ECONNREFUSED' })),
    ).toBe('unreachable');
    expect(
      classifyFailure(
        Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      ),
    ).toBe('unreachable');
    expect(classifyFailure(new Error('Query failed', { cause: new Error('Connection terminated unexpectedly') }))).toBe(
      'unreachable',
    );
    expect(classifyFailure(Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }))).toBe(
      'unreachable',
    );
  });

  test('names a deadline a timeout and anything else a plain error', () => {
    expect(classifyFailure(Object.assign(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'), { code: 4 }))).toBe(
      'timeout',
    );
    expect(classifyFailure(new Error('timeout exceeded when trying to connect'))).toBe('timeout');
    expect(
      classifyFailure(Object.assign(new Error('password authentication failed for user "app"'), { code: '28P01' })),
    ).toBe('error');
    expect(classifyFailure('not even an error')).toBe('error');
  });
});

describe('createDependencyMonitor', () => {
  const recordingLogger = () => {
    const lines: { level: string; obj: object; message: string | undefined }[] = [];
    return {
      lines,
      info: (obj: object, message?: string) => void lines.push({ level: 'info', obj, message }),
      warn: (obj: object, message?: string) => void lines.push({ level: 'warn', obj, message }),
    };
  };

  test('logs a lost dependency once and its return once, and answers only coarse verdicts', async () => {
    let up = true;
    const logger = recordingLogger();
    const changes: string[] = [];
    const monitor = createDependencyMonitor({
      logger,
      intervalMs: 0,
      onChange: (name, isUp) => changes.push(`${name}:${isUp ? 'up' : 'down'}`),
      checks: [
        {
          name: 'postgres',
          check: async () => {
            if (!up)
              throw Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432 (user app)'), { code: 'ECONNREFUSED' });
          },
        },
      ],
    });
    expect(await monitor.checkNow()).toEqual({ postgres: { status: 'ok' } });
    up = false;
    expect(await monitor.checkNow()).toEqual({ postgres: { status: 'failing', reason: 'unreachable' } });
    await monitor.checkNow();
    expect(monitor.isUp('postgres')).toBe(false);
    up = true;
    await monitor.checkNow();
    await monitor.checkNow();

    expect(changes).toEqual(['postgres:up', 'postgres:down', 'postgres:up']);
    expect(logger.lines.map((line) => `${line.level} ${line.message}`)).toEqual([
      'warn postgres lost: unreachable from this process',
      'info postgres regained',
    ]);
    // The detail is in the log, for the operator.
    expect(logger.lines[0]?.obj).toMatchObject({ dependency: 'postgres', reason: 'unreachable' });
    expect(logger.lines[1]?.obj).toHaveProperty('downForMs');
  });

  test('a check that hangs fails as a timeout instead of holding the caller', async () => {
    const monitor = createDependencyMonitor({
      logger: recordingLogger(),
      intervalMs: 0,
      timeoutMs: 50,
      checks: [{ name: 'temporal', check: () => new Promise(() => undefined) }],
    });
    expect(await monitor.checkNow()).toEqual({ temporal: { status: 'failing', reason: 'timeout' } });
    await expect(monitor.probes()[0]!.check()).rejects.toThrow(/did not answer within 50 ms/);
  });
});
