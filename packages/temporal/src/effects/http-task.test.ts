import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import type { HttpTaskConfig, RunContext } from '@activity-core/contracts';
import { ApplicationFailure, CancelledFailure, type Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, test } from 'vitest';
import { EgressPolicy } from './egress';
import {
  boundBody,
  createHttpTaskEffects,
  HTTP_TASK_RESULT_BODY_MAX_BYTES,
  HTTP_TASK_RESULT_BODY_MAX_DEPTH,
  type HttpTaskInput,
  type HttpTaskResult,
} from './http-task';

const secrets = new Map([
  ['VENDOR_TOKEN', 'sk_live_abc123'],
  ['PATH_TOKEN', 'pt-9f8e'],
]);

const context: RunContext = {
  run: { run_id: 'r-1', workflow_id: 'w-1', trigger_type: 'event' },
  activity: { id: 'a-1', name: 'a', version: 1 },
  tasks: [],
};

interface Sent {
  url: string;
  headers: Headers;
  body: string | undefined;
}

/** What the SDK logs about the activity (its failures included), as text. */
function recordingLogger(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const log = (level: string, message: string, meta?: Record<string, unknown>): void => {
    lines.push(`${level} ${message} ${inspect(meta, { depth: 10 })}`);
  };
  const at = (level: string) => (message: string, meta?: Record<string, unknown>) => log(level, message, meta);
  return {
    logger: { log, trace: at('TRACE'), debug: at('DEBUG'), info: at('INFO'), warn: at('WARN'), error: at('ERROR') },
    text: () => lines.join('\n'),
  };
}

