import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createAvailabilityGate } from './availability-gate';
import { createDispatcher } from './dispatcher';

const unreachable = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

function recordingLogger() {
  const lines: string[] = [];
  const log = (level: string) => (_obj: object, message?: string) => void lines.push(`${level} ${message ?? ''}`);
  return { lines, debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

describe('the dispatcher while Postgres is unreachable', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  test('retries every interval (not five), logs the outage once and the recovery once', async () => {
    let down = true;
    let claims = 0;
    const logger = recordingLogger();
    const dispatcher = createDispatcher({
      intervalMs: 100,
      logger,
      events: {
        claimPending: async () => {
          claims += 1;
          if (down) throw unreachable();
          return [];
        },
        listRoutes: async () => [],
      },
      ingest: { gate: createAvailabilityGate(), dispatch: async () => new Map() },
    });
    dispatcher.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(claims).toBe(1);
    // Each failed round is retried one interval later.
    await vi.advanceTimersByTimeAsync(100);
    expect(claims).toBe(2);
    await vi.advanceTimersByTimeAsync(100);
    expect(claims).toBe(3);

    down = false;
    await vi.advanceTimersByTimeAsync(100);
    expect(claims).toBe(4);
    await dispatcher.stop();
    expect(logger.lines).toEqual([
      'warn dispatcher cannot reach Postgres; retrying every 100 ms',
      'info dispatcher reached Postgres again; draining pending routes',
    ]);
  });

  test('backs off to five intervals after a failure that is not about reaching Postgres', async () => {
    let claims = 0;
    const dispatcher = createDispatcher({
      intervalMs: 100,
      logger: recordingLogger(),
      events: {
        claimPending: async () => {
          claims += 1;
          throw new Error('column "hops" does not exist');
        },
        listRoutes: async () => [],
      },
      ingest: { gate: createAvailabilityGate(), dispatch: async () => new Map() },
    });
    dispatcher.start();
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(400);
    expect(claims).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(claims).toBe(2);
    await dispatcher.stop();
  });
});
