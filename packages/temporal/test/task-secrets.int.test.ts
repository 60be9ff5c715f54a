import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor, taskWorkflowId } from '@activity-core/contracts';
import { startHttpTarget } from '../../../test/http-target';
import { startStack, type TestStack } from '../../../test/harness';

// Distinctive values, so finding one anywhere is never a coincidence.
const VENDOR_TOKEN = `sk_live_${randomBytes(12).toString('hex')}`;
const PATH_TOKEN = `pt${randomBytes(8).toString('hex')}`;

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;

beforeAll(async () => {
  [stack, target] = await Promise.all([
    startStack({ env: { TASK_SECRET_VENDOR_TOKEN: VENDOR_TOKEN, TASK_SECRET_PATH_TOKEN: PATH_TOKEN } }),
    // Echoes what it was sent, as error pages and debugging endpoints do.
    startHttpTarget((request) => ({
      status: request.url.startsWith('/gone') ? 404 : 200,
      body: { url: request.url, authorization: request.headers.authorization ?? null, body: request.body },
    })),
  ]);
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

async function register(
  name: string,
  tasks: object[],
): Promise<{ activityId: string; workflowId: string; runId: string }> {
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: { name, triggers: [{ type: 'event', event_type: `${name}.go` }], tasks },
  });
  expect(created.statusCode, created.body).toBe(201);
  const activityId = created.json().id as string;
  const eventId = `evt_${name}`;
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: `${name}.go`,
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    },
  });
  expect(posted.statusCode, posted.body).toBeLessThan(300);
  const workflowId = eventRunWorkflowId(activityId, eventId);
  return { activityId, workflowId, runId: runIdFor(workflowId) };
}

/**
 * Every string in a workflow history, payloads decoded: payload data is bytes
 * (JSON as UTF-8), which a plain JSON.stringify would show as numbers or
 * base64 and so never match a secret.
 */
async function historyText(workflowId: string): Promise<string> {
  const parts: string[] = [];
  const walk = (value: unknown): void => {
    if (value instanceof Uint8Array) parts.push(Buffer.from(value).toString('utf8'));
    else if (typeof value === 'string') parts.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object')
      for (const key of Object.keys(value)) walk((value as Record<string, unknown>)[key]);
  };
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  walk(history);
  return `${JSON.stringify(history)}\n${parts.join('\n')}`;
}

/** The run's rows in activity_runs and task_instances, as text. */
async function recordsText(runId: string): Promise<string> {
  const runs = await stack.sql.query('SELECT to_jsonb(r)::text AS row FROM activity_runs r WHERE run_id = $1', [runId]);
  const tasks = await stack.sql.query(
    'SELECT to_jsonb(t)::text AS row FROM task_instances t WHERE run_id = $1 ORDER BY task_index',
    [runId],
  );
  expect(runs.rows).toHaveLength(1);
  return [...runs.rows, ...tasks.rows].map((r: { row: string }) => r.row).join('\n');
}

function expectNoSecret(text: string, where: string): void {
  expect(text.includes(VENDOR_TOKEN), `${where} contains VENDOR_TOKEN`).toBe(false);
  expect(text.includes(PATH_TOKEN), `${where} contains PATH_TOKEN`).toBe(false);
}

