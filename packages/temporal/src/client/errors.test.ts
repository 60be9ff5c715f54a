import { createServer } from 'node:net';
import {
  Client,
  Connection,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { describeTemporalError, isPermanentRefusal, isTemporalUnreachable, StartTimeoutError } from './errors';

/** A local port nothing listens on: every connect is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** The error `@grpc/grpc-js` rejects a call with (callErrorFromStatus), as the Temporal client receives it. */
function grpcError(code: number, name: string, details: string): Error {
  return Object.assign(new Error(`${code} ${name}: ${details}`), { code, details, metadata: {} });
}

/** How the Temporal client wraps it (WorkflowClient.rethrowGrpcError, ScheduleClient.rethrowGrpcError). */
const wrapped = (cause: Error, message = 'Failed to start Workflow'): ServiceError =>
  new ServiceError(message, { cause });

async function failureOf(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call succeeded');
}

describe('an unreachable Temporal, as the real client reports it', () => {
  let address: string;
  const connections: Connection[] = [];

  beforeAll(async () => {
    address = `127.0.0.1:${await closedPort()}`;
  });

  afterAll(async () => {
    await Promise.all(connections.map((connection) => connection.close()));
  });

  const startOn = (connection: Connection) => () =>
    new Client({ connection, namespace: 'default' }).workflow.start('RunActivityWorkflow', {
      workflowId: 'activity-x:evt_1',
      taskQueue: 'q',
      args: [],
    });

  test('a start refused at the socket, without the retry interceptor, fails as UNAVAILABLE inside a ServiceError and counts as unreachable', async () => {
    const connection = Connection.lazy({ address, interceptors: [] });
    connections.push(connection);
    const error = await failureOf(startOn(connection));
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).cause).toMatchObject({ code: 14 });
    expect(isTemporalUnreachable(error)).toBe(true);
  });

  test('a start retried against no server until its deadline fails as DEADLINE_EXCEEDED inside a ServiceError and counts as unreachable', async () => {
    const connection = Connection.lazy({ address });
    connections.push(connection);
    const client = new Client({ connection, namespace: 'default' });
    const error = await failureOf(() => client.withDeadline(Date.now() + 300, startOn(connection)));
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).cause).toMatchObject({ code: 4 });
    expect(isTemporalUnreachable(error)).toBe(true);
  });

  test('a connect that finds no server before its connect timeout counts as unreachable', async () => {
    const error = await failureOf(() => Connection.connect({ address, connectTimeout: 300 }));
    expect(isTemporalUnreachable(error)).toBe(true);
  });

  test('our own backstop timing out a start counts as unreachable', () => {
    expect(isTemporalUnreachable(new StartTimeoutError('starting the run workflow timed out after 5000 ms'))).toBe(
      true,
    );
  });
});

describe('the other verdicts', () => {
  test('Temporal shedding load (server RESOURCE_EXHAUSTED) counts as unreachable: the caller backs off as a whole', () => {
    expect(isTemporalUnreachable(wrapped(grpcError(8, 'RESOURCE_EXHAUSTED', 'namespace rate limit exceeded')))).toBe(
      true,
    );
  });

  test('the client refusing a message over its size limit (also RESOURCE_EXHAUSTED) is a refusal of that request', () => {
    expect(
      isTemporalUnreachable(
        wrapped(grpcError(8, 'RESOURCE_EXHAUSTED', 'Attempted to send message with a size larger than 4194304')),
      ),
    ).toBe(false);
    expect(
      isTemporalUnreachable(
        wrapped(grpcError(8, 'RESOURCE_EXHAUSTED', 'Received message larger than max (5000000 vs 4194304)')),
      ),
    ).toBe(false);
  });

  test('an invalid argument, a missing workflow or a duplicate start is a refusal', () => {
    expect(isTemporalUnreachable(wrapped(grpcError(3, 'INVALID_ARGUMENT', 'WorkflowId is not set on request.')))).toBe(
      false,
    );
    expect(isTemporalUnreachable(new WorkflowNotFoundError('workflow not found', 'activity-x:evt_1', undefined))).toBe(
      false,
    );
    expect(
      isTemporalUnreachable(
        new WorkflowExecutionAlreadyStartedError(
          'Workflow execution already started',
          'activity-x:evt_1',
          'RunActivityWorkflow',
        ),
      ),
    ).toBe(false);
  });

  test('this process cancelling its own call (CANCELLED) is not Temporal being unreachable', () => {
    expect(isTemporalUnreachable(wrapped(grpcError(1, 'CANCELLED', 'Cancelled on client')))).toBe(false);
  });

  test('the verdict is found up to five causes deep', () => {
    const unavailable = grpcError(14, 'UNAVAILABLE', 'Connection dropped');
    expect(
      isTemporalUnreachable(
        new Error('a', { cause: new Error('b', { cause: new Error('c', { cause: wrapped(unavailable) }) }) }),
      ),
    ).toBe(true);
    expect(
      isTemporalUnreachable(
        new Error('a', {
          cause: new Error('b', { cause: new Error('c', { cause: new Error('d', { cause: wrapped(unavailable) }) }) }),
        }),
      ),
    ).toBe(false);
  });

  test('a raw socket error is not a Temporal verdict: the gRPC client reports those as UNAVAILABLE, so a raw one came from elsewhere (Postgres)', () => {
    expect(
      isTemporalUnreachable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })),
    ).toBe(false);
  });

  test('an unknown error, or no error object at all, is not unreachable', () => {
    expect(isTemporalUnreachable(new Error('boom'))).toBe(false);
    expect(isTemporalUnreachable(undefined)).toBe(false);
    expect(isTemporalUnreachable('UNAVAILABLE')).toBe(false);
  });
});

describe('a permanent refusal', () => {
  test('an invalid argument (an input over the payload limit) is permanent, at any depth, and described with its cause', () => {
    const blob = grpcError(3, 'INVALID_ARGUMENT', 'Blob data size exceeds limit.');
    expect(isPermanentRefusal(blob)).toBe(true);
    expect(isPermanentRefusal(wrapped(blob))).toBe(true);
    expect(describeTemporalError(wrapped(blob))).toBe(
      'Failed to start Workflow: 3 INVALID_ARGUMENT: Blob data size exceeds limit.',
    );
  });

  test("the client's own message-size limit is permanent; the server shedding load is not", () => {
    expect(
      isPermanentRefusal(
        wrapped(grpcError(8, 'RESOURCE_EXHAUSTED', 'Attempted to send message with a size larger than 4194304')),
      ),
    ).toBe(true);
    expect(isPermanentRefusal(wrapped(grpcError(8, 'RESOURCE_EXHAUSTED', 'namespace rate limit exceeded')))).toBe(
      false,
    );
  });

  test('an unreachable Temporal, an internal error and our own timeout are not permanent', () => {
    expect(isPermanentRefusal(wrapped(grpcError(14, 'UNAVAILABLE', 'No connection established')))).toBe(false);
    expect(isPermanentRefusal(wrapped(grpcError(13, 'INTERNAL', 'persistence failure')))).toBe(false);
    expect(isPermanentRefusal(new StartTimeoutError('timed out'))).toBe(false);
    expect(isPermanentRefusal(new Error('plain'))).toBe(false);
  });
});
