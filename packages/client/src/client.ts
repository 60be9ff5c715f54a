import { randomUUID } from 'node:crypto';
import type {
  DeadLetter,
  DeadLetterDiscardResponse,
  DeadLetterReason,
  DeadLetterRetryResponse,
  DeadLetterSelection,
  ActivityDefinitionInput,
  ActivityRecord,
  ActivitySchedules,
  ActivityVersion,
  ActivityVersionPage,
  ActivityVersionSummary,
  AuditAction,
  AuditEntry,
  AuditTargetType,
  BackfillRequest,
  BackfillResponse,
  BatchItemResult,
  BulkReplayDryRun,
  BulkReplayRecord,
  BulkReplayRequest,
  BulkRerunDryRun,
  BulkRerunRecord,
  BulkRerunRequest,
  CancelResponse,
  CodecPayloads,
  DefinitionDiff,
  EnableActivityResponse,
  EventAcceptedResponse,
  EventInput,
  FireExplanation,
  FireRecord,
  HeldDiscardResponse,
  HeldEventPage,
  HeldReleaseResponse,
  Readiness,
  ReconcileResponse,
  RerunFrom,
  ReplayMode,
  ReplayResponse,
  RerunResponse,
  RunDetail,
  RunRecord,
  RunStatus,
  StoredEvent,
  TriggerNowResponse,
  TriggerType,
  WhenDisabled,
} from '@activity-core/contracts';
import type { WebhookSourceBody, WebhookSourceInput, WebhookSourceRecord } from '@activity-core/webhooks';
import type { z } from 'zod';
import { operations, type OperationName, type OperationSpec, type ResultOf } from './operations';
import { paginate, type PageOf } from './pagination';
import { ActivityCoreError, ActivityCoreNetworkError, problemFromAnswer } from './problem';
import { DEFAULT_RETRY, isRetryableStatus, nextDelayMs, parseRetryAfterMs, type RetryOptions } from './retry';

export interface ClientOptions {
  /** Where the API listens, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** A key from API_KEYS (or INGEST_KEYS, for sending events), sent as a bearer token. */
  apiKey?: string;
  /** Retries of requests that are safe to repeat; see `RetryOptions`. */
  retry?: Partial<RetryOptions>;
  /** Each attempt's time limit; an attempt that runs over counts as a network error. @default 30000 */
  timeoutMs?: number;
  /** A fetch implementation (tests, proxies, instrumentation). @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** Extra headers on every request. */
  headers?: Readonly<Record<string, string>>;
  /** Called before each retry, e.g. to log it. */
  onRetry?: (retry: RetryInfo) => void;
}

export interface RetryInfo {
  operation: OperationName;
  /** The attempt that failed (1 = the first request). */
  attempt: number;
  delayMs: number;
  /** `network: …`, or the HTTP status and problem title. */
  reason: string;
}

export interface CallOptions {
  /** Aborts the call, its retries and their waits. */
  signal?: AbortSignal;
}

/** A low-level request of one operation. */
export interface RequestInput extends CallOptions {
  params?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** JSON-serialised, or sent as is for operations with a raw body. */
  body?: unknown;
  headers?: Readonly<Record<string, string | undefined>>;
}

export interface SendEventOptions extends CallOptions {
  /**
   * The Idempotency-Key to send. By default the client generates one per
   * call when an event (or a batch item) has no id of its own, and sends the
   * same key on every retry, so a retried call cannot store the event twice.
   * An event with its own `event_id` (or CloudEvent `id`) needs none.
   */
  idempotencyKey?: string;
}

export interface SendEvents {
  /** Posts one event; `202` answers `accepted` or `duplicate` with the runs it started. */
  (event: EventInput, options?: SendEventOptions): Promise<EventAcceptedResponse>;
  /** Posts a batch (1–100); the answer is per item, in order. */
  (events: readonly EventInput[], options?: SendEventOptions): Promise<{ results: BatchItemResult[] }>;
}

export interface ActivityListOptions extends CallOptions {
  /** 1–200. @default 50 */
  limit?: number;
  cursor?: string;
  enabled?: boolean;
}