/** An http task activity whose fetch answers with `answer` and records what it was sent and what was logged. */
function httpTaskAnswering(
  answer: { status: number; body: unknown },
  workerSecrets: ReadonlyMap<string, string> = secrets,
) {
  const sent: Sent[] = [];
  const logs = recordingLogger();
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push({ url, headers: init.headers as Headers, body: init.body as string | undefined });
    return new Response(JSON.stringify(answer.body), {
      status: answer.status,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof globalThis.fetch;
  const { httpTask } = createHttpTaskEffects({
    runs: { recordTaskAttempt: async () => undefined },
    secrets: workerSecrets,
    fetch,
  });
  const run = (config: Partial<HttpTaskConfig>, runContext: RunContext = context) => {
    const input: HttpTaskInput = {
      taskInstanceId: 't-1',
      taskWorkflowId: 'task-r-1:http:0',
      runId: 'r-1',
      config: { method: 'POST', headers: {}, timeout: '5s', url: 'https://vendor.test/hook', ...config },
      context: runContext,
    };
    return new MockActivityEnvironment(undefined, { logger: logs.logger }).run(httpTask, input);
  };
  return { run, sent, logged: logs.text };
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

describe('the http task with secrets', () => {
  test('the request carries the secret values in its url, headers and body', async () => {
    const { run, sent } = httpTaskAnswering({ status: 200, body: { ok: true } });
    await run({
      url: 'https://vendor.test/{{secrets.PATH_TOKEN}}/hook',
      headers: { Authorization: 'Bearer {{ secrets.VENDOR_TOKEN }}' },
      body: { key: '{{secrets.VENDOR_TOKEN}}' },
    });
    expect(sent[0]!.url).toBe('https://vendor.test/pt-9f8e/hook');
    expect(sent[0]!.headers.get('authorization')).toBe('Bearer sk_live_abc123');
    expect(JSON.parse(sent[0]!.body!)).toEqual({ key: 'sk_live_abc123' });
  });

  test('a response body echoing a secret is returned with the secret redacted', async () => {
    const { run } = httpTaskAnswering({ status: 200, body: { seen: 'Bearer sk_live_abc123', path: '/pt-9f8e/hook' } });
    const result = await run({
      url: 'https://vendor.test/{{secrets.PATH_TOKEN}}/hook',
      headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' },
    });
    expect(result).toEqual({
      status: 200,
      body: { seen: 'Bearer [secret:VENDOR_TOKEN]', path: '/[secret:PATH_TOKEN]/hook' },
    });
  });

  test('a failed request reports and logs a redacted url and body, and neither secret value', async () => {
    const { run, logged } = httpTaskAnswering({
      status: 404,
      body: { error: 'no route /pt-9f8e/hook for sk_live_abc123' },
    });
    const failure = await failureOf(
      run({
        url: 'https://vendor.test/{{secrets.PATH_TOKEN}}/hook',
        headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' },
      }),
    );
    expect(failure.type).toBe('http_status_404');
    expect(failure.message).toBe('POST https://vendor.test/[secret:PATH_TOKEN]/hook answered 404');
    const reported = JSON.stringify({ message: failure.message, details: failure.details, stack: failure.stack });
    expect(reported).not.toContain('pt-9f8e');
    expect(reported).not.toContain('sk_live_abc123');
    // The worker logs the failure: the log line must be as clean as the failure.
    expect(logged()).toContain('[secret:PATH_TOKEN]');
    expect(logged()).not.toContain('pt-9f8e');
    expect(logged()).not.toContain('sk_live_abc123');
  });

  test('a secret only used in a header is still redacted from what the target answers', async () => {
    const { run } = httpTaskAnswering({ status: 500, body: 'bad token sk_live_abc123' });
    const failure = await failureOf(run({ headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' } }));
    expect(JSON.stringify(failure.details)).toContain('[secret:VENDOR_TOKEN]');
    expect(JSON.stringify(failure.details)).not.toContain('sk_live_abc123');
  });

  test('a secret the worker does not have fails the task without retry as secret_missing, before any request', async () => {
    const { run, sent } = httpTaskAnswering({ status: 200, body: {} });
    const failure = await failureOf(run({ headers: { Authorization: 'Bearer {{secrets.OTHER_TOKEN}}' } }));
    expect(failure.type).toBe('secret_missing');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('TASK_SECRET_OTHER_TOKEN');
    expect(sent).toHaveLength(0);
  });

  test('a header value the request cannot carry fails without quoting the secret', async () => {
    const { run, sent } = httpTaskAnswering({ status: 200, body: {} }, new Map([['BAD', 'line\nbreak-sk']]));
    const failure = await failureOf(run({ headers: { 'X-Key': '{{secrets.BAD}}' } }));
    expect(failure.type).toBe('invalid_header');
    expect(failure.message).not.toContain('break-sk');
    expect(sent).toHaveLength(0);
  });
});

describe('the http task url', () => {
  const refund = 'https://erp.example/api/v1/orders/{{event.data.order_id}}/refund';
  const withOrder = (order_id: string): RunContext =>
    ({
      ...context,
      event: { event_id: 'e-1', event_type: 't', source: 's', occurred_at: '2026-01-01T00:00:00Z', data: { order_id } },
    }) as RunContext;

  test.each(['../../admin/users/7/delete?', '%2e%2e/%2e%2e/admin/users/7/delete?', '..\\..\\admin', '7?x=1&y=2#'])(
    'event data %j cannot move a secret-bearing request off its path',
    async (orderId) => {
      const { run, sent } = httpTaskAnswering({ status: 200, body: {} });
      await run({ url: refund, headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' } }, withOrder(orderId));
      const url = new URL(sent[0]!.url);
      expect(url.origin).toBe('https://erp.example');
      expect(url.pathname).toBe(`/api/v1/orders/${encodeURIComponent(orderId)}/refund`);
      expect(url.search).toBe('');
      expect(sent[0]!.headers.get('authorization')).toBe('Bearer sk_live_abc123');
    },
  );

  test('a value that would make a ".." segment fails the task without retry as template_error, before any request', async () => {
    const { run, sent } = httpTaskAnswering({ status: 200, body: {} });
    const failure = await failureOf(run({ url: refund }, withOrder('..')));
    expect(failure.type).toBe('template_error');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(refund);
    expect(sent).toHaveLength(0);
  });
});

/** A real HTTP server on 127.0.0.1 counting the requests it gets. */
async function loopbackServer(): Promise<{ port: number; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"internal":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('the http task egress policy (real requests)', () => {
  const runReal = (url: string, egress?: EgressPolicy) => {
    const { httpTask } = createHttpTaskEffects({
      runs: { recordTaskAttempt: async () => undefined },
      secrets,
      ...(egress === undefined ? {} : { egress }),
    });
    const input: HttpTaskInput = {
      taskInstanceId: 't-1',
      taskWorkflowId: 'task-r-1:http:0',
      runId: 'r-1',
      config: { method: 'GET', headers: {}, timeout: '5s', url },
      context,
    };
    return new MockActivityEnvironment().run(httpTask, input);
  };

  test('a loopback address, literal or behind a name, is denied by default without retry and never reached', async () => {
    const server = await loopbackServer();
    try {
      for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '0x7f000001']) {
        const failure = await failureOf(runReal(`http://${host}:${server.port}/internal`));
        expect(failure.type, host).toBe('egress_denied');
        expect(failure.nonRetryable, host).toBe(true);
        expect(failure.message, host).toMatch(/loopback address.*HTTP_TASK_EGRESS_ALLOW/);
      }
      expect(server.hits).toEqual([]);
    } finally {
      await server.close();
    }
  });

  test('the cloud metadata address is denied by default', async () => {
    const failure = await failureOf(runReal('http://169.254.169.254/latest/meta-data/'));
    expect(failure.type).toBe('egress_denied');
    expect(failure.message).toContain('169.254.169.254, a link-local address');
  });

  test('an allowed range is reached, by address and by name', async () => {
    const server = await loopbackServer();
    try {
      const allowing = new EgressPolicy(['127.0.0.0/8', '::1/128']);
      await expect(runReal(`http://127.0.0.1:${server.port}/a`, allowing)).resolves.toEqual({
        status: 200,
        body: { internal: true },
      });
      await expect(runReal(`http://localhost:${server.port}/b`, allowing)).resolves.toEqual({
        status: 200,
        body: { internal: true },
      });
      expect(server.hits).toEqual(['/a', '/b']);
    } finally {
      await server.close();
    }
  });
});

describe('the http task response budget', () => {
  const budget = HTTP_TASK_RESULT_BODY_MAX_BYTES;
  const stored = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

  test('a body within the budget is kept as it is', () => {
    expect(boundBody({ a: 1 }, false)).toEqual({ body: { a: 1 }, truncated: false });
  });

  test('a body that redaction grew past the budget is clipped to it, as text', async () => {
    // 40,000 bytes of a 1-character secret: each becomes `[secret:PIN]`, twelve times longer.
    const { run } = httpTaskAnswering({ status: 200, body: '7'.repeat(40_000) }, new Map([['PIN', '7']]));
    const result = (await run({ headers: { 'X-Pin': '{{secrets.PIN}}' } })) as HttpTaskResult;
    expect(result.truncated).toBe(true);
    expect(typeof result.body).toBe('string');
    expect(stored(result.body)).toBeLessThanOrEqual(budget);
    expect(stored(result)).toBeLessThanOrEqual(budget + 64);
    expect(result.body as string).toMatch(/^"?(\[secret:PIN\])+/);
  });

  test('JSON escaping cannot push a clipped body past the budget', () => {
    const { body, truncated } = boundBody('"\u0001'.repeat(40_000), true);
    expect(truncated).toBe(true);
    expect(stored(body)).toBeLessThanOrEqual(budget);
    expect(stored(body)).toBeGreaterThan(budget - 8);
  });

  test('a failed request carries a bounded body in its details too', async () => {
    const { run } = httpTaskAnswering({ status: 500, body: 'x'.repeat(200_000) });
    const failure = await failureOf(run({}));
    const details = failure.details?.[0] as { body: unknown; truncated?: boolean };
    expect(details.truncated).toBe(true);
    expect(stored(details.body)).toBeLessThanOrEqual(budget);
  });
});

/** An http task whose target answers `text` as is, with `contentType`. */
function httpTaskAnsweringText(
  text: string,
  contentType: string,
  workerSecrets: ReadonlyMap<string, string> = secrets,
) {
  const fetch = (async () =>
    new Response(text, { status: 200, headers: { 'content-type': contentType } })) as typeof globalThis.fetch;
  const { httpTask } = createHttpTaskEffects({
    runs: { recordTaskAttempt: async () => undefined },
    secrets: workerSecrets,
    fetch,
  });
  return (config: Partial<HttpTaskConfig>) =>
    new MockActivityEnvironment().run(httpTask, {
      taskInstanceId: 't-1',
      taskWorkflowId: 'task-r-1:http:0',
      runId: 'r-1',
      config: { method: 'POST', headers: {}, timeout: '5s', url: 'https://vendor.test/hook', ...config },
      context,
    } satisfies HttpTaskInput) as Promise<HttpTaskResult>;
}

describe('response bodies that are hostile in shape', () => {
  const deep = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`;

  test('a 10 KB JSON body nested 5,000 levels deep is kept as its text, not crashing the task', async () => {
    const result = await httpTaskAnsweringText(deep(5_000), 'application/json')({});
    expect(result).toEqual({ status: 200, body: deep(5_000) });
  });

  test('a deeply nested JSON body is kept as text when a secret is in use too, and is redacted', async () => {
    const body = `${'['.repeat(30_000)}"sk_live_abc123"${']'.repeat(30_000)}`;
    const result = await httpTaskAnsweringText(
      body,
      'application/json',
    )({ headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' } });
    expect(result.body).toBe(`${'['.repeat(30_000)}"[secret:VENDOR_TOKEN]"${']'.repeat(30_000)}`);
  });

  test('a JSON body as deep as the bound is still parsed', async () => {
    const result = await httpTaskAnsweringText(deep(HTTP_TASK_RESULT_BODY_MAX_DEPTH), 'application/json')({});
    expect(typeof result.body).not.toBe('string');
    const past = await httpTaskAnsweringText(deep(HTTP_TASK_RESULT_BODY_MAX_DEPTH + 1), 'application/json')({});
    expect(past.body).toBe(deep(HTTP_TASK_RESULT_BODY_MAX_DEPTH + 1));
  });

  test.each([
    ['as sent', 'sk_live_abc123', 'sk_live_abc123', 6],
    ['JSON-escaped', 'tok"en-secret-1', 'tok\\"en-secret-1', 4],
    ['percent-encoded', 'a b/c-secret', 'a%20b%2Fc-secret', 3],
  ])(
    'a secret echoed %s across the read limit leaves no prefix of itself in the result',
    async (_form, secret, echoed, before) => {
      // The cut at the read limit falls after the echo's first `before` characters.
      const text = `${'x'.repeat(HTTP_TASK_RESULT_BODY_MAX_BYTES - before)}${echoed}${'y'.repeat(1_000)}`;
      const result = await httpTaskAnsweringText(
        text,
        'text/plain',
        new Map([['S', secret]]),
      )({ headers: { 'X-S': '{{secrets.S}}' } });
      expect(result.truncated).toBe(true);
      expect(result.body).toBe('x'.repeat(HTTP_TASK_RESULT_BODY_MAX_BYTES - before));
    },
  );

  test('a secret with a non-ASCII character, cut inside that character at the read limit, leaves no prefix', async () => {
    const workerSecrets = new Map([['PASS', 'wörd-päss-1']]);
    // "wörd-p" is 7 bytes; the cut falls inside the 2-byte "ä" after it.
    const text = `${'x'.repeat(HTTP_TASK_RESULT_BODY_MAX_BYTES - 8)}wörd-päss-1 tail`;
    const result = await httpTaskAnsweringText(
      text,
      'text/plain',
      workerSecrets,
    )({ headers: { 'X-Pass': '{{secrets.PASS}}' } });
    expect(result.truncated).toBe(true);
    expect(result.body).toBe('x'.repeat(HTTP_TASK_RESULT_BODY_MAX_BYTES - 8));
  });
});

/** A real server on 127.0.0.1 that never answers, and notes when a request's connection closes. */
async function holdingServer(): Promise<{ port: number; arrived: string[]; closed: string[]; close(): Promise<void> }> {
  const arrived: string[] = [];
  const closed: string[] = [];
  const server: Server = createServer((req, res) => {
    arrived.push(req.url ?? '');
    res.on('close', () => closed.push(req.url ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    arrived,
    closed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the http task when its run is cancelled', () => {
  const heldRequest = async (server: { port: number }) => {
    const { httpTask } = createHttpTaskEffects({
      runs: { recordTaskAttempt: async () => undefined },
      secrets,
      egress: new EgressPolicy(['127.0.0.0/8']),
    });
    // A heartbeat timeout of 400 ms: the attempt heartbeats every 100 ms.
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 400 });
    let heartbeats = 0;
    env.on('heartbeat', () => (heartbeats += 1));
    const outcome = env
      .run(httpTask, {
        taskInstanceId: 't-1',
        taskWorkflowId: 'task-r-1:http:0',
        runId: 'r-1',
        config: { method: 'POST', headers: {}, timeout: '1m', url: `http://127.0.0.1:${server.port}/held` },
        context,
      } satisfies HttpTaskInput)
      .then(
        (result) => ({ result, error: undefined }),
        (error: unknown) => ({ result: undefined, error }),
      );
    return { env, outcome, heartbeats: () => heartbeats };
  };

  test('an attempt heartbeats while its request is in flight, and stops when the attempt ends', async () => {
    const server = await holdingServer();
    try {
      const { env, outcome, heartbeats } = await heldRequest(server);
      await until('the request to arrive', () => server.arrived.length === 1);
      const before = heartbeats();
      await until('heartbeats while the request is held', () => heartbeats() >= before + 3);
      env.cancel();
      await outcome;
      const after = heartbeats();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(heartbeats()).toBe(after);
    } finally {
      await server.close();
    }
  });

  test('a cancellation aborts the request in flight: the target sees its connection close and the attempt ends cancelled', async () => {
    const server = await holdingServer();
    try {
      const { env, outcome } = await heldRequest(server);
      await until('the request to arrive', () => server.arrived.length === 1);
      expect(server.closed).toEqual([]);
      env.cancel();
      const { error } = await outcome;
      expect(error).toBeInstanceOf(CancelledFailure);
      await until('the target to see the connection close', () => server.closed.length === 1);
      expect(server.closed).toEqual(['/held']);
    } finally {
      await server.close();
    }
  });
});
