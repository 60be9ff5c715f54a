import { ConflictError, InvalidInputError, UnavailableError } from '@activity-core/contracts';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import {
  DatabaseUnreachableError,
  failedToConnect,
  isConnectionError,
  pgFaultOfCode,
  answeredWithError,
  translatePgError,
  UniqueViolationError,
  UnstorableTextError,
} from './errors';

/** An error as the pg driver builds it from a server ErrorResponse. */
function databaseError(code: string, message: string, fields: Partial<pg.DatabaseError> = {}): pg.DatabaseError {
  const error = new pg.DatabaseError(message, message.length, 'error');
  Object.assign(error, { severity: 'ERROR', code, ...fields });
  return error;
}

/** How drizzle hands a failed statement to its caller: the driver's error is the cause. */
const failedQuery = (cause: Error) =>
  new DrizzleQueryError('insert into "activity_definitions" ("name") values ($1)', ['x'], cause);

/** A socket error as Node reports it. */
const socketError = (code: string, message: string) =>
  Object.assign(new Error(message), { code, errno: -111, syscall: 'connect' });

describe('unique violations', () => {
  test('a unique violation becomes a UniqueViolationError naming the constraint, with the driver error as its cause', () => {
    const driver = databaseError(
      '23505',
      'duplicate key value violates unique constraint "activity_definitions_name_live_uq"',
      {
        constraint: 'activity_definitions_name_live_uq',
        table: 'activity_definitions',
      },
    );
    const translated = translatePgError(failedQuery(driver));
    expect(translated).toBeInstanceOf(UniqueViolationError);
    expect((translated as UniqueViolationError).constraint).toBe('activity_definitions_name_live_uq');
    expect((translated as Error).cause).toBeInstanceOf(DrizzleQueryError);
  });

  test('a unique violation thrown by the driver directly is translated the same way', () => {
    const translated = translatePgError(
      databaseError('23505', 'duplicate key value violates unique constraint "activity_definitions_pkey"', {
        constraint: 'activity_definitions_pkey',
      }),
    );
    expect(translated).toMatchObject({ name: 'UniqueViolationError', constraint: 'activity_definitions_pkey' });
  });
});

describe('lost connections', () => {
  test.each([
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'terminating connection due to crash of another server process'],
    ['57P03', 'the database system is starting up'],
    ['53300', 'sorry, too many clients already'],
    ['08006', 'connection failure'],
    ['08P01', 'protocol violation'],
  ])('SQLSTATE %s (%s) means Postgres is unreachable: a 503-class DatabaseUnreachableError', (code, message) => {
    const driver = databaseError(code, message);
    for (const error of [driver, failedQuery(driver)]) {
      const translated = translatePgError(error);
      expect(translated).toBeInstanceOf(DatabaseUnreachableError);
      expect(translated).toBeInstanceOf(UnavailableError);
      expect((translated as Error).cause).toBe(error);
      expect(isConnectionError(error)).toBe(true);
    }
  });

  test.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EPIPE'])(
    'a socket error %s means Postgres is unreachable',
    (code) => {
      const error = socketError(code, `connect ${code} 127.0.0.1:5432`);
      expect(translatePgError(error)).toBeInstanceOf(DatabaseUnreachableError);
      expect(isConnectionError(failedQuery(error))).toBe(true);
    },
  );

  test.each([
    'timeout exceeded when trying to connect',
    'Connection terminated unexpectedly',
    'Client has encountered a connection error and is not queryable',
    'Client was closed and is not queryable',
  ])('the driver and pool failure "%s", which carries no code, means Postgres is unreachable', (message) => {
    expect(translatePgError(new Error(message))).toBeInstanceOf(DatabaseUnreachableError);
    expect(isConnectionError(failedQuery(new Error(message)))).toBe(true);
  });

  test('the pool connect timeout is recognised through its cause', () => {
    const error = new Error('Connection terminated due to connection timeout', {
      cause: new Error('Connection terminated unexpectedly'),
    });
    expect(isConnectionError(error)).toBe(true);
  });

  test('an error already translated stays what it is', () => {
    const unreachable = new DatabaseUnreachableError();
    expect(translatePgError(unreachable)).toBe(unreachable);
    expect(isConnectionError(unreachable)).toBe(true);
  });
});

