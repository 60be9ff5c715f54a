import { inspect } from 'node:util';
import type { HttpTaskConfig, RunContext } from '@activity-core/contracts';
import { ApplicationFailure, type Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, test } from 'vitest';
import { createHttpTaskActivities, type HttpTaskInput } from './http-task';

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
  return { logger: { log, trace: at('TRACE'), debug: at('DEBUG'), info: at('INFO'), warn: at('WARN'), error: at('ERROR') }, text: () => lines.join('\n') };
}

/** An http task activity whose fetch answers with `answer` and records what it was sent and what was logged. */
function httpTaskAnswering(answer: { status: number; body: unknown }, workerSecrets: ReadonlyMap<string, string> = secrets) {
  const sent: Sent[] = [];
  const logs = recordingLogger();
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push({ url, headers: init.headers as Headers, body: init.body as string | undefined });
    return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  const { httpTask } = createHttpTaskActivities({ runs: { recordTaskAttempt: async () => undefined }, secrets: workerSecrets, fetch });
  const run = (config: Partial<HttpTaskConfig>) => {
    const input: HttpTaskInput = {
      taskInstanceId: 't-1',
      taskWorkflowId: 'task-r-1:http:0',
      runId: 'r-1',
      config: { method: 'POST', headers: {}, timeout: '5s', url: 'https://vendor.test/hook', ...config },
      context,
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
    const result = await run({ url: 'https://vendor.test/{{secrets.PATH_TOKEN}}/hook', headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' } });
    expect(result).toEqual({ status: 200, body: { seen: 'Bearer [secret:VENDOR_TOKEN]', path: '/[secret:PATH_TOKEN]/hook' } });
  });

  test('a failed request reports and logs a redacted url and body, and neither secret value', async () => {
    const { run, logged } = httpTaskAnswering({ status: 404, body: { error: 'no route /pt-9f8e/hook for sk_live_abc123' } });
    const failure = await failureOf(run({ url: 'https://vendor.test/{{secrets.PATH_TOKEN}}/hook', headers: { Authorization: 'Bearer {{secrets.VENDOR_TOKEN}}' } }));
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
