import type { HttpTaskConfig, Logger, RunContext } from '@activity-core/contracts';
import {
  DEFINITION_JSON_MAX_DEPTH,
  httpTaskAttemptId,
  jsonDepthExceeds,
  parseDurationMs,
} from '@activity-core/contracts';
import type { RunsRepository } from '@activity-core/db';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Agent, fetch as undiciFetch } from 'undici';
import { EgressDeniedError, EgressPolicy } from './egress';
import {
  redactCutText,
  redactText,
  redactValue,
  SecretMissingError,
  secretScope,
  type TaskSecretSource,
} from './task-secrets';
import { renderText, renderUrl, renderValue, TemplateError } from './templating';

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
  /**
   * With every secret the request used replaced by `[secret:NAME]`, and at
   * most HTTP_TASK_RESULT_BODY_MAX_BYTES as JSON.
   */
  body: unknown;
  /** Present (true) when the body was clipped to the budget; it is then text. */
  truncated?: true;
}

/**
 * Headers activity-core adds to every `http` task request; what each means to
 * the receiver is in docs/idempotency.md, "The `http` task: headers for the receiver".
 */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const ATTEMPT_ID_HEADER = 'X-Activity-Attempt-Id';
export const RUN_ID_HEADER = 'X-Activity-Run-Id';

/**
 * The response budget: a response body is read up to this many bytes (the
 * rest is dropped unread), and the body the task carries forward (its result,
 * which lands in later tasks' context, the workflow history and
 * task_instances, or its failure details) is at most this many bytes as JSON,
 * after secret redaction. No response headers are kept.
 */
export const HTTP_TASK_RESULT_BODY_MAX_BYTES = 64 * 1024;
const MAX_BODY_BYTES = HTTP_TASK_RESULT_BODY_MAX_BYTES;
/**
 * Deepest JSON response body kept as parsed JSON (as for definitions and, by
 * default, event data); a deeper one is kept as its text, since the body is
 * copied and serialised recursively downstream (JSON.stringify, payloads).
 */
export const HTTP_TASK_RESULT_BODY_MAX_DEPTH = DEFINITION_JSON_MAX_DEPTH;
/**
 * How often an attempt heartbeats while it runs. The worker passes heartbeats
 * on to Temporal at most every 5 s (worker.ts), and the answer to one is how a
 * cancellation of the run reaches the attempt (HTTP_TASK_CANCEL_OPTIONS in
 * workflows/effect-options.ts).
 */
const HTTP_TASK_HEARTBEAT_EVERY_MS = 2_000;

/**
 * Heartbeats for the attempt until the returned function is called: every
 * HTTP_TASK_HEARTBEAT_EVERY_MS, or a quarter of the heartbeat timeout when that
 * is shorter. Only the liveness matters: no details are sent (a retry starts
 * the request over, there is nothing to resume).
 */
function keepHeartbeating(ctx: Context): () => void {
  const timeoutMs = ctx.info.heartbeatTimeoutMs;
  const everyMs =
    timeoutMs !== undefined && timeoutMs > 0
      ? Math.max(100, Math.min(HTTP_TASK_HEARTBEAT_EVERY_MS, timeoutMs / 4))
      : HTTP_TASK_HEARTBEAT_EVERY_MS;
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), everyMs);
  return () => clearInterval(timer);
}

/** Statuses that say "try again later" even though they are 4xx. */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 409, 425, 429]);

/**
 * Reads at most MAX_BODY_BYTES of the response and drops the rest unread, so a
 * huge (or endless) answer cannot exhaust the worker's memory. A JSON body is
 * parsed, unless cut or nested deeper than HTTP_TASK_RESULT_BODY_MAX_DEPTH:
 * those are kept as text.
 */
async function readBody(response: Response): Promise<{ body: unknown; truncated: boolean }> {
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
  // A cut body may end inside a character: `stream` holds those bytes back instead of writing U+FFFD.
  const text = new TextDecoder().decode(Buffer.concat(chunks), { stream: truncated });
  const type = response.headers.get('content-type') ?? '';
  if (type.includes('json') && !truncated) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text) as unknown;
    } catch {
      return { body: text, truncated };
    }
    // JSON.parse copes with any depth; what the body passes through next (JSON.stringify, redaction, payloads) should not have to.
    return { body: jsonDepthExceeds(parsed, HTTP_TASK_RESULT_BODY_MAX_DEPTH) ? text : parsed, truncated };
  }
  return { body: text, truncated };
}

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? 'null');

