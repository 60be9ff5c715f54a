import { listSchedules } from '@activity-core/schedule-manager';
import { Client, Connection } from '@temporalio/client';
import { expect, inject, test } from 'vitest';
import { deleteSchedulesOf, startStack } from './harness';
import { registerActivity } from './schedule-helpers';

/**
 * The schedules on the shared dev server that start runs on `taskQueue`, observed through Temporal's listing
 * (the tolerant one: other files' memos may be encrypted with keys this client does not have).
 */
async function schedulesOf(client: Client, taskQueue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const summary of listSchedules(client, 100))
    if (summary.memo?.taskQueue === taskQueue) ids.push(summary.scheduleId);
  return ids;
}

test('a closed test stack leaves no schedule of its task queue firing on the shared Temporal dev server', async () => {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  const stack = await startStack({ worker: false });
  const taskQueue = stack.config.temporal.taskQueue;
  try {
    await registerActivity(stack, {
      name: 'left-running',
      triggers: [{ type: 'cron', cron: '*/5 * * * * *' }],
      tasks: [{ type: 'noop' }],
    });
    // Registered straight into Temporal; the listing is eventually consistent.
    await expect.poll(() => schedulesOf(client, taskQueue), { timeout: 30_000, interval: 500 }).toHaveLength(1);
    const [scheduleId] = await schedulesOf(client, taskQueue);
    await stack.close();
    // Asked directly, not through the listing, which lags a deletion.
    await expect(client.schedule.getHandle(scheduleId!).describe()).rejects.toThrow(/not found/i);
  } finally {
    await deleteSchedulesOf(client, taskQueue);
    await connection.close();
  }
});
