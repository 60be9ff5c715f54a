import { DomainError, InvalidInputError, UnavailableError } from '@activity-core/contracts';
import { DrizzleQueryError } from 'drizzle-orm/errors';

/**
 * The one place that reads Postgres and driver error codes. Everything
 * outside packages/db asks `translatePgError` (or `isConnectionError`) what
 * an error means instead of looking at SQLSTATEs or socket codes itself.
 *
 * Three faults are translated; every other error is returned untouched:
 * - a unique constraint refused a row → `UniqueViolationError` (names the constraint);
 * - Postgres could not be reached or dropped the connection → `DatabaseUnreachableError` (503);
 * - Postgres refused a value's text (a NUL character, …) → `UnstorableTextError` (400).
 */

/** SQLSTATE 23505 unique_violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * Postgres refused the text itself, so the input is bad, not the server:
 * 22P05 untranslatable_character (a NUL in jsonb), 22021
 * character_not_in_repertoire (a NUL in text), 22P02 invalid_text_representation.
 */
const UNSTORABLE_TEXT = new Set(['22P05', '22021', '22P02']);

/**
 * The server is going away or refuses connections: 57P01 admin_shutdown,
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up or shutting
 * down), 53300 too_many_connections; and every class 08 connection_exception.
 */
const CONNECTION_LOST_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** The socket could not be opened or broke under the driver. */
const CONNECTION_LOST_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EPIPE',
]);

/**
 * Connection failures pg and pg-pool report without a code: the pool's
 * connect timeout, a server that closed the socket, a client that already
 * lost its connection ("not queryable") or was released.
 */
const CONNECTION_LOST_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|not queryable|Client was closed/i;

/** How deep a cause chain is followed (drizzle wraps the driver's error in a DrizzleQueryError). */
const MAX_CAUSE_DEPTH = 5;

export type PgFault = 'unique_violation' | 'unstorable_text' | 'connection_lost';

/** The fault one error code names, a SQLSTATE or a socket error code; undefined for any other. */
export function pgFaultOfCode(code: unknown): PgFault | undefined {
  if (typeof code !== 'string') return undefined;
  if (code === UNIQUE_VIOLATION) return 'unique_violation';
  if (UNSTORABLE_TEXT.has(code)) return 'unstorable_text';
  if (CONNECTION_LOST_SQLSTATES.has(code) || CONNECTION_LOST_SOCKET_CODES.has(code) || code.startsWith('08'))
    return 'connection_lost';
  return undefined;
}

