import type { HttpTaskConfig, RunContext } from '@activity-core/contracts';
import { parseDurationMs } from '@activity-core/contracts';
import type { RunsRepository } from '@activity-core/db';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { redactText, redactValue, SecretMissingError, secretScope, type TaskSecretSource } from './task-secrets';
import { renderText, renderValue, TemplateError } from './templating';

export interface HttpTaskInput {
  taskInstanceId: string;
  /** The logical activity execution id: the same for every attempt of this task. */
  taskWorkflowId: string;
  runId: string;
  config: HttpTaskConfig;
  context: RunContext;
}

export interface HttpTaskResult {
  status: number;
  /** With every secret the request used replaced by `[secret:NAME]`. */
  body: unknown;
}

/** Headers activity-core adds to every `http` task request (seeds 001, 002). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const ATTEMPT_ID_HEADER = 'X-Activity-Attempt-Id';
export const RUN_ID_HEADER = 'X-Activity-Run-Id';

/** Response bodies are read and kept up to this many bytes in the task's result. */
const MAX_BODY_BYTES = 64 * 1024;
/** Statuses that say "try again later" even though they are 4xx. */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 409, 425, 429]);

/**
 * Reads at most MAX_BODY_BYTES of the response and drops the rest unread, so a
 * huge (or endless) answer cannot exhaust the worker's memory.
 */
async function readBody(response: Response): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  const reader = response.body?.getReader();
  if (reader !== undefined) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = MAX_BODY_BYTES - size;
      if (value.byteLength > room) {
        chunks.push(value.subarray(0, room));
        size += room;
        truncated = true;
        await reader.cancel().catch(() => undefined);
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  }
  const text = new TextDecoder().decode(Buffer.concat(chunks));
  const type = response.headers.get('content-type') ?? '';
  if (type.includes('json') && !truncated) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

/**
 * The `http` task. At-least-once like every activity: the remote side is told
 * which logical request this is (Idempotency-Key, stable across retries) and
 * which try (attempt id), so it can dedupe.
 *
 * The only place `{{ secrets.NAME }}` is rendered. Everything the activity
 * hands back to Temporal (result, failure message and details) has the values
 * of the secrets it used redacted, since all of it lands in workflow
 * histories and task records.
 */
export function createHttpTaskActivities(deps: { runs: Pick<RunsRepository, 'recordTaskAttempt'>; secrets: TaskSecretSource; fetch?: typeof fetch }) {
  const doFetch = deps.fetch ?? fetch;
  return {
    async httpTask(input: HttpTaskInput): Promise<HttpTaskResult> {
      const ctx = Context.current();
      const attempt = ctx.info.attempt;
      // Best effort: a Postgres blip must not cost the task an attempt (the count only informs operators).
      await deps.runs.recordTaskAttempt(input.taskInstanceId, attempt).catch(() => undefined);

      const secrets = secretScope(deps.secrets);
      let url: string;
      let headers: Record<string, string>;
      let body: unknown;
      try {
        url = renderText(input.config.url, input.context, secrets.lookup);
        headers = Object.fromEntries(
          Object.entries(input.config.headers).map(([name, value]) => [name, renderText(value, input.context, secrets.lookup)]),
        );
        body = input.config.body === undefined ? undefined : renderValue(input.config.body, input.context, secrets.lookup);
      } catch (error) {
        if (error instanceof TemplateError) throw ApplicationFailure.nonRetryable(error.message, 'template_error');
        if (error instanceof SecretMissingError) throw ApplicationFailure.nonRetryable(error.message, 'secret_missing');
        throw error;
      }
      const redact = (text: string): string => redactText(text, secrets.used);
      if (!/^https?:\/\//i.test(url)) {
        throw ApplicationFailure.nonRetryable(`url must be http(s), got ${redact(url)}`, 'invalid_url');
      }

      let requestHeaders: Headers;
      try {
        requestHeaders = new Headers(headers);
      } catch (error) {
        // Undici quotes the offending value, which may be a secret.
        throw ApplicationFailure.nonRetryable(`invalid header: ${redact((error as Error).message)}`, 'invalid_header');
      }
      requestHeaders.set(IDEMPOTENCY_KEY_HEADER, input.taskWorkflowId);
      requestHeaders.set(ATTEMPT_ID_HEADER, `${input.taskWorkflowId}#${attempt}`);
      requestHeaders.set(RUN_ID_HEADER, input.runId);
      if (body !== undefined && !requestHeaders.has('content-type')) requestHeaders.set('content-type', 'application/json');

      const timeoutMs = parseDurationMs(input.config.timeout);
      const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), ctx.cancellationSignal]);
      let response: Response;
      try {
        response = await doFetch(url, {
          method: input.config.method,
          headers: requestHeaders,
          body: body === undefined || input.config.method === 'GET' || input.config.method === 'HEAD' ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
          signal,
          redirect: 'manual',
        });
      } catch (error) {
        if (ctx.cancellationSignal.aborted) throw error;
        const timedOut = (error as Error).name === 'TimeoutError';
        throw ApplicationFailure.retryable(
          timedOut ? `request timed out after ${input.config.timeout}` : `request failed: ${redact((error as Error).message)}`,
          timedOut ? 'http_timeout' : 'http_network_error',
        );
      }
      // A target may echo what it was sent (an error page quoting the URL, a body reflecting a header).
      const responseBody = redactValue(await readBody(response), secrets.used);
      const ok = input.config.success_statuses?.includes(response.status) ?? (response.status >= 200 && response.status < 300);
      if (ok) return { status: response.status, body: responseBody };

      const type = `http_status_${response.status}`;
      const message = `${input.config.method} ${redact(url)} answered ${response.status}`;
      const details = { status: response.status, body: responseBody };
      // Redirects are not followed (the target must be explicit), and 4xx means the request itself is wrong:
      // retrying either cannot help. 408/409/425/429 say "later" and are retried.
      const permanent = (response.status >= 300 && response.status < 400) || (response.status >= 400 && response.status < 500 && !RETRYABLE_CLIENT_STATUSES.has(response.status));
      if (permanent) {
        throw ApplicationFailure.create({ message, type, nonRetryable: true, details: [details] });
      }
      throw ApplicationFailure.create({ message, type, nonRetryable: false, details: [details] });
    },
  };
}