describe('failures that sent nothing', () => {
  test.each([
    ['a refused connection', socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['an unknown host', socketError('ENOTFOUND', 'getaddrinfo ENOTFOUND db')],
    ['a server starting up or shutting down', databaseError('57P03', 'the database system is shutting down')],
    ['a server with no session left', databaseError('53300', 'sorry, too many clients already')],
    ['the pool connect timeout', new Error('timeout exceeded when trying to connect')],
    ['the client connect timeout', new Error('Connection terminated due to connection timeout')],
  ])('%s happens before any statement is sent, behind drizzle too', (_, error) => {
    expect(failedToConnect(error)).toBe(true);
    expect(failedToConnect(failedQuery(error))).toBe(true);
  });

  test.each([
    ['an administrator shutdown', databaseError('57P01', 'terminating connection due to administrator command')],
    ['a reset connection', socketError('ECONNRESET', 'read ECONNRESET')],
    ['a connection that ended', new Error('Connection terminated unexpectedly')],
    ['a broken pipe', socketError('EPIPE', 'write EPIPE')],
    // An open connection reports it too when its retransmissions time out after an ICMP "unreachable".
    ['no route to the host', socketError('EHOSTUNREACH', 'read EHOSTUNREACH')],
    ['a bad statement', databaseError('42601', 'syntax error')],
  ])('%s may have happened after the statement was sent', (_, error) => {
    expect(failedToConnect(failedQuery(error))).toBe(false);
  });

  test("words in a statement's parameters are not a connect failure", () => {
    const error = new DrizzleQueryError('insert …', ['timeout exceeded when trying to connect'], new Error('boom'));
    expect(failedToConnect(error)).toBe(false);
  });
});

describe('statements Postgres answered with an error', () => {
  test.each([
    ['a NUL character in jsonb', databaseError('22P05', 'unsupported Unicode escape sequence')],
    ['a number out of range', databaseError('22003', 'value out of range')],
    ['a check constraint', databaseError('23514', 'new row violates check constraint')],
    ['a statement timeout', databaseError('57014', 'canceling statement due to statement timeout')],
    ['a lock timeout', databaseError('55P03', 'canceling statement due to lock timeout')],
    ['a deadlock', databaseError('40P01', 'deadlock detected')],
  ])('%s was answered, so rolled back, behind drizzle too', (_, error) => {
    expect(answeredWithError(error)).toBe(true);
    expect(answeredWithError(failedQuery(error))).toBe(true);
  });

  test.each([
    ['an administrator shutdown', databaseError('57P01', 'terminating connection due to administrator command')],
    ['a server out of sessions', databaseError('53300', 'sorry, too many clients already')],
    ['a connection failure', databaseError('08006', 'connection failure')],
    ['a reset connection', socketError('ECONNRESET', 'read ECONNRESET')],
    ['a broken pipe', socketError('EPIPE', 'write EPIPE')],
    ['a connection that ended', new Error('Connection terminated unexpectedly')],
  ])('%s is not', (_, error) => {
    expect(answeredWithError(failedQuery(error))).toBe(false);
  });
});

describe('text Postgres cannot store', () => {
  test.each([
    ['22P05', 'unsupported Unicode escape sequence'],
    ['22021', 'invalid byte sequence for encoding "UTF8": 0x00'],
    ['22P02', 'invalid input syntax for type json'],
  ])('SQLSTATE %s is bad input, an UnstorableTextError (400), not a server fault', (code, message) => {
    const translated = translatePgError(failedQuery(databaseError(code, message)));
    expect(translated).toBeInstanceOf(UnstorableTextError);
    expect(translated).toBeInstanceOf(InvalidInputError);
    expect(isConnectionError(failedQuery(databaseError(code, message)))).toBe(false);
  });
});

describe('everything else', () => {
  test('other database errors, plain errors and non-errors are returned untouched', () => {
    const raised = failedQuery(databaseError('P0001', 'test fault for e1'));
    const deadlock = databaseError('40P01', 'deadlock detected');
    const plain = new RangeError('Maximum call stack size exceeded');
    const conflict = new ConflictError('activity a1 was deleted');
    for (const error of [raised, deadlock, plain, conflict, 'a string', undefined, null]) {
      expect(translatePgError(error)).toBe(error);
      expect(isConnectionError(error)).toBe(false);
    }
  });

  test("words in a statement's parameters never make a failure look like a lost connection", () => {
    // The parameters are user data (an event's payload): drizzle puts them into its message.
    const userData = ['{"note":"Connection terminated; not queryable; Client was closed"}'];
    const failed = new DrizzleQueryError(
      'insert into "events" ("data") values ($1)',
      userData,
      databaseError('P0001', 'test fault for e2'),
    );
    expect(translatePgError(failed)).toBe(failed);
    expect(isConnectionError(failed)).toBe(false);
    // The driver's own words below the wrapper still count.
    const lost = new DrizzleQueryError('select 1', [], new Error('Connection terminated unexpectedly'));
    expect(isConnectionError(lost)).toBe(true);
  });

  test('a cause chain that loops ends the search instead of hanging', () => {
    const looped: Error & { cause?: unknown } = new Error('outer');
    looped.cause = looped;
    expect(translatePgError(looped)).toBe(looped);
  });

  test('codes that are not faults are not classified', () => {
    expect(pgFaultOfCode('23503')).toBeUndefined();
    expect(pgFaultOfCode(14)).toBeUndefined();
    expect(pgFaultOfCode(undefined)).toBeUndefined();
    expect(pgFaultOfCode('08003')).toBe('connection_lost');
  });
});
