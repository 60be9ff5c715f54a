import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MissingSearchAttributesError } from '@activity-core/temporal/client';
import { createApiApp } from '../apps/api/src/app';
import { createWorkerApp } from '../apps/worker/src/worker-app';
import { createTestDatabase, silentLogger, testConfig } from './harness';
import { inject } from 'vitest';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let connection: Connection;
const bare = `bare-${Date.now()}`;

beforeAll(async () => {
  database = await createTestDatabase();
  connection = await Connection.connect({ address: inject('temporalAddress') });
  // A namespace created without activity-core's custom search attributes.
  await connection.workflowService.registerNamespace({
    namespace: bare,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  const client = new Client({ connection, namespace: bare });
  for (let i = 0; i < 50; i++) {
    try {
      await client.workflowService.describeNamespace({ namespace: bare });
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
});
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

describe('start-up checks', () => {
  test('the API refuses to start against a namespace missing the search attributes and names each one', async () => {
    const config = testConfig(database.url, { TEMPORAL_NAMESPACE: bare });
    const error = await createApiApp(config, { logger: false }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(MissingSearchAttributesError);
    const message = (error as Error).message;
    for (const name of ['ActivityId', 'ActivityName', 'TriggerType', 'ScheduledFor', 'EventId'])
      expect(message).toContain(name);
    expect(message).toContain(
      `temporal operator search-attribute create --namespace ${bare} --name ScheduledFor --type Datetime`,
    );
  });

  test('the worker refuses to start against it too', async () => {
    const config = testConfig(database.url, { TEMPORAL_NAMESPACE: bare });
    await expect(createWorkerApp(config, { logger: silentLogger, connectTimeoutMs: 5_000 })).rejects.toBeInstanceOf(
      MissingSearchAttributesError,
    );
  });
});
