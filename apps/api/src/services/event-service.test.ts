import { createHash } from 'node:crypto';
import type { EventAcceptedWithRoutes, EventEnvelope, EventIdOrigin } from '@activity-core/contracts';
import { batchItemEventId, ForbiddenError, InvalidInputError, UnavailableError } from '@activity-core/contracts';
import { StoreUnreachableError, type IngestOrigin } from '@activity-core/router';
import { describe, expect, test } from 'vitest';
import { batchItemAnswer } from '../routes/event-answers';
import { createEventService, credentialLabel, reservedSourceReason, scopePatternMatches } from './event-service';

const event = (fields: Partial<EventEnvelope> = {}) => ({
  event_type: 'order.paid',
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: {},
  ...fields,
});
const receivedAt = new Date('2026-03-01T09:00:01Z');

function recordingIngest(fail?: (envelope: EventEnvelope) => Error | undefined) {
  const calls: Array<{ envelope: EventEnvelope; idOrigin: EventIdOrigin; origin: IngestOrigin | undefined }> = [];
  return {
    calls,
    ingest: {
      async ingest(
        envelope: EventEnvelope,
        idOrigin: EventIdOrigin,
        origin?: IngestOrigin,
      ): Promise<EventAcceptedWithRoutes> {
        const error = fail?.(envelope);
        if (error !== undefined) throw error;
        calls.push({ envelope, idOrigin, origin });
        return {
          event_id: envelope.event_id,
          event_id_assigned: idOrigin === 'assigned',
          status: 'accepted',
          runs: [],
          filtered: [],
        };
      },
    },
  };
}

const noEvents = { get: async () => undefined };

/** The glob as a (backtracking) regular expression: the reference for small inputs. */
const globReference = (pattern: string, value: string): boolean =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  ).test(value);

describe('scope patterns', () => {
  test('the linear matcher agrees with the regular-expression reading of the glob on every small pattern and value', () => {
    const alphabet = ['a', 'b', '*'];
    const words = (length: number, letters: string[]): string[] =>
      length === 0 ? [''] : words(length - 1, letters).flatMap((w) => letters.map((l) => w + l));
    const patterns = [0, 1, 2, 3, 4].flatMap((n) => words(n, alphabet));
    const values = [0, 1, 2, 3, 4].flatMap((n) => words(n, ['a', 'b']));
    for (const pattern of patterns)
      for (const value of values)
        expect(scopePatternMatches(pattern, value), `${pattern} ~ ${value}`).toBe(globReference(pattern, value));
  });
});

describe('reserved sources', () => {
  test('webhook sources and the service own source are reserved, others are not', () => {
    expect(reservedSourceReason('webhook:github')).toMatch(/verified webhook deliveries/);
    expect(reservedSourceReason('activity-core')).toMatch(/emits itself/);
    expect(reservedSourceReason('activity-core:billing')).toMatch(/emits itself/);
    expect(reservedSourceReason('shop')).toBeUndefined();
    expect(reservedSourceReason('activity-corex')).toBeUndefined();
  });

  test('a configured webhook source custom event_source is reserved too', () => {
    expect(reservedSourceReason('github-prod', new Map([['github-prod', 'gh']]))).toMatch(/webhook source "gh"/);
  });
});

