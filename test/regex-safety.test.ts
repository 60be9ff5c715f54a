/**
 * No regular expression (or scanner) that sees user input may take
 * super-linear time. Each audited function gets worst-case inputs of the
 * body limit's size (1 MiB) and must finish within a fixed multiple of its
 * time on a benign input of the same size: a linear implementation is well
 * inside it, a quadratic one misses it by orders of magnitude (the old
 * secrets-placeholder regex took minutes on `{{secrets` repeated).
 *
 * Audited and not listed here, because no user input reaches them: the
 * configuration's regexes (packages/config: operator environment), the
 * driver and library error-message tests (packages/db client.ts,
 * packages/webhooks standard-webhooks.ts), filter compile-error rewriting
 * (compile-filter.ts: a message of ours), ids built from our own UUIDs
 * (ids.ts `uuid.replace`), the API key digests (auth.ts PREHASHED: config),
 * and schedule-manager's Temporal UI URL and normalised cron (stored,
 * already-validated definitions). Filter `matches()` patterns run on RE2
 * (no backtracking) after safe-regex.ts bounds their size.
 */
import { describe, expect, test } from 'vitest';
import {
  ActivityName,
  CronTrigger,
  EventEnvelopeInput,
  EventTypePattern,
  findSecretPlaceholders,
  HttpTaskConfig,
  isJsonMediaType,
  isLowercaseUuid,
  isSecondsCron,
  parseDurationMs,
  parseIdempotencyKey,
  parseScheduledFor,
  reservedEventIdReason,
  secretPlaceholderIssues,
  toScheduledFor,
} from '@activity-core/contracts';
import { compileFilter, evaluateFilter } from '@activity-core/filters';
import { toTemporalCronString } from '@activity-core/scheduling';
import { bearer } from '../apps/api/src/plugins/auth';
import { contentModeOf, decodeHeaderValue } from '../apps/api/src/routes/cloudevents-http';
import { scopePatternMatches } from '../apps/api/src/services/event-service';
import { formatPath } from '../apps/api/src/plugins/problem';
import { parseRfc3339 } from '../packages/filters/src/envelope-variables';
import { estimateRegexSize } from '../packages/filters/src/safe-regex';
import { renderString, renderUrl } from '../packages/temporal/src/effects/templating';
import { decodeHex } from '../packages/webhooks/src/digest';
import { parseUnixSeconds, tryParseUnixSeconds } from '../packages/webhooks/src/timestamp';

/** The default request body limit (BODY_LIMIT_BYTES): the most text one request can bring. */
const SIZE = 1024 * 1024;
/** Worst case may be this many times slower than benign input of the same size. */
const MAX_RATIO = 20;
/**
 * Benign times below this are noise (timers, GC, a loaded machine); the ratio
 * is taken against at least this. A quadratic function on 1 MiB costs seconds
 * to minutes, so the bound stays far from both.
 */
const FLOOR_MS = 50;

/** `unit` repeated to exactly SIZE characters (cut), then `tail`. */
const fill = (unit: string, tail = ''): string =>
  unit.repeat(Math.ceil((SIZE - tail.length) / unit.length)).slice(0, SIZE - tail.length) + tail;
const BENIGN = fill('The quick brown fox jumps over the lazy dog. ');
const quietly = (run: () => unknown) => (): void => {
  try {
    run();
  } catch {
    // Refusing the input is fine; the time to refuse it is what is measured.
  }
};

interface AuditedFunction {
  name: string;
  /** Where the input comes from. */
  input: string;
  run: (text: string) => unknown;
  worst: string[];
  /** Ordinary input of the same size doing comparable work. @default English prose */
  benign?: string;
}

const envelope = (data: Record<string, unknown>) => ({
  event_id: 'e',
  event_type: 't',
  source: 's',
  occurred_at: '2026-01-01T00:00:00Z',
  data,
});
const regexFilter = compileFilter('data.s.matches("^(a+)+$")');
const context = { event: envelope({ id: 1 }) };