export interface RunListOptions extends CallOptions {
  /** 1–200. @default 50 */
  limit?: number;
  cursor?: string;
  activity_id?: string;
  status?: RunStatus;
  trigger_type?: TriggerType;
  event_id?: string;
}

export interface FireListOptions extends CallOptions {
  /** 1–500. @default 100 */
  limit?: number;
  cursor?: string;
  /** Only fire times at or after this RFC 3339 instant. */
  from?: string;
  /** Only fire times at or before this RFC 3339 instant. */
  to?: string;
}

export interface AuditListOptions extends CallOptions {
  /** 1–200. @default 50 */
  limit?: number;
  cursor?: string;
  /** A credential label: `api_key:<key id>`. */
  actor?: string;
  action?: AuditAction;
  activity_id?: string;
  target_type?: AuditTargetType;
  target_id?: string;
  /** Only entries at or after this RFC 3339 instant. */
  from?: string;
  /** Only entries at or before this RFC 3339 instant. */
  to?: string;
}

type Pageless<T> = Omit<T, 'cursor'>;

const VERSION = '0.1.0';

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const causeText = cause instanceof Error ? `: ${(cause as { code?: string }).code ?? cause.message}` : '';
    return error.name === 'TimeoutError' ? 'timed out' : `${error.message}${causeText}`;
  }
  return String(error);
}

/** True for a body that carries its own event id (envelope `event_id`, CloudEvent `id`). */
function hasOwnId(event: unknown): boolean {
  if (typeof event !== 'object' || event === null) return false;
  return 'specversion' in event
    ? 'id' in event
    : 'event_id' in event && (event as { event_id?: unknown }).event_id !== undefined;
}

/**
 * The typed client of the activity-core HTTP API. Requests and answers are
 * typed with the contracts' zod models; every error answer is thrown as an
 * `ActivityCoreProblem` (see problem.ts); requests that are safe to repeat
 * are retried after network errors, 5xx and 429 (honouring Retry-After).
 *
 * ```ts
 * const client = new ActivityCoreClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: process.env.API_KEY });
 * const activity = await client.activities.create({ name: 'hello', triggers: [{ type: 'event', event_type: 'hello' }], tasks: [{ type: 'noop' }] });
 * await client.events.send({ event_type: 'hello', source: 'docs', occurred_at: new Date().toISOString() });
 * for await (const run of client.runs.listAll({ activity_id: activity.id })) console.log(run.status);
 * ```
 */
export class ActivityCoreClient {
  readonly #baseUrl: string;
  readonly #fetch: typeof globalThis.fetch;
  readonly #retry: RetryOptions;
  readonly #timeoutMs: number;
  readonly #headers: Record<string, string>;
  readonly #onRetry: ((retry: RetryInfo) => void) | undefined;