describe('ingest key scopes', () => {
  test('a star matches any run of characters and the rest matches literally', () => {
    expect(scopePatternMatches('shop:*', 'shop:eu')).toBe(true);
    expect(scopePatternMatches('shop:*', 'shopx')).toBe(false);
    expect(scopePatternMatches('order.*', 'order.paid')).toBe(true);
    expect(scopePatternMatches('order.*', 'orderXpaid')).toBe(false);
    expect(scopePatternMatches('*', 'anything at all')).toBe(true);
    expect(scopePatternMatches('a*c', 'abbbc')).toBe(true);
    expect(scopePatternMatches('(x)', '(x)')).toBe(true);
    // The text before the first and after the last star must not overlap.
    expect(scopePatternMatches('a*a', 'a')).toBe(false);
    expect(scopePatternMatches('ab*b', 'ab')).toBe(false);
    expect(scopePatternMatches('a*b*c', 'acb')).toBe(false);
    expect(scopePatternMatches('a*b*c', 'abc')).toBe(true);
    expect(scopePatternMatches('**', '')).toBe(true);
  });

  test('a scoped ingest key outside its scope is refused naming each field and its allowed patterns', async () => {
    const { ingest, calls } = recordingIngest();
    const service = createEventService({
      ingest,
      events: noEvents,
      ingestKeyScopes: { abcdef012345: { sources: ['shop:*'], event_types: ['order.*'] } },
    });
    const credential = { kind: 'ingest_key' as const, id: 'abcdef012345' };
    const refused = await service
      .accept(event({ source: 'crm', event_type: 'user.created' }), { receivedAt, credential })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ForbiddenError);
    expect((refused as ForbiddenError).issues.map((issue) => issue.path)).toEqual(['source', 'event_type']);
    expect((refused as ForbiddenError).issues[0]?.message).toContain('"shop:*"');
    await service.accept(event({ source: 'shop:eu' }), { receivedAt, credential });
    expect(calls.map((call) => call.origin?.credential)).toEqual(['ingest_key:abcdef012345']);
  });

  test('API keys and unscoped ingest keys are not limited, but still cannot use reserved sources', async () => {
    const { ingest } = recordingIngest();
    const service = createEventService({
      ingest,
      events: noEvents,
      ingestKeyScopes: { abcdef012345: { sources: ['shop:*'] } },
    });
    await service.accept(event({ source: 'crm' }), { receivedAt, credential: { kind: 'api_key', id: 'abcdef012345' } });
    await service.accept(event({ source: 'crm' }), {
      receivedAt,
      credential: { kind: 'ingest_key', id: '000000000000' },
    });
    await expect(
      service.accept(event({ source: 'webhook:github' }), { receivedAt, credential: { kind: 'api_key', id: 'x' } }),
    ).rejects.toBeInstanceOf(InvalidInputError);
  });

  test('the recorded credential names the key set and id, or anonymous while auth is off', () => {
    expect(credentialLabel(undefined)).toBe('anonymous');
    expect(
      credentialLabel({ kind: 'ingest_key', id: createHash('sha256').update('k').digest('hex').slice(0, 12) }),
    ).toMatch(/^ingest_key:[0-9a-f]{12}$/);
  });
});

describe('batches', () => {
  test('an unexpected error in one item is that item 500 and the others are still accepted', async () => {
    const { ingest, calls } = recordingIngest((envelope) =>
      envelope.event_id === 'b' ? new RangeError('Maximum call stack size exceeded') : undefined,
    );
    const logged: unknown[] = [];
    const service = createEventService({
      ingest,
      events: noEvents,
      logger: { error: (...args: unknown[]) => void logged.push(args) } as never,
    });
    const results = (
      await service.acceptBatch([event({ event_id: 'a' }), event({ event_id: 'b' }), event({ event_id: 'c' })], {
        receivedAt,
      })
    ).map(batchItemAnswer);
    expect(results.map((result) => (result.ok ? 202 : result.status))).toEqual([202, 500, 202]);
    expect(results[1]).toMatchObject({ ok: false, event_id: 'b' });
    expect(calls.map((call) => call.envelope.event_id)).toEqual(['a', 'c']);
    expect(logged).toHaveLength(1);
  });

  test('with an Idempotency-Key, items without an event_id get ids derived from key and index', async () => {
    const { ingest, calls } = recordingIngest();
    const service = createEventService({ ingest, events: noEvents });
    await service.acceptBatch([event(), event({ event_id: 'own' }), event()], { receivedAt, idempotencyKey: 'k1' });
    expect(calls.map((call) => [call.envelope.event_id, call.idOrigin])).toEqual([
      [batchItemEventId('k1', 0), 'idempotency_key'],
      ['own', 'body'],
      [batchItemEventId('k1', 2), 'idempotency_key'],
    ]);
  });

  test('failed items carry their assigned id so they can be resent without doubling', async () => {
    const { ingest } = recordingIngest(() => new StoreUnreachableError(false));
    const service = createEventService({ ingest, events: noEvents });
    const results = (await service.acceptBatch([event()], { receivedAt })).map(batchItemAnswer);
    expect(results[0]).toMatchObject({ ok: false, status: 503, event_id: expect.stringMatching(/^evt_/) });
  });

  test('the whole batch is 503 only when the store was unreachable before any item could be written', async () => {
    const before = createEventService({
      ingest: recordingIngest(() => new StoreUnreachableError(true)).ingest,
      events: noEvents,
    });
    await expect(before.acceptBatch([event(), event()], { receivedAt })).rejects.toBeInstanceOf(UnavailableError);
    const during = createEventService({
      ingest: recordingIngest(() => new StoreUnreachableError(false)).ingest,
      events: noEvents,
    });
    expect(
      (await during.acceptBatch([event(), event()], { receivedAt })).map(batchItemAnswer).map((result) => result.ok),
    ).toEqual([false, false]);
  });
});