/**
 * Holds a (redacted) body to the budget, measured as the JSON it is stored
 * as: redaction can lengthen a body (`[secret:NAME]` for a short secret), and
 * so can JSON escaping. A body over the budget becomes its text, clipped so
 * that its JSON string fits.
 */
export function boundBody(
  body: unknown,
  truncated: boolean,
  maxBytes = HTTP_TASK_RESULT_BODY_MAX_BYTES,
): { body: unknown; truncated: boolean } {
  if (jsonBytes(body) <= maxBytes) return { body, truncated };
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  // The longest prefix whose JSON string fits (binary search on UTF-16 length; never split a surrogate pair).
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (jsonBytes(text.slice(0, mid)) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  const cut = low > 0 && /[\uD800-\uDBFF]/.test(text[low - 1]!) ? low - 1 : low;
  return { body: text.slice(0, cut), truncated: true };
}

/** The fetch the task uses (undici's, with a dispatcher; tests pass their own). */
export type HttpFetch = (url: string, init: RequestInit & { dispatcher?: Agent }) => Promise<Response>;

/** The EgressDeniedError a failed fetch carries (undici wraps the connect error as the cause). */
function egressDenial(error: unknown): EgressDeniedError | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (current instanceof EgressDeniedError) return current;
  }
  return undefined;
}

/**
 * Why a request got no answer, from the error's `cause` chain: undici's
 * `fetch failed` hides the system or TLS error that says it (ENOTFOUND,
 * ECONNREFUSED, ECONNRESET, ETIMEDOUT, CERT_HAS_EXPIRED, ...). A connect that
 * tried several addresses fails with an AggregateError of them; the first
 * one's code is taken when the aggregate has none.
 */
export function networkFailureCause(error: unknown): { code: string; message: string } | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 6; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code.length > 0) return { code, message: current.message };
    const first = current instanceof AggregateError ? (current.errors as unknown[])[0] : undefined;
    current = first instanceof Error ? first : current.cause;
  }
  return undefined;
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
 *
 * Where the request goes is the definition's choice alone: URL values are
 * encoded into their segment or query value (renderUrl), and the egress
 * policy refuses loopback, private and link-local destinations on the
 * address actually connected to (egress.ts).
 */
