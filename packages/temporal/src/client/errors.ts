/**
 * Telling "Temporal could not be reached" from "Temporal refused the request".
 *
 * The client reports a failed call as a `ServiceError` ("Failed to start
 * Workflow", "Failed to connect to Temporal server", ...) whose `cause` is the
 * gRPC error, `{ code, details, metadata }` with the numeric gRPC status code.
 * Unreachable means no answer came back (the call may or may not have taken
 * effect) and the answer is to repeat the same call later, which is safe
 * because the calls are idempotent (REJECT_DUPLICATE starts, schedule writes
 * by id): callers keep the work (an event stays pending, an API request
 * answers 503 "retry later"). Anything else is Temporal's verdict on the
 * request itself (already started, not found, invalid argument) or a bug, and
 * repeating it unchanged would get the same answer.
 */

/** gRPC status codes, as `@grpc/grpc-js` numbers them. */
const INVALID_ARGUMENT = 3;
const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;

/**
 * RESOURCE_EXHAUSTED is also what the gRPC client itself says about a message
 * over its size limit ("Attempted to send message with a size larger than",
 * "Received message larger than max"): a property of the request, not of the
 * server's load.
 */
const MESSAGE_TOO_LARGE = /larger than/i;

/** What `@grpc/grpc-js` rejects `waitForReady` with: `Connection.connect` found no server before its connect timeout. */
const CONNECT_DEADLINE_MESSAGE = 'Failed to connect before the deadline';

/** Our own backstop fired: a call to Temporal outlived the deadline we gave it. */
export class StartTimeoutError extends Error {
  override readonly name = 'StartTimeoutError';
}

/**
 * True when a Temporal call failed because Temporal could not be reached or
 * is shedding load, at any depth of the `cause` chain (five levels):
 *
 * - gRPC UNAVAILABLE (14): no connection, connection dropped, server shutting down;
 * - gRPC DEADLINE_EXCEEDED (4): the client retried an unreachable server until
 *   the call's deadline (`withDeadline`);
 * - gRPC RESOURCE_EXHAUSTED (8) from the server: Temporal is rate limiting or
 *   overloaded; back off as a whole (not the client's own message-size limit);
 * - the client's "Failed to connect before the deadline" (`Connection.connect`);
 * - `StartTimeoutError`, our backstop around a call.
 *
 * Socket errors (ECONNREFUSED, ECONNRESET, ...) reach callers as UNAVAILABLE:
 * the gRPC client never lets them through raw, so a raw one comes from
 * something else (Postgres, in a service that calls both) and is not counted.
 * CANCELLED (1) is not unreachable either: it is this process aborting its own
 * call (shutdown).
 */
export function isTemporalUnreachable(error: unknown): boolean {
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 5; depth++) {
    if (current instanceof StartTimeoutError) return true;
    const { code, details, message } = current as { code?: unknown; details?: unknown; message?: unknown };
    if (code === UNAVAILABLE || code === DEADLINE_EXCEEDED) return true;
    if (code === RESOURCE_EXHAUSTED) return !(typeof details === 'string' && MESSAGE_TOO_LARGE.test(details));
    if (message === CONNECT_DEADLINE_MESSAGE) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * True when Temporal (or the gRPC client, for a message over its size limit)
 * refused a request for good: asking again unchanged gets the same answer,
 * whatever the time. gRPC INVALID_ARGUMENT (3) — such as "Blob data size
 * exceeds limit" for an input over the payload limit — and the client's own
 * RESOURCE_EXHAUSTED "larger than" a message limit. "Already started" is not
 * an error at all (the starter answers `duplicate`), and an unreachable
 * Temporal never is one (`isTemporalUnreachable`). Searched like that, five
 * levels of `cause`.
 */
export function isPermanentRefusal(error: unknown): boolean {
  if (isTemporalUnreachable(error)) return false;
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 5; depth++) {
    const { code, details } = current as { code?: unknown; details?: unknown };
    if (code === INVALID_ARGUMENT) return true;
    if (code === RESOURCE_EXHAUSTED && typeof details === 'string' && MESSAGE_TOO_LARGE.test(details)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A Temporal call's failure in words, with what its causes say (five levels):
 * the client's "Failed to start Workflow" alone does not say why, its gRPC
 * cause does ("3 INVALID_ARGUMENT: Blob data size exceeds limit.").
 */
export function describeTemporalError(error: unknown): string {
  const parts: string[] = [];
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 5; depth++) {
    const { message } = current as { message?: unknown };
    if (typeof message === 'string' && message !== '' && !parts.some((part) => part.includes(message)))
      parts.push(message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.length === 0 ? String(error) : parts.join(': ');
}
