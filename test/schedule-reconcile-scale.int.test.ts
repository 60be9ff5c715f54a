import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { listSchedules } from '@activity-core/schedule-manager';
import { startStack, waitFor, type TestStack } from './harness';

/** Cron activities registered; the on-demand reconcile describing every one of them did not fit its 10 s deadline. */
const COUNT = 1_000;
/** Registrations in flight at once (each is a Postgres transaction and a schedule created in Temporal). */
const SENDERS = 16;

let stack: TestStack;

beforeAll(async () => {
  // No worker: its sweep would reconcile the same schedules at start-up; nothing here fires (a yearly cron).
  stack = await startStack({ worker: false, env: { RATE_LIMIT_MAX: '0' } });
});
afterAll(async () => {
  await stack?.close();
});

describe('the on-demand reconcile at scale', () => {
  test(`with ${COUNT} cron activities, POST /v1/schedules/reconcile answers 200 within its deadline and changes nothing`, async () => {
    let next = 0;
    const register = async (): Promise<void> => {
      for (let n = next++; n < COUNT; n = next++) {
        const response = await stack.api.server.inject({
          method: 'POST',
          url: '/v1/activities',
          payload: {
            name: `reconcile-scale-${n}`,
            triggers: [{ type: 'cron', cron: `${n % 60} 3 1 1 *`, timezone: 'UTC' }],
            tasks: [{ type: 'noop' }],
          },
        });
        expect(response.statusCode, response.body).toBe(201);
      }
    };
    await Promise.all(Array.from({ length: SENDERS }, register));
    // Steady state: every schedule is in Temporal's listing (visibility trails the creates by a moment).
    await waitFor(
      `all ${COUNT} schedules listed`,
      async () => {
        let listed = 0;
        for await (const entry of listSchedules(stack.client, 1000))
          if (entry.memo?.taskQueue === stack.config.temporal.taskQueue) listed++;
        return listed >= COUNT ? listed : undefined;
      },
      120_000,
    );

    // The API's own deadline (10 s) is the bound: past it the answer would be 503.
    const response = await stack.api.server.inject({ method: 'POST', url: '/v1/schedules/reconcile' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ created: [], updated: [], deleted: [], unchanged: COUNT });
  }, 300_000);
});