export function createHttpTaskEffects(deps: {
  runs: Pick<RunsRepository, 'recordTaskAttempt'>;
  secrets: TaskSecretSource;
  /** Where requests may go (default: no private, loopback or link-local destination). */
  egress?: EgressPolicy;
  fetch?: HttpFetch;
  /** Where a request that got no answer is logged, with its cause (the worker's log). */
  logger?: Pick<Logger, 'warn'>;
}) {
  const egress = deps.egress ?? new EgressPolicy();
  // Every connection resolves its host through the egress policy, so the address checked is the address connected to.
  const dispatcher = new Agent({ connect: { lookup: egress.lookup } });
  const doFetch: HttpFetch =
    deps.fetch ??
    ((url, init) => undiciFetch(url, init as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>);
  return {
    /**
     * Heartbeats from its first moment to its last, so that a cancellation of
     * the run reaches the attempt (Temporal answers a heartbeat with it): the
     * request is then aborted — its connection closed, whether the answer was
     * awaited or being read — and the attempt ends as cancelled. The task
     * workflow waits for that before it records `cancelled`
     * (HTTP_TASK_CANCEL_OPTIONS, adr/0045-http-attempts-stop-on-cancel.md).
     */
    async httpTask(input: HttpTaskInput): Promise<HttpTaskResult> {
      const ctx = Context.current();
      const stopHeartbeating = keepHeartbeating(ctx);
      try {
        return await attemptRequest(ctx, input);
      } finally {
        stopHeartbeating();
      }
    },
  };

  async function attemptRequest(ctx: Context, input: HttpTaskInput): Promise<HttpTaskResult> {
    const attempt = ctx.info.attempt;
    // Best effort: a Postgres blip must not cost the task an attempt (the count only informs operators).
    await deps.runs.recordTaskAttempt(input.taskInstanceId, attempt).catch(() => undefined);

    const secrets = secretScope(deps.secrets);
    let url: string;
    let headers: Record<string, string>;
    let body: unknown;
    try {
      url = renderUrl(input.config.url, input.context, secrets.lookup);
      headers = Object.fromEntries(
        Object.entries(input.config.headers).map(([name, value]) => [
          name,
          renderText(value, input.context, secrets.lookup),
        ]),
      );
      body =
        input.config.body === undefined ? undefined : renderValue(input.config.body, input.context, secrets.lookup);
    } catch (error) {
      if (error instanceof TemplateError) throw ApplicationFailure.nonRetryable(error.message, 'template_error');
      if (error instanceof SecretMissingError) throw ApplicationFailure.nonRetryable(error.message, 'secret_missing');
      throw error;
    }
    const redact = (text: string): string => redactText(text, secrets.used);
    if (!/^https?:\/\//i.test(url)) {
      throw ApplicationFailure.nonRetryable(`url must be http(s), got ${redact(url)}`, 'invalid_url');
    }
    try {
      egress.checkHost(new URL(url).hostname);
    } catch (error) {
      if (error instanceof EgressDeniedError) throw ApplicationFailure.nonRetryable(error.message, 'egress_denied');
      throw error;
    }

    let requestHeaders: Headers;
    try {
      requestHeaders = new Headers(headers);
    } catch (error) {
      // Undici quotes the offending value, which may be a secret.
      throw ApplicationFailure.nonRetryable(`invalid header: ${redact((error as Error).message)}`, 'invalid_header');
    }
    requestHeaders.set(IDEMPOTENCY_KEY_HEADER, input.taskWorkflowId);
    requestHeaders.set(ATTEMPT_ID_HEADER, httpTaskAttemptId(input.taskWorkflowId, attempt));
    requestHeaders.set(RUN_ID_HEADER, input.runId);
    if (body !== undefined && !requestHeaders.has('content-type'))
      requestHeaders.set('content-type', 'application/json');

    const timeoutMs = parseDurationMs(input.config.timeout);
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), ctx.cancellationSignal]);
    let response: Response;
    try {
      response = await doFetch(url, {
        method: input.config.method,
        headers: requestHeaders,
        body:
          body === undefined || input.config.method === 'GET' || input.config.method === 'HEAD'
            ? undefined
            : typeof body === 'string'
              ? body
              : JSON.stringify(body),
        signal,
        redirect: 'manual',
        dispatcher,
      });
    } catch (error) {
      if (ctx.cancellationSignal.aborted) throw error;
      const denied = egressDenial(error);
      if (denied !== undefined) throw ApplicationFailure.nonRetryable(denied.message, 'egress_denied');
      const timedOut = (error as Error).name === 'TimeoutError';
      // `fetch failed` alone says nothing: the message names the cause's code (ENOTFOUND, ECONNREFUSED, a TLS error, ...).
      const cause = timedOut ? undefined : networkFailureCause(error);
      const message = timedOut
        ? `request timed out after ${input.config.timeout}`
        : cause === undefined
          ? `request failed: ${redact((error as Error).message)}`
          : `request failed: ${cause.code} (${redact(cause.message)})`;
      deps.logger?.warn(
        {
          taskInstanceId: input.taskInstanceId,
          runId: input.runId,
          attempt,
          method: input.config.method,
          url: redact(url),
          ...(cause === undefined ? {} : { code: cause.code }),
          cause: message,
        },
        'http task got no answer; Temporal retries it per the task retry policy',
      );
      throw ApplicationFailure.create({
        message,
        type: timedOut ? 'http_timeout' : 'http_network_error',
        nonRetryable: false,
        ...(cause === undefined ? {} : { details: [{ code: cause.code }] }),
      });
    }
    // A target may echo what it was sent (an error page quoting the URL, a body reflecting a header).
    const read = await readBody(response);
    // A body cut at the read limit may end inside a secret: redactCutText drops such a tail too.
    const redactedBody =
      read.truncated && typeof read.body === 'string'
        ? redactCutText(read.body, secrets.used)
        : redactValue(read.body, secrets.used);
    const { body: responseBody, truncated } = boundBody(redactedBody, read.truncated);
    const ok =
      input.config.success_statuses?.includes(response.status) ?? (response.status >= 200 && response.status < 300);
    if (ok)
      return truncated
        ? { status: response.status, body: responseBody, truncated }
        : { status: response.status, body: responseBody };

    const type = `http_status_${response.status}`;
    const message = `${input.config.method} ${redact(url)} answered ${response.status}`;
    const details = truncated
      ? { status: response.status, body: responseBody, truncated }
      : { status: response.status, body: responseBody };
    // Redirects are not followed (the target must be explicit), and 4xx means the request itself is wrong:
    // retrying either cannot help. 408/409/425/429 say "later" and are retried.
    const permanent =
      (response.status >= 300 && response.status < 400) ||
      (response.status >= 400 && response.status < 500 && !RETRYABLE_CLIENT_STATUSES.has(response.status));
    if (permanent) {
      throw ApplicationFailure.create({ message, type, nonRetryable: true, details: [details] });
    }
    throw ApplicationFailure.create({ message, type, nonRetryable: false, details: [details] });
  }
}