/** Every function with a regular expression (or a scanner replacing one) that user input reaches. */
const AUDITED: AuditedFunction[] = [
  {
    name: 'findSecretPlaceholders',
    input: 'definition strings',
    run: findSecretPlaceholders,
    worst: [fill('{{secrets'), fill('{{ secrets.A'), fill('{{secrets.A }'), `{{${fill(' ')}`.slice(0, SIZE)],
  },
  {
    name: 'secretPlaceholderIssues',
    input: 'definition JSON',
    run: (text) => secretPlaceholderIssues({ body: { text }, [text.slice(0, 1000)]: text }),
    worst: [fill('{{secrets'), fill('{{secrets}}')],
    benign: fill('Bearer {{ secrets.TOKEN }} '),
  },
  {
    name: 'HttpTaskConfig (url origin, secrets)',
    input: 'definition http config',
    run: (text) => HttpTaskConfig.safeParse({ url: `https://h.test/${text}`, headers: { a: text }, body: text }),
    worst: [fill('{{secrets'), fill('/')],
  },
  {
    name: 'HttpTaskConfig url origin',
    input: 'definition url',
    run: (text) => HttpTaskConfig.safeParse({ url: `http://${text}` }),
    worst: [fill('a'), fill('{{')],
  },
  {
    name: 'parseIdempotencyKey',
    input: 'Idempotency-Key header',
    run: parseIdempotencyKey,
    worst: [`"${fill('\\"')}`, `"${fill('\\')}`, `"${fill('a')}`],
  },
  {
    name: 'EventEnvelopeInput (event_id, event_type, occurred_at)',
    input: 'event body',
    run: (text) =>
      EventEnvelopeInput.safeParse({ event_id: text, event_type: text, source: 's', occurred_at: text, subject: text }),
    worst: [fill('a', ' '), fill('2026-01-01T00:00:00'), fill('1')],
  },
  {
    name: 'EventTypePattern',
    input: 'definition trigger',
    run: (text) => EventTypePattern.safeParse(text),
    worst: [fill('a.', '!'), fill('a.*', '!'), fill('a', '.*!')],
  },
  {
    name: 'ActivityName',
    input: 'definition name',
    run: (text) => ActivityName.safeParse(text),
    worst: [fill('a', '!')],
  },
  {
    name: 'parseDurationMs',
    input: 'definition durations',
    run: (text) => quietly(() => parseDurationMs(text))(),
    worst: [fill('1'), fill('1', 'ms ')],
  },
  {
    name: 'CronTrigger (field split, croner)',
    input: 'definition cron',
    run: (text) => CronTrigger.safeParse({ type: 'cron', cron: text }),
    worst: [fill(' ', 'x'), fill('* '), fill('1,'), fill('*/')],
  },
  { name: 'isSecondsCron', input: 'definition cron', run: isSecondsCron, worst: [fill(' \t'), fill('* ')] },
  {
    name: 'toTemporalCronString',
    input: 'definition cron',
    run: (text) => quietly(() => toTemporalCronString(text))(),
    worst: [fill(' ', 'x'), `* * * * ${fill('1,')}`.slice(0, SIZE)],
  },
  {
    name: 'reservedEventIdReason / isLowercaseUuid',
    input: 'event id',
    run: (text) => [reservedEventIdReason(text), isLowercaseUuid(text)],
    worst: [fill('2026-01-01T00:00:00+00:00'), fill('0')],
  },
  {
    name: 'toScheduledFor / parseScheduledFor',
    input: 'scheduled_for in API paths, queries and backfill bodies',
    run: (text) => [quietly(() => toScheduledFor(text))(), quietly(() => parseScheduledFor(text))()],
    worst: [
      `2026-01-01T00:00:00.${fill('1', 'x')}`.slice(0, SIZE),
      fill('2026-01-01T00:00:00'),
      `2026-01-01T00:00:00${fill('+00:00')}`.slice(0, SIZE),
    ],
  },
  {
    name: 'parseRfc3339',
    input: 'event occurred_at (filters)',
    run: parseRfc3339,
    worst: [`2026-01-01T00:00:00.${fill('1', 'x')}`.slice(0, SIZE), fill('2026-01-01T00:00:00')],
  },
  {
    name: 'estimateRegexSize',
    input: 'filter matches() pattern',
    run: estimateRegexSize,
    worst: [fill('\\Q'), fill('\\p{'), fill('['), fill('(?'), fill('{1,'), fill('(')],
    benign: fill('(?i)'),
  },
  {
    name: 'evaluateFilter matches()',
    input: 'event data (filters)',
    run: (text) => regexFilter.ok && evaluateFilter(regexFilter.filter, envelope({ s: text })),
    worst: [fill('a', '!')],
  },
  { name: 'decodeHex', input: 'webhook signature header', run: decodeHex, worst: [fill('a', 'x'), fill('ab', 'a')] },
  {
    name: 'parseUnixSeconds / tryParseUnixSeconds',
    input: 'webhook timestamp header',
    run: (text) => [quietly(() => parseUnixSeconds('h', text))(), tryParseUnixSeconds(text)],
    worst: [fill('1')],
  },
  {
    name: 'bearer',
    input: 'Authorization header',
    run: (text) => bearer({ headers: { authorization: text } } as Parameters<typeof bearer>[0]),
    worst: [`Bearer ${fill('a ')}`.slice(0, SIZE), `Bearer${fill(' ', 'x y')}`],
  },
  {
    name: 'scopePatternMatches',
    input: 'event source / event_type against INGEST_KEY_SCOPES patterns',
    run: (text) => [
      scopePatternMatches('*:*:*:*:x', text),
      scopePatternMatches('*.*.*.*.*.paid', text),
      scopePatternMatches('shop:*:*:*:orders', text),
    ],
    worst: [fill(':'), fill('.'), fill('shop:')],
  },
  {
    name: 'isJsonMediaType / contentModeOf',
    input: 'Content-Type header, CloudEvent datacontenttype',
    run: (text) => [isJsonMediaType(text), quietly(() => contentModeOf(text, true))()],
    worst: [
      `application/${fill('a.')}`.slice(0, SIZE),
      `application/${fill('+')}`.slice(0, SIZE),
      fill(';'),
      `application/${fill('a', '+jso')}`.slice(0, SIZE),
    ],
  },
  {
    name: 'decodeHeaderValue',
    input: 'CloudEvents binary-mode ce-* header values',
    run: (text) => quietly(() => decodeHeaderValue(text))(),
    worst: [fill('%41'), fill('%E2%82%AC'), `"${fill('\\"')}`.slice(0, SIZE), fill('%', 'x')],
  },
  {
    name: 'formatPath',
    input: 'field paths from request bodies',
    run: formatPath,
    worst: [fill('/0'), fill('/')],
    benign: fill('/items/0/name'),
  },
  {
    name: 'renderString (templating, helper A)',
    input: 'definition templates',
    run: (text) => quietly(() => renderString(text, context))(),
    worst: [`{{a${fill('.a')}`.slice(0, SIZE), `{{${fill(' ')}`.slice(0, SIZE), fill('{{a'), `{{ a${fill(' ', '}')}`],
  },
  {
    name: 'renderUrl (templating, helper A)',
    input: 'definition url template',
    run: (text) => quietly(() => renderUrl(`https://h.test/${text}`, context))(),
    worst: [fill('{{a'), fill('/%2e')],
  },
];