  constructor(options: ClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#headers = {
      'user-agent': `activity-core-client/${VERSION}`,
      ...(options.apiKey === undefined || options.apiKey === '' ? {} : { authorization: `Bearer ${options.apiKey}` }),
      ...options.headers,
    };
    this.#onRetry = options.onRetry;
  }

  /**
   * One operation of the API by name, with retries per its `RetryMode`.
   * The methods below are the typed way in; this is for what they do not cover.
   */
  async request<N extends OperationName>(name: N, input: RequestInput = {}): Promise<ResultOf<N>> {
    const spec: OperationSpec = operations[name];
    const url = this.#url(spec.path, input.params ?? {}, input.query ?? {});
    const headers: Record<string, string> = {
      ...this.#headers,
      accept: spec.text === true ? 'text/plain, */*' : 'application/json, application/problem+json',
    };
    for (const [header, value] of Object.entries(input.headers ?? {}))
      if (value !== undefined) headers[header.toLowerCase()] = value;
    let body: string | Uint8Array | undefined;
    if (input.body !== undefined) {
      if (spec.rawBody === true) {
        body = input.body as string | Uint8Array;
        headers['content-type'] ??= 'application/json';
      } else {
        body = JSON.stringify(input.body);
        headers['content-type'] = 'application/json';
      }
    }
    const retryable = spec.retry !== 'never';
    for (let attempt = 1; ; attempt++) {
      const attemptSignal =
        input.signal === undefined
          ? AbortSignal.timeout(this.#timeoutMs)
          : AbortSignal.any([input.signal, AbortSignal.timeout(this.#timeoutMs)]);
      let status: number;
      let statusText: string;
      let responseHeaders: Headers;
      let text: string;
      try {
        const response = await this.#fetch(url, {
          method: spec.method,
          headers,
          ...(body === undefined ? {} : { body }),
          signal: attemptSignal,
        });
        status = response.status;
        statusText = response.statusText;
        responseHeaders = response.headers;
        // Inside the try: a connection lost while the body arrives is a network error too.
        text = await response.text();
      } catch (error) {
        if (input.signal?.aborted === true) throw input.signal.reason;
        const delayMs = retryable ? nextDelayMs(attempt, this.#retry, undefined) : undefined;
        const reason = `network: ${describeNetworkError(error)}`;
        if (delayMs === undefined) {
          throw new ActivityCoreNetworkError(
            `${spec.method} ${url}: no answer after ${attempt} attempt${attempt === 1 ? '' : 's'} (${describeNetworkError(error)})`,
            attempt,
            { cause: error },
          );
        }
        this.#onRetry?.({ operation: name, attempt, delayMs, reason });
        await sleep(delayMs, input.signal);
        continue;
      }
      if (Object.hasOwn(spec.responses, status)) {
        if (spec.text === true) return text as ResultOf<N>;
        if (text === '') return null as ResultOf<N>;
        try {
          return JSON.parse(text) as ResultOf<N>;
        } catch {
          throw new ActivityCoreError(
            `${spec.method} ${url}: the ${status} answer is not JSON (${responseHeaders.get('content-type') ?? 'no content type'}): ${text.slice(0, 200)}`,
          );
        }
      }
      const retryAfterMs = parseRetryAfterMs(responseHeaders.get('retry-after'));
      const problem = problemFromAnswer({
        status,
        statusText,
        contentType: responseHeaders.get('content-type'),
        body: text,
        ...(retryAfterMs === undefined ? {} : { retryAfterSeconds: Math.ceil(retryAfterMs / 1000) }),
      });
      const delayMs =
        retryable && isRetryableStatus(status) ? nextDelayMs(attempt, this.#retry, retryAfterMs) : undefined;
      if (delayMs === undefined) throw problem;
      this.#onRetry?.({ operation: name, attempt, delayMs, reason: `${status} ${problem.title}` });
      await sleep(delayMs, input.signal);
    }
  }

  #url(
    template: string,
    params: Readonly<Record<string, string>>,
    query: Readonly<Record<string, string | number | boolean | undefined>>,
  ): string {
    const path = template.replace(/\{([^}]+)\}/g, (_match, name: string) => {
      const value = params[name];
      if (value === undefined) throw new TypeError(`missing path parameter ${name} for ${template}`);
      return encodeURIComponent(value);
    });
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) search.set(key, String(value));
    const qs = search.toString();
    return `${this.#baseUrl}${path}${qs === '' ? '' : `?${qs}`}`;
  }

  /** `/healthz`, `/readyz`, `/metrics`. */
  readonly health = {
    /** The process is up. */
    live: (options: CallOptions = {}): Promise<{ status: 'ok' }> => this.request('getLiveness', options),
    /** Postgres and Temporal are reachable: `ready` (200) or `not_ready` (503), both returned, not thrown. */
    ready: (options: CallOptions = {}): Promise<Readiness> => this.request('getReadiness', options),
    /** Prometheus text exposition (management key). */
    metrics: (options: CallOptions = {}): Promise<string> => this.request('getMetrics', options),
  };

  /** Activity definitions: register, replace, read, list, delete, enable, disable. */
  readonly activities = {
    /** Registers an activity under a server-chosen id. Not retried (a repeat is a 409); prefer `put` with your own id. */
    create: (definition: ActivityDefinitionInput, options: CallOptions = {}): Promise<ActivityRecord> =>
      this.request('createActivity', { ...options, body: definition }),
    /** Creates the activity with this id (a UUID) or replaces it; an identical definition changes nothing. Safe to retry. */
    put: (id: string, definition: ActivityDefinitionInput, options: CallOptions = {}): Promise<ActivityRecord> =>
      this.request('putActivity', { ...options, params: { id }, body: definition }),
    get: (id: string, options: CallOptions = {}): Promise<ActivityRecord> =>
      this.request('getActivity', { ...options, params: { id } }),
    /** One page, newest first. */
    list: (options: ActivityListOptions = {}): Promise<PageOf<ActivityRecord>> => {
      const { signal, enabled, ...query } = options;
      return this.request('listActivities', {
        ...(signal === undefined ? {} : { signal }),
        query: { ...query, enabled: enabled === undefined ? undefined : String(enabled) },
      });
    },
    /** Every activity, page by page (pagination helper over `list`). */
    listAll: (options: Pageless<ActivityListOptions> = {}): AsyncGenerator<ActivityRecord, void, undefined> =>
      paginate((cursor) => this.activities.list({ ...options, ...(cursor === undefined ? {} : { cursor }) })),
    /** The live activity with this name, or undefined (names are unique among live activities; helper over `list`). */
    findByName: async (name: string, options: CallOptions = {}): Promise<ActivityRecord | undefined> => {
      for await (const activity of this.activities.listAll({ ...options, limit: 200 }))
        if (activity.name === name) return activity;
      return undefined;
    },
    /** Soft delete: its schedules go, its runs stay. Not retried (a repeat is a 404). */
    delete: async (id: string, options: CallOptions = {}): Promise<void> => {
      await this.request('deleteActivity', { ...options, params: { id } });
    },
    /**
     * Enables the activity; the answer says how many events it held while
     * disabled (`held_events`), released when `releaseHeld` is true.
     */
    enable: (id: string, options: CallOptions & { releaseHeld?: boolean } = {}): Promise<EnableActivityResponse> => {
      const { releaseHeld, ...call } = options;
      return this.request('enableActivity', {
        ...call,
        params: { id },
        ...(releaseHeld === undefined ? {} : { query: { release_held: String(releaseHeld) } }),
      });
    },
    /** Disables the activity; `whenDisabled` (written with it) says whether its events are dropped or held meanwhile. */
    disable: (
      id: string,
      options: CallOptions & { whenDisabled?: z.input<typeof WhenDisabled> } = {},
    ): Promise<ActivityRecord> => {
      const { whenDisabled, ...call } = options;
      return this.request('disableActivity', {
        ...call,
        params: { id },
        ...(whenDisabled === undefined ? {} : { body: { when_disabled: whenDisabled } }),
      });
    },
    /** The events a disabled activity holds (docs/recovery.md, "Held events"): one page, oldest first. */
    heldEvents: (
      id: string,
      options: CallOptions & { limit?: number; cursor?: string } = {},
    ): Promise<HeldEventPage> => {
      const { signal, ...query } = options;
      return this.request('listHeldEvents', {
        ...(signal === undefined ? {} : { signal }),
        params: { id },
        query,
      });
    },
    /** Releases held events (all, oldest first, as many as one request carries out; or `eventIds`): each starts its run. */
    releaseHeld: (id: string, options: CallOptions & { eventIds?: string[] } = {}): Promise<HeldReleaseResponse> => {
      const { eventIds, ...call } = options;
      return this.request('releaseHeldEvents', {
        ...call,
        params: { id },
        body: eventIds === undefined ? {} : { event_ids: eventIds },
      });
    },
    /** Discards held events (all, or `eventIds`): each is recorded discarded. */
    discardHeld: (id: string, options: CallOptions & { eventIds?: string[] } = {}): Promise<HeldDiscardResponse> => {
      const { eventIds, ...call } = options;
      return this.request('discardHeldEvents', {
        ...call,
        params: { id },
        body: eventIds === undefined ? {} : { event_ids: eventIds },
      });
    },
    /** One page of the activity's versions, newest first, with who wrote each (deleted activities too). */
    versions: (
      id: string,
      options: CallOptions & { limit?: number; cursor?: string } = {},
    ): Promise<ActivityVersionPage> => {
      const { signal, ...query } = options;
      return this.request('listActivityVersions', {
        ...(signal === undefined ? {} : { signal }),
        params: { id },
        query,
      });
    },
    /** Every version, page by page (pagination helper over `versions`). */
    allVersions: (
      id: string,
      options: CallOptions & { limit?: number } = {},
    ): AsyncGenerator<ActivityVersionSummary, void, undefined> =>
      paginate((cursor) => this.activities.versions(id, { ...options, ...(cursor === undefined ? {} : { cursor }) })),
    /** One version with its definition. */
    version: (id: string, version: number, options: CallOptions = {}): Promise<ActivityVersion> =>
      this.request('getActivityVersion', { ...options, params: { id, version: String(version) } }),
    /** What changed between two versions, as an RFC 6902 JSON Patch (default: the last change). */
    diff: (id: string, options: CallOptions & { from?: number; to?: number } = {}): Promise<DefinitionDiff> => {
      const { signal, from, to } = options;
      return this.request('diffActivityVersions', {
        ...(signal === undefined ? {} : { signal }),
        params: { id },
        query: { from, to },
      });
    },
  };

  /** Events: send (retried with one Idempotency-Key per call) and look up the routing decisions. */
  readonly events = {
    send: (async (events: EventInput | readonly EventInput[], options: SendEventOptions = {}) => {
      const items: readonly unknown[] = Array.isArray(events) ? events : [events];
      const key = options.idempotencyKey ?? (items.every(hasOwnId) ? undefined : randomUUID());
      return await this.request('sendEvents', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        body: events,
        headers: { 'idempotency-key': key },
      });
    }) as SendEvents,
    /** The stored event and every routing decision: why it did or did not run each activity. */
    get: (eventId: string, options: CallOptions = {}): Promise<StoredEvent> =>
      this.request('getEvent', { ...options, params: { event_id: eventId } }),
    /**
     * Replays a stored event against today's definitions: `if_no_runs`
     * (default) starts only runs that never ran; `force` starts
     * `replay-{run_id}:{n}` under the key (resent on retries: one replay).
     */
    replay: (
      eventId: string,
      options: CallOptions & { mode?: ReplayMode; idempotencyKey?: string } = {},
    ): Promise<ReplayResponse> =>
      this.request('replayEvent', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        params: { event_id: eventId },
        body: options.mode === undefined ? {} : { mode: options.mode },
        headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
      }),
    /** Replays every stored event a filter selects (`dry_run: true` only counts them). Without a key, the request is its own key. */
    bulkReplay: (
      request: z.input<typeof BulkReplayRequest>,
      options: CallOptions & { idempotencyKey?: string } = {},
    ): Promise<BulkReplayDryRun | BulkReplayRecord> =>
      this.request('bulkReplay', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        body: request,
        headers: options.idempotencyKey === undefined ? {} : { 'idempotency-key': options.idempotencyKey },
      }),
    /** The progress of a bulk replay. */
    bulkReplayStatus: (id: string, options: CallOptions = {}): Promise<BulkReplayRecord> =>
      this.request('getBulkReplay', { ...options, params: { id } }),
  };

  /**
   * Dead letters: routes whose run could not be started (docs/recovery.md,
   * "Dead letters"), retried against today's definitions or discarded.
   */
  readonly deadLetters = {
    list: (
      options: CallOptions & { limit?: number; cursor?: string; activityId?: string; reason?: DeadLetterReason } = {},
    ): Promise<PageOf<DeadLetter>> => {
      const { signal, activityId, ...query } = options;
      return this.request('listDeadLetters', {
        ...(signal === undefined ? {} : { signal }),
        query: { ...query, ...(activityId === undefined ? {} : { activity_id: activityId }) },
      });
    },
    /** One (`event_id` and `activity_id`) or up to 100 a `filter` selects. */
    retry: (
      selection: z.input<typeof DeadLetterSelection>,
      options: CallOptions = {},
    ): Promise<DeadLetterRetryResponse> => this.request('retryDeadLetters', { ...options, body: selection }),
    discard: (
      selection: z.input<typeof DeadLetterSelection>,
      options: CallOptions = {},
    ): Promise<DeadLetterDiscardResponse> => this.request('discardDeadLetters', { ...options, body: selection }),
  };

  /** Runs and their tasks. */
  readonly runs = {
    list: (options: RunListOptions = {}): Promise<PageOf<RunRecord>> => {
      const { signal, ...query } = options;
      return this.request('listRuns', { ...(signal === undefined ? {} : { signal }), query });
    },
    /** Every matching run, page by page (pagination helper over `list`). */
    listAll: (options: Pageless<RunListOptions> = {}): AsyncGenerator<RunRecord, void, undefined> =>
      paginate((cursor) => this.runs.list({ ...options, ...(cursor === undefined ? {} : { cursor }) })),
    get: (runId: string, options: CallOptions = {}): Promise<RunDetail> =>
      this.request('getRun', { ...options, params: { run_id: runId } }),
    /** Requests cancellation; `cancel_requested: false` when the run is no longer running. */
    cancel: (runId: string, options: CallOptions = {}): Promise<CancelResponse> =>
      this.request('cancelRun', { ...options, params: { run_id: runId } }),
    /**
     * Re-runs a run from the start or from its failed task. The key
     * (generated once per call unless given) is resent on retries, and the
     * same key names the same re-run, so a retried call is one re-run.
     */
    rerun: (
      runId: string,
      options: CallOptions & { from?: RerunFrom; priority?: number; idempotencyKey?: string } = {},
    ): Promise<RerunResponse> =>
      this.request('rerunRun', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        params: { run_id: runId },
        body: {
          ...(options.from === undefined ? {} : { from: options.from }),
          ...(options.priority === undefined ? {} : { priority: options.priority }),
        },
        headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
      }),
    /** Re-runs every run a filter selects (`dry_run: true` only counts them); keyed like `rerun`. */
    bulkRerun: (
      request: z.input<typeof BulkRerunRequest>,
      options: CallOptions & { idempotencyKey?: string } = {},
    ): Promise<BulkRerunDryRun | BulkRerunRecord> =>
      this.request('bulkRerun', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        body: request,
        headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
      }),
    /** The progress of a bulk re-run. */
    bulkRerunStatus: (id: string, options: CallOptions = {}): Promise<BulkRerunRecord> =>
      this.request('getBulkRerun', { ...options, params: { id } }),
  };

  /** The audit log: every change and operator action, newest first. */
  readonly audit = {
    list: (options: AuditListOptions = {}): Promise<PageOf<AuditEntry>> => {
      const { signal, ...query } = options;
      return this.request('listAudit', { ...(signal === undefined ? {} : { signal }), query });
    },
    /** Every matching entry, page by page. */
    listAll: (options: Pageless<AuditListOptions> = {}): AsyncGenerator<AuditEntry, void, undefined> =>
      paginate((cursor) => this.audit.list({ ...options, ...(cursor === undefined ? {} : { cursor }) })),
  };

  /** The Temporal Schedules behind cron triggers, and the fire log. */
  readonly schedules = {
    describe: (activityId: string, options: CallOptions = {}): Promise<ActivitySchedules> =>
      this.request('describeSchedules', { ...options, params: { id: activityId } }),
    pause: (activityId: string, note?: string, options: CallOptions = {}): Promise<ActivitySchedules> =>
      this.request('pauseSchedules', {
        ...options,
        params: { id: activityId },
        body: note === undefined ? {} : { note },
      }),
    resume: (activityId: string, note?: string, options: CallOptions = {}) =>
      this.request('resumeSchedules', {
        ...options,
        params: { id: activityId },
        body: note === undefined ? {} : { note },
      }),
    /**
     * Starts one run now, `manual-{activity_id}:{key}`. The key (generated
     * once per call unless given) is resent on retries, so a retried call is
     * one run.
     */
    trigger: (
      activityId: string,
      options: CallOptions & { idempotencyKey?: string } = {},
    ): Promise<TriggerNowResponse> =>
      this.request('triggerNow', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        params: { id: activityId },
        headers: { 'idempotency-key': options.idempotencyKey ?? randomUUID() },
      }),
    backfill: (
      activityId: string,
      request: z.input<typeof BackfillRequest>,
      options: CallOptions = {},
    ): Promise<BackfillResponse> => this.request('backfill', { ...options, params: { id: activityId }, body: request }),
    /** One page of the fire log, newest nominal time first. */
    fires: (activityId: string, options: FireListOptions = {}): Promise<PageOf<FireRecord>> => {
      const { signal, ...query } = options;
      return this.request('listFires', {
        ...(signal === undefined ? {} : { signal }),
        params: { id: activityId },
        query,
      });
    },
    /** The whole fire log, page by page (pagination helper over `fires`). */
    allFires: (
      activityId: string,
      options: Pageless<FireListOptions> = {},
    ): AsyncGenerator<FireRecord, void, undefined> =>
      paginate((cursor) =>
        this.schedules.fires(activityId, { ...options, ...(cursor === undefined ? {} : { cursor }) }),
      ),
    /** Why did (or didn't) this nominal fire time run? */
    explain: (activityId: string, scheduledFor: string, options: CallOptions = {}): Promise<FireExplanation> =>
      this.request('explainFire', { ...options, params: { id: activityId, scheduled_for: scheduledFor } }),
    /** `compare`: `listing` (default, Temporal's schedule listing) or `describe` (every schedule described, exact). */
    reconcile: (options: CallOptions & { compare?: 'listing' | 'describe' } = {}): Promise<ReconcileResponse> => {
      const { signal, compare } = options;
      return this.request('reconcileSchedules', {
        ...(signal === undefined ? {} : { signal }),
        query: compare === undefined ? {} : { compare },
      });
    },
  };

  /** Webhook sources (management). */
  readonly webhookSources = {
    /** Not retried (a repeat is a 409); `put` is safe to retry. */
    create: (source: z.input<typeof WebhookSourceBody>, options: CallOptions = {}): Promise<WebhookSourceRecord> =>
      this.request('createWebhookSource', { ...options, body: source }),
    /** Creates or replaces the source (this is how a secret is rotated). */
    put: (name: string, source: WebhookSourceInput, options: CallOptions = {}): Promise<WebhookSourceRecord> =>
      this.request('putWebhookSource', { ...options, params: { name }, body: source }),
    list: async (options: CallOptions = {}): Promise<WebhookSourceRecord[]> =>
      (await this.request('listWebhookSources', options)).items,
    get: (name: string, options: CallOptions = {}): Promise<WebhookSourceRecord> =>
      this.request('getWebhookSource', { ...options, params: { name } }),
    delete: async (name: string, options: CallOptions = {}): Promise<void> => {
      await this.request('deleteWebhookSource', { ...options, params: { name } });
    },
  };

  /** Webhook deliveries, as a sender would make them (for tests and relays). */
  readonly webhooks = {
    /** Sends the exact bytes with the sender's signature headers; redeliveries answer `duplicate`. */
    deliver: (
      source: string,
      body: string | Uint8Array,
      headers: Readonly<Record<string, string>>,
      options: CallOptions = {},
    ): Promise<EventAcceptedResponse> =>
      this.request('deliverWebhook', { ...options, params: { source }, body, headers }),
  };

  /** Temporal's remote codec endpoint (only served when payloads are encrypted). */
  readonly codec = {
    decode: (payloads: CodecPayloads, options: CallOptions & { namespace?: string } = {}): Promise<CodecPayloads> =>
      this.request('codecDecode', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        body: payloads,
        headers: { 'x-namespace': options.namespace },
      }),
    encode: (payloads: CodecPayloads, options: CallOptions & { namespace?: string } = {}): Promise<CodecPayloads> =>
      this.request('codecEncode', {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        body: payloads,
        headers: { 'x-namespace': options.namespace },
      }),
  };
}