async function getRun(runId: string) {
  return (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json();
}

describe('task secrets', () => {
  test('an http task sends the worker secrets, while the definition, histories and records hold only the placeholders', async () => {
    const { activityId, workflowId, runId } = await register('secret-send', [
      {
        type: 'http',
        config: {
          url: `${target.url}/ok/{{secrets.PATH_TOKEN}}/orders`,
          headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' },
          body: { token: '{{ secrets.VENDOR_TOKEN }}' },
        },
      },
      // A later task reads the earlier result through the run context, which never held a secret.
      { type: 'http', config: { url: `${target.url}/ok/next`, body: { previous: '{{tasks.0.result.body}}' } } },
    ]);
    await stack.client.workflow.getHandle(workflowId).result();

    const sent = target.requests.find((r) => r.url.startsWith('/ok/pt'));
    expect(sent?.url).toBe(`/ok/${PATH_TOKEN}/orders`);
    expect(sent?.headers.authorization).toBe(`Bearer ${VENDOR_TOKEN}`);
    expect(JSON.parse(sent!.body)).toEqual({ token: VENDOR_TOKEN });

    const definition = await stack.api.server.inject({ method: 'GET', url: `/v1/activities/${activityId}` });
    expect(definition.json().definition.tasks[0].config).toMatchObject({
      url: `${target.url}/ok/{{secrets.PATH_TOKEN}}/orders`,
      headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' },
    });
    expectNoSecret(definition.body, 'GET /v1/activities/:id');

    // The target echoed both secrets back; what the task kept has them redacted.
    const run = await getRun(runId);
    expect(run.status).toBe('succeeded');
    expect(run.tasks[0].result.body).toEqual({
      url: '/ok/[secret:PATH_TOKEN]/orders',
      authorization: 'Bearer [secret:VENDOR_TOKEN]',
      body: '{"token":"[secret:VENDOR_TOKEN]"}',
    });
    expect(JSON.parse(target.requests.find((r) => r.url === '/ok/next')!.body).previous.authorization).toBe(
      'Bearer [secret:VENDOR_TOKEN]',
    );
    expectNoSecret(JSON.stringify(run), 'GET /v1/runs/:id');

    const runHistory = await historyText(workflowId);
    const taskHistory = await historyText(taskWorkflowId(runId, 'http', 0));
    // Payloads were decoded: the templates are there, so the values would be too.
    expect(taskHistory).toContain('Bearer {{secrets.VENDOR_TOKEN}}');
    expect(taskHistory).toContain('[secret:VENDOR_TOKEN]');
    expectNoSecret(runHistory, 'the run workflow history');
    expectNoSecret(taskHistory, 'the task workflow history');
    expectNoSecret(await historyText(taskWorkflowId(runId, 'http', 1)), 'the second task workflow history');
    expectNoSecret(await recordsText(runId), 'activity_runs / task_instances');
  });

  test('a target answering 404 fails the task with a message that shows the url with the secret redacted', async () => {
    const { workflowId, runId } = await register('secret-gone', [
      {
        type: 'http',
        config: {
          url: `${target.url}/gone/{{secrets.PATH_TOKEN}}`,
          headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' },
        },
      },
    ]);
    await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
    expect(target.requests.some((r) => r.url === `/gone/${PATH_TOKEN}`)).toBe(true);

    const run = await getRun(runId);
    expect(run.status).toBe('failed');
    expect(run.tasks[0]).toMatchObject({
      status: 'failed',
      error: { type: 'http_status_404', message: `POST ${target.url}/gone/[secret:PATH_TOKEN] answered 404` },
    });
    expect(run.error.message).toContain('[secret:PATH_TOKEN]');
    expectNoSecret(JSON.stringify(run), 'GET /v1/runs/:id');
    expectNoSecret(await historyText(workflowId), 'the run workflow history');
    expectNoSecret(await historyText(taskWorkflowId(runId, 'http', 0)), 'the task workflow history');
    expectNoSecret(await recordsText(runId), 'activity_runs / task_instances');
  });

  test('a secret the worker does not have fails the task at once with secret_missing, naming the variable to set', async () => {
    const { workflowId, runId } = await register('secret-missing', [
      {
        type: 'http',
        config: { url: `${target.url}/ok/missing`, headers: { Authorization: 'Bearer {{secrets.NOT_CONFIGURED}}' } },
        retry: { max_attempts: 5, initial_interval: '100ms' },
      },
    ]);
    await expect(stack.client.workflow.getHandle(workflowId).result()).rejects.toThrow();
    expect(target.requests.some((r) => r.url === '/ok/missing')).toBe(false);
    const run = await getRun(runId);
    expect(run.tasks[0]).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      error: { type: 'secret_missing', message: expect.stringContaining('TASK_SECRET_NOT_CONFIGURED') },
    });
  });

  test('registering a secret outside an http task, or with a malformed name, is a 400 naming the field', async () => {
    const inEvent = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'secret-emit',
        tasks: [
          { type: 'emit_event', config: { event_type: 'leak.attempt', data: { token: '{{secrets.VENDOR_TOKEN}}' } } },
        ],
      },
    });
    expect(inEvent.statusCode).toBe(400);
    expect(inEvent.headers['content-type']).toContain('application/problem+json');
    expect(inEvent.json().errors).toEqual([
      expect.objectContaining({ path: 'tasks[0].config.data.token', message: expect.stringContaining('http task') }),
    ]);

    const badName = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'secret-bad-name',
        tasks: [
          {
            type: 'http',
            config: { url: `${target.url}/ok`, headers: { Authorization: 'Bearer {{secrets.vendor-token}}' } },
          },
        ],
      },
    });
    expect(badName.statusCode).toBe(400);
    expect(badName.json().errors).toEqual([
      expect.objectContaining({
        path: 'tasks[0].config.headers.Authorization',
        message: expect.stringContaining('not a valid secret reference'),
      }),
    ]);
  });
});