function millis(run: () => unknown): number {
  const started = performance.now();
  run();
  return performance.now() - started;
}

describe('regular expressions on user input run in linear time', () => {
  test('every audited function is listed once', () => {
    expect(new Set(AUDITED.map((audited) => audited.name)).size).toBe(AUDITED.length);
  });

  test.each(AUDITED)(
    '$name ($input): a 1 MiB worst case costs at most 20x a benign 1 MiB input',
    ({ run, worst, benign = BENIGN }) => {
      const runner = (text: string) => () => run(text);
      runner(benign.slice(0, 1000))(); // warm up
      const base = Math.max(FLOOR_MS, Math.min(millis(runner(benign)), millis(runner(benign))));
      for (const input of worst) {
        expect(input.length).toBeGreaterThanOrEqual(SIZE - 16);
        let elapsed = millis(runner(input));
        // A second try absorbs a GC pause; a super-linear function is far outside the bound either way.
        if (elapsed > base * MAX_RATIO && elapsed < base * MAX_RATIO * 10)
          elapsed = Math.min(elapsed, millis(runner(input)));
        expect(
          elapsed,
          `worst case ${JSON.stringify(input.slice(0, 24))}... took ${elapsed.toFixed(1)} ms, benign ${base.toFixed(1)} ms`,
        ).toBeLessThanOrEqual(base * MAX_RATIO);
      }
    },
    600_000,
  );
});
