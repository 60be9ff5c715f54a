import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { createEncryptionCodec } from '@activity-core/temporal/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { startHttpTarget } from '../../../test/http-target';
import { AUTH, startStack, TEST_KEY, waitFor, workflowBundle, type TestStack } from '../../../test/harness';

/**
 * Payload encryption: with PAYLOAD_ENCRYPTION_KEYS set, what activity-core
 * hands Temporal (event data, the definition, task results) is ciphertext in
 * Temporal's histories; the API's codec endpoint decodes it for an operator.
 */
const key = randomBytes(32);
const KEYS = `k1:${key.toString('base64')}`;
const EVENT_SECRET = 'card-4242-event-marker';
const DEFINITION_SECRET = 'definition-marker-path';
const RESULT_SECRET = 'result-marker-from-target';

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  target = await startHttpTarget(() => ({ status: 200, body: { note: RESULT_SECRET } }));
  stack = await startStack({ env: { PAYLOAD_ENCRYPTION_KEYS: KEYS, API_KEYS: TEST_KEY } });
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

/** Every payload of a history, as raw bytes, concatenated: what Temporal's persistence holds. */
async function rawHistoryBytes(
  workflowId: string,
): Promise<{ bytes: Buffer; history: temporal.api.history.v1.IHistory }> {
  // The harness's client has no codec: it sees what Temporal stores.
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  return { bytes: Buffer.from(temporal.api.history.v1.History.encode(history).finish()), history };
}

describe('payload encryption', () => {
  let workflowId: string;

  test('a run with encryption on succeeds, and its history and its task histories hold no plaintext of the event, the definition or the results', async () => {
    const registered = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: AUTH,
      payload: {
        name: 'encrypted-activity',
        triggers: [{ type: 'event', event_type: 'card.charged' }],
        tasks: [
          { type: 'http', config: { url: `${target.url}/${DEFINITION_SECRET}/{{event.data.card}}`, method: 'POST' } },
          { type: 'noop' },
        ],
      },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const activityId = (registered.json() as { id: string }).id;

    const posted = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      headers: AUTH,
      payload: {
        event_id: 'evt_enc_1',
        event_type: 'card.charged',
        source: 'shop',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { card: EVENT_SECRET },
      },
    });
    expect(posted.statusCode, posted.body).toBe(202);
    workflowId = eventRunWorkflowId(activityId, 'evt_enc_1');
    const runId = runIdFor(workflowId);

    const run = await waitFor(
      'the encrypted run to succeed',
      async () => {
        const response = await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}`, headers: AUTH });
        const body = response.json() as { status?: string; tasks?: Array<{ status: string; result?: unknown }> };
        return body.status === 'succeeded' ? body : undefined;
      },
      60_000,
    );
    // Postgres keeps the readable record (it is ours); only Temporal's copy is sealed.
    expect(JSON.stringify(run.tasks)).toContain(RESULT_SECRET);
    expect(target.requests[0]?.url).toBe(`/${DEFINITION_SECRET}/${EVENT_SECRET}`);

    for (const id of [workflowId, taskWorkflowId(runId, 'http', 0), taskWorkflowId(runId, 'noop', 1)]) {
      const { bytes, history } = await rawHistoryBytes(id);
      expect(history.events?.length, id).toBeGreaterThan(0);
      for (const marker of [EVENT_SECRET, DEFINITION_SECRET, RESULT_SECRET]) {
        expect(bytes.includes(Buffer.from(marker)), `${marker} in ${id}`).toBe(false);
      }
      expect(bytes.includes(Buffer.from('binary/encrypted')), id).toBe(true);
    }
  });

  test('the codec endpoint decodes the history payloads for an operator with a management key, and answers CORS for the Temporal UI', async () => {
    const { history } = await rawHistoryBytes(workflowId);
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const sealed = started?.input?.payloads ?? [];
    expect(sealed.length).toBeGreaterThan(0);
    const body = {
      payloads: sealed.map((payload) => ({
        metadata: Object.fromEntries(
          Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        ),
        data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
      })),
    };

    const anonymous = await stack.api.server.inject({
      method: 'POST',
      url: '/codec/decode',
      payload: body,
      headers: { origin: 'http://localhost:8233' },
    });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['access-control-allow-origin']).toBe('http://localhost:8233');

    const decoded = await stack.api.server.inject({
      method: 'POST',
      url: '/codec/decode',
      payload: body,
      headers: { ...AUTH, origin: 'http://127.0.0.1:8233', 'x-namespace': 'default' },
    });
    expect(decoded.statusCode, decoded.body).toBe(200);
    expect(decoded.headers['access-control-allow-origin']).toBe('http://127.0.0.1:8233');
    expect(decoded.headers['access-control-allow-credentials']).toBe('true');
    const payloads = (decoded.json() as { payloads: Array<{ metadata: Record<string, string>; data: string }> })
      .payloads;
    const input = defaultPayloadConverter.fromPayload({
      metadata: Object.fromEntries(
        Object.entries(payloads[0]!.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
      ),
      data: Buffer.from(payloads[0]!.data, 'base64'),
    });
    expect(JSON.stringify(input)).toContain(EVENT_SECRET);

    const preflight = await stack.api.server.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: {
        origin: 'http://localhost:8233',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace,authorization',
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toMatch(/Authorization/);
    const foreign = await stack.api.server.inject({
      method: 'OPTIONS',
      url: '/codec/decode',
      headers: { origin: 'https://evil.example' },
    });
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();

    const garbage = await stack.api.server.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: AUTH,
      payload: {
        payloads: [
          {
            metadata: {
              encoding: Buffer.from('binary/encrypted').toString('base64'),
              'encryption-key-id': Buffer.from('k1').toString('base64'),
            },
            data: 'AAAA',
          },
        ],
      },
    });
    expect(garbage.statusCode).toBe(400);
    expect(garbage.headers['content-type']).toMatch(/problem\+json/);
    expect((garbage.json() as { errors: Array<{ path: string }> }).errors[0]?.path).toBe('payloads[0]');

    // Worst values: more payloads than one request may carry, and data that is not base64.
    const tooMany = await stack.api.server.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: AUTH,
      payload: { payloads: Array.from({ length: 1_001 }, () => ({ data: '' })) },
    });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.body).toMatch(/payloads/);
    const notBase64 = await stack.api.server.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: AUTH,
      payload: { payloads: [{ data: '../../etc/passwd' }] },
    });
    expect(notBase64.statusCode).toBe(400);
  });

  test('the encrypted histories replay on the workflow code with the codec on', async () => {
    const { history } = await rawHistoryBytes(workflowId);
    await expect(
      Worker.runReplayHistory(
        {
          workflowBundle: await workflowBundle(),
          dataConverter: { payloadCodecs: [createEncryptionCodec([{ id: 'k1', key }])] },
        },
        history,
        workflowId,
      ),
    ).resolves.toBeUndefined();
  });
});