/** The error and its causes, outermost first, as far as MAX_CAUSE_DEPTH (a chain that loops ends there). */
function* causeChain(error: unknown): Generator<object> {
  for (
    let current = error, depth = 0;
    current !== null && typeof current === 'object' && depth <= MAX_CAUSE_DEPTH;
    depth++
  ) {
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}

/** The first level of the chain whose `code` is one of `codes`. */
export function findCode(error: unknown, codes: ReadonlySet<string>): object | undefined {
  for (const level of causeChain(error)) {
    const code = (level as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return level;
  }
  return undefined;
}

/**
 * The first level of the chain whose message, in the driver's own words,
 * matches. A drizzle query error's message carries the statement's
 * parameters, i.e. user data: an event whose data says "not queryable" must
 * not turn another failure into "Postgres is unreachable", so such levels are
 * not read.
 */
function findDriverMessage(error: unknown, pattern: RegExp): object | undefined {
  for (const level of causeChain(error)) {
    const message = (level as { message?: unknown }).message;
    const carriesParameters = level instanceof DrizzleQueryError || 'params' in level;
    if (!carriesParameters && typeof message === 'string' && pattern.test(message)) return level;
  }
  return undefined;
}

/** The first level of the cause chain that names a fault, with the fault. */
function findFault(error: unknown): { fault: PgFault; at: object } | undefined {
  for (const level of causeChain(error)) {
    const fault = pgFaultOfCode((level as { code?: unknown }).code);
    if (fault !== undefined) return { fault, at: level };
  }
  // No code anywhere: pg and pg-pool say some connection failures only in words.
  const at = findDriverMessage(error, CONNECTION_LOST_MESSAGE);
  return at === undefined ? undefined : { fault: 'connection_lost', at };
}

/** A unique constraint refused a row. */
export class UniqueViolationError extends Error {
  override readonly name = 'UniqueViolationError';

  constructor(
    /** The constraint (or unique index) Postgres named, when it named one. */
    readonly constraint: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(`unique constraint ${constraint ?? '(unnamed)'} refused the row`, options);
  }
}

/** Postgres could not be reached, or dropped the connection: the caller should retry later. */
export class DatabaseUnreachableError extends UnavailableError {
  constructor(message = 'a dependency is unreachable; retry later', options?: { cause?: unknown }) {
    super(message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** Postgres refused a value's text (e.g. a NUL character `\u0000`): the input is bad, not the server. */
export class UnstorableTextError extends InvalidInputError {
  constructor(options?: { cause?: unknown }) {
    super('the request contains text that cannot be stored (e.g. a NUL character \\u0000)');
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * What a Postgres or driver error means, as a typed error: the unique
 * violation, lost connection or unstorable text it is (anywhere along its
 * cause chain), with the original as `cause`. Any other error, and a domain
 * error already translated, is returned as it is.
 */
export function translatePgError(error: unknown): unknown {
  if (error instanceof DomainError || error instanceof UniqueViolationError) return error;
  const found = findFault(error);
  switch (found?.fault) {
    case undefined:
      return error;
    case 'unique_violation':
      return new UniqueViolationError((found.at as { constraint?: string }).constraint, { cause: error });
    case 'unstorable_text':
      return new UnstorableTextError({ cause: error });
    case 'connection_lost':
      return new DatabaseUnreachableError(undefined, { cause: error });
  }
}

/**
 * Failures that happen only while a connection is being opened: refused,
 * no such host, the connect timeout, and the server refusing a new session
 * (57P03 cannot_connect_now, 53300 too_many_connections, 08001, 08004). No
 * statement was sent on such a connection. Not EHOSTUNREACH: an open
 * connection reports it too, when its retransmissions time out after an
 * ICMP "unreachable" — possibly after the statement committed.
 */
const CONNECT_PHASE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', '57P03', '53300', '08001', '08004']);
const CONNECT_PHASE_MESSAGE = /timeout exceeded when trying to connect|due to connection timeout|connect ECONNREFUSED/i;

/**
 * True when the error says the connection could not be opened, so the
 * statement it was opened for never reached Postgres: nothing it would have
 * written was written. False for anything else, a connection lost in the
 * middle of a statement included (which may have committed).
 */
export function failedToConnect(error: unknown): boolean {
  return (
    findCode(error, CONNECT_PHASE_CODES) !== undefined || findDriverMessage(error, CONNECT_PHASE_MESSAGE) !== undefined
  );
}

/** True when the error means Postgres could not be reached (as opposed to a bad query). */
export function isConnectionError(error: unknown): boolean {
  return error instanceof DatabaseUnreachableError || findFault(error)?.fault === 'connection_lost';
}

/**
 * True when Postgres answered the statement with an error of its own (a
 * server ErrorResponse: a value it refused, a constraint, a statement or
 * lock timeout, a cancelled query, a deadlock), other than the server going
 * away. Postgres sends such an answer only after rolling the statement back:
 * nothing of it is stored. A connection lost without an answer is not one:
 * the statement may have committed.
 */
export function answeredWithError(error: unknown): boolean {
  for (const level of causeChain(error)) {
    const { code, severity } = level as { code?: unknown; severity?: unknown };
    if (typeof code === 'string' && typeof severity === 'string' && /^[0-9A-Z]{5}$/.test(code))
      return pgFaultOfCode(code) !== 'connection_lost';
  }
  return false;
}
