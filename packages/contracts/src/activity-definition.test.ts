import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import {
  ActivityDefinition,
  FilterExpression,
  secondsCronIssues,
  StoredActivityDefinition,
} from './activity-definition';
import { expressionsAt, fieldPath, MAX_EXPRESSION_LENGTH } from './expressions';
import { findSecretPlaceholders } from './task-secrets';

const valid = {
  name: 'order-paid-sync',
  triggers: [{ type: 'event', event_type: 'order.paid' }],
  tasks: [{ type: 'http', config: { url: 'https://example.test/hook' } }, { type: 'noop' }],
};

function issues(input: unknown): Array<{ path: string; message: string }> {
  const result = ActivityDefinition.safeParse(input);
  if (result.success) return [];
  return result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}

describe('activity definitions', () => {
  test('debounce on a trigger is refused beside throttle or rate_limit, naming the trigger', () => {
    const debounced = { ...valid, triggers: [{ type: 'event', event_type: 'order.paid', debounce: { period: '5s' } }] };
    expect(issues(debounced)).toEqual([]);
    expect(issues({ ...debounced, throttle: { limit: 10, period: '1s' } })).toEqual([
      { path: 'triggers.0.debounce', message: 'debounce cannot be combined with throttle on one activity' },
    ]);
    expect(issues({ ...debounced, rate_limit: { limit: 10, period: '1m' } })).toEqual([
      { path: 'triggers.0.debounce', message: 'debounce cannot be combined with rate_limit on one activity' },
    ]);
  });

  test('batch on a trigger: bounds, and refused beside debounce, throttle or rate_limit, naming triggers[i].batch', () => {
    const batched = {
      ...valid,
      triggers: [{ type: 'event', event_type: 'order.paid', batch: { max_size: 500, timeout: '24h' } }],
    };
    expect(issues(batched)).toEqual([]);
    const withBatch = (batch: object) => ({ ...valid, triggers: [{ type: 'event', event_type: 'order.paid', batch }] });
    expect(issues(withBatch({ max_size: 0, timeout: '1m' })).map((issue) => issue.path)).toEqual([
      'triggers.0.batch.max_size',
    ]);
    expect(issues(withBatch({ max_size: 1001, timeout: '1m' })).map((issue) => issue.path)).toEqual([
      'triggers.0.batch.max_size',
    ]);
    expect(issues(withBatch({ max_size: 10, timeout: '0s' }))).toEqual([
      { path: 'triggers.0.batch.timeout', message: 'must be at least 1s and at most 7d' },
    ]);
    expect(issues(withBatch({ max_size: 10, timeout: '8d' }))).toEqual([
      { path: 'triggers.0.batch.timeout', message: 'must be at least 1s and at most 7d' },
    ]);
    expect(issues(withBatch({ max_size: 10 })).map((issue) => issue.path)).toEqual(['triggers.0.batch.timeout']);
    expect(issues(withBatch({ max_size: 10, timeout: '1m', max_bytes: 1_048_577 })).map((i) => i.path)).toEqual([
      'triggers.0.batch.max_bytes',
    ]);
    expect(issues(withBatch({ max_size: 10, timeout: '1m', max_bytes: 1023 })).map((i) => i.path)).toEqual([
      'triggers.0.batch.max_bytes',
    ]);
    expect(issues(withBatch({ max_size: 10, timeout: '1m', size: 3 })).map((i) => i.path)).toEqual([
      'triggers.0.batch',
    ]);
    expect(
      issues({
        ...valid,
        triggers: [
          {
            type: 'event',
            event_type: 'order.paid',
            debounce: { period: '5s' },
            batch: { max_size: 5, timeout: '1m' },
          },
        ],
      }),
    ).toEqual([{ path: 'triggers.0.batch', message: 'a trigger has debounce or batch, not both' }]);
    expect(
      issues({
        ...valid,
        triggers: [
          { type: 'event', event_type: 'order.paid', debounce: { period: '5s' } },
          { type: 'event', event_type: 'order.shipped', batch: { max_size: 5, timeout: '1m' } },
        ],
      }).map((issue) => issue.path),
    ).toEqual(['triggers.1.batch']);
    expect(issues({ ...batched, throttle: { limit: 10, period: '1s' } })).toEqual([
      { path: 'triggers.0.batch', message: 'batch cannot be combined with throttle on one activity' },
    ]);
    expect(issues({ ...batched, rate_limit: { limit: 10, period: '1m' } })).toEqual([
      { path: 'triggers.0.batch', message: 'batch cannot be combined with rate_limit on one activity' },
    ]);
  });

  test('a minimal event-triggered definition is valid and gets its defaults', () => {
    const parsed = ActivityDefinition.parse(valid);
    expect(parsed.enabled).toBe(true);
    expect(parsed.tasks[0]).toMatchObject({
      type: 'http',
      config: { method: 'POST', timeout: '30s', headers: {} },
      continue_on_failure: false,
    });
    expect(parsed.tasks[1]).toMatchObject({ type: 'noop', config: {} });
  });

  test('an unknown trigger type is refused with the list of known types', () => {
    expect(issues({ ...valid, triggers: [{ type: 'webhook', event_type: 'x' }] })).toEqual([
      { path: 'triggers.0.type', message: 'trigger type must be one of: event, cron' },
    ]);
  });

  test('an unknown task type is refused with the list of known types', () => {
    expect(issues({ ...valid, tasks: [{ type: 'shell', config: {} }] })[0]?.message).toBe(
      'task type must be one of: http, delay, emit_event, noop, wait_for_event, run_activity',
    );
  });

  test('a definition with no tasks is refused', () => {
    expect(issues({ ...valid, tasks: [] })[0]?.path).toBe('tasks');
  });

  test('unknown fields are refused rather than silently dropped', () => {
    expect(issues({ ...valid, retries: 3 })[0]?.message).toMatch(/retries/);
  });

  test('a dedupe_key_strategy that differs from the cron misfire_policy is refused naming the field', () => {
    const result = issues({
      ...valid,
      dedupe_key_strategy: 'skip',
      triggers: [{ type: 'cron', cron: '0 9 * * MON-FRI', misfire_policy: 'catchup' }],
    });
    expect(result).toEqual([
      { path: 'dedupe_key_strategy', message: expect.stringContaining('must equal the misfire_policy "catchup"') },
    ]);
  });

  test('dedupe_key_strategy is derived from the cron triggers when omitted', () => {
    const parsed = ActivityDefinition.parse({
      ...valid,
      triggers: [{ type: 'cron', cron: '*/5 * * * *', misfire_policy: 'compress' }],
    });
    expect(parsed.dedupe_key_strategy).toBe('compress');
  });

  test('cron triggers of one activity with different policies are refused', () => {
    const result = issues({
      ...valid,
      triggers: [
        { type: 'cron', cron: '0 9 * * *', misfire_policy: 'skip' },
        { type: 'cron', cron: '0 10 * * *', misfire_policy: 'catchup' },
      ],
    });
    expect(result[0]?.path).toBe('triggers');
  });

  test('an invalid cron expression is refused naming the cron field', () => {
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '61 * * * *' }] })[0]?.path).toBe('triggers.0.cron');
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '* * *' }] })[0]).toEqual({
      path: 'triggers.0.cron',
      message: 'cron must have 5 or 6 fields, got 3',
    });
  });

  test('an unknown timezone is refused naming the timezone field', () => {
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '0 9 * * *', timezone: 'Mars/Olympus' }] })).toEqual([
      { path: 'triggers.0.timezone', message: 'unknown IANA timezone: Mars/Olympus' },
    ]);
  });

  test('a cron trigger takes one of the five overlap policies, absent by default (allow_all), and refuses others naming the field', () => {
    for (const overlap of ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all'])
      expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '0 9 * * *', overlap }] })).toEqual([]);
    const parsed = ActivityDefinition.parse({ ...valid, triggers: [{ type: 'cron', cron: '0 9 * * *' }] });
    expect(parsed.triggers[0]).not.toHaveProperty('overlap');
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '0 9 * * *', overlap: 'terminate_other' }] })).toEqual([
      { path: 'triggers.0.overlap', message: expect.stringContaining('buffer_one') },
    ]);
    expect(issues({ ...valid, triggers: [{ type: 'event', event_type: 'order.paid', overlap: 'skip' }] })).toEqual([
      { path: 'triggers.0', message: expect.stringContaining('overlap') },
    ]);
  });

  test('six-field cron expressions with seconds are accepted', () => {
    expect(issues({ ...valid, triggers: [{ type: 'cron', cron: '*/2 * * * * *', timezone: 'Europe/Paris' }] })).toEqual(
      [],
    );
  });

  test('event type patterns allow exact types and prefix wildcards only', () => {
    expect(issues({ ...valid, triggers: [{ type: 'event', event_type: 'order.*' }] })).toEqual([]);
    expect(issues({ ...valid, triggers: [{ type: 'event', event_type: 'order.*.paid' }] })[0]?.path).toBe(
      'triggers.0.event_type',
    );
  });

  test('an emit_event task must emit a type the ingress would accept', () => {
    expect(issues({ ...valid, tasks: [{ type: 'emit_event', config: { event_type: 'has spaces' } }] })[0]?.path).toBe(
      'tasks.0.config.event_type',
    );
    expect(issues({ ...valid, tasks: [{ type: 'emit_event', config: { event_type: 'order.shipped' } }] })).toEqual([]);
  });

  test('durations must carry a unit', () => {
    expect(issues({ ...valid, tasks: [{ type: 'delay', config: { duration: '30' } }] })[0]?.path).toBe(
      'tasks.0.config.duration',
    );
    expect(issues({ ...valid, tasks: [{ type: 'delay', config: { duration: '30s' } }] })).toEqual([]);
  });
});

describe('secret references in task templates', () => {
  const withTasks = (...tasks: object[]) => ({ ...valid, tasks });
  const http = (config: object) => ({ type: 'http', config: { url: 'https://vendor.test/hook', ...config } });

  test('an http task may reference secrets in its url path, header values and body', () => {
    const definition = withTasks(
      http({
        url: 'https://vendor.test/{{ secrets.PATH_TOKEN }}/orders?key={{secrets.KEY_2}}',
        headers: { Authorization: 'Bearer {{ secrets.VENDOR_TOKEN }}' },
        body: { nested: [{ token: '{{secrets.VENDOR_TOKEN}}' }] },
      }),
    );
    expect(issues(definition)).toEqual([]);
  });

  test('the stored definition keeps the placeholders, not values', () => {
    const parsed = ActivityDefinition.parse(
      withTasks(http({ headers: { Authorization: 'Bearer {{ secrets.VENDOR_TOKEN }}' } })),
    );
    expect(parsed.tasks[0]).toMatchObject({
      config: { headers: { Authorization: 'Bearer {{ secrets.VENDOR_TOKEN }}' } },
    });
  });

  test('a secret name that is not upper case letters, digits and underscores is refused naming the field', () => {
    expect(issues(withTasks(http({ headers: { Authorization: 'Bearer {{ secrets.vendor_token }}' } })))).toEqual([
      {
        path: 'tasks.0.config.headers.Authorization',
        message: expect.stringContaining('not a valid secret reference'),
      },
    ]);
    expect(issues(withTasks(http({ url: 'https://vendor.test/{{secrets.1ST}}' })))[0]?.path).toBe('tasks.0.config.url');
    expect(issues(withTasks(http({ body: { a: ['{{secrets.A.B}}'] } })))[0]?.path).toBe('tasks.0.config.body.a.0');
    expect(issues(withTasks(http({ body: '{{ secrets }}' })))[0]?.path).toBe('tasks.0.config.body');
  });

  test('a secret in an emit_event task is refused, so a secret can never be copied into an event', () => {
    const result = issues(
      withTasks({
        type: 'emit_event',
        config: { event_type: 'order.synced', data: { token: '{{ secrets.VENDOR_TOKEN }}' } },
      }),
    );
    expect(result).toEqual([
      {
        path: 'tasks.0.config.data.token',
        message: expect.stringContaining('only be used in the url, header values and body of an http task'),
      },
    ]);
  });

  test('a secret anywhere in an emit_event task is refused, including its subject', () => {
    const result = issues(
      withTasks({ type: 'emit_event', config: { event_type: 'order.synced', subject: 'x {{secrets.VENDOR_TOKEN}}' } }),
    );
    expect(result.map((issue) => issue.path)).toEqual(['tasks.0.config.subject']);
  });

  test('a secret in an object key is refused, since keys are never rendered', () => {
    expect(issues(withTasks(http({ headers: { '{{secrets.VENDOR_TOKEN}}': 'x' } })))[0]).toEqual({
      path: 'tasks.0.config.headers.{{secrets.VENDOR_TOKEN}}',
      message: expect.stringContaining('keys are not templated'),
    });
  });

  test('a secret may not choose the host: the host is fixed at registration', () => {
    expect(issues(withTasks(http({ url: 'https://{{secrets.HOST}}/hook' }))).map((issue) => issue.message)).toContain(
      'placeholders are allowed in the path and query only; the host must be fixed',
    );
  });

  test('a placeholder in the url fragment is refused, while the path and query may have one', () => {
    expect(
      issues(withTasks(http({ url: 'https://vendor.test/orders/{{event.data.id}}#{{event.data.section}}' }))).map(
        (issue) => issue.message,
      ),
    ).toContain('placeholders are allowed in the path and query only, not in the #fragment (it is never sent)');
    expect(
      issues(withTasks(http({ url: 'https://vendor.test/orders/{{event.data.id}}?q={{event.data.q}}#top' }))),
    ).toEqual([]);
  });

  test('the registration does not ask whether the secret exists: only workers know', () => {
    expect(issues(withTasks(http({ headers: { Authorization: 'Bearer {{secrets.NO_WORKER_HAS_THIS}}' } })))).toEqual(
      [],
    );
  });

  test('ordinary placeholders are unaffected', () => {
    expect(
      issues(
        withTasks(http({ headers: { 'X-Secretsauce': '{{ event.data.secrets }}', 'X-Other': '{{secretsx.Y}}' } })),
      ),
    ).toEqual([]);
  });

  test('placeholders are found with their names, and malformed ones without', () => {
    expect(findSecretPlaceholders('a {{secrets.A_1}} b {{ secrets.b }} c {{secrets}} {{ secrets.C }}')).toEqual([
      { placeholder: '{{secrets.A_1}}', name: 'A_1' },
      { placeholder: '{{ secrets.b }}' },
      { placeholder: '{{secrets}}' },
      { placeholder: '{{ secrets.C }}', name: 'C' },
    ]);
  });
});

describe('what one definition may ask for', () => {
  const deep = (depth: number): unknown => {
    let value: unknown = {};
    for (let i = 1; i < depth; i++) value = { k: value };
    return value;
  };

  test('more than 50 tasks or 20 triggers is refused, naming the limit', () => {
    expect(issues({ ...valid, tasks: Array.from({ length: 50 }, () => ({ type: 'noop' })) })).toEqual([]);
    expect(issues({ ...valid, tasks: Array.from({ length: 51 }, () => ({ type: 'noop' })) })).toEqual([
      { path: 'tasks', message: 'at most 50 tasks per activity' },
    ]);
    const triggers = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'event', event_type: `t.${i}` }));
    expect(issues({ ...valid, triggers: triggers(20) })).toEqual([]);
    expect(issues({ ...valid, triggers: triggers(21) })).toEqual([
      { path: 'triggers', message: 'at most 20 triggers per activity' },
    ]);
  });

  test('an http timeout above 15m is refused before it could overflow a timer in the worker', () => {
    const http = (timeout: string) => ({
      ...valid,
      tasks: [{ type: 'http', config: { url: 'https://example.test/', timeout } }],
    });
    expect(issues(http('15m'))).toEqual([]);
    expect(issues(http('16m'))).toEqual([{ path: 'tasks.0.config.timeout', message: 'must be at most 15m' }]);
    expect(issues(http('25d'))).toEqual([{ path: 'tasks.0.config.timeout', message: 'must be at most 15m' }]);
  });

  test('delays and run timeouts are bounded at 365d, and so is every other duration', () => {
    expect(issues({ ...valid, run_timeout: '365d', tasks: [{ type: 'delay', config: { duration: '365d' } }] })).toEqual(
      [],
    );
    expect(issues({ ...valid, tasks: [{ type: 'delay', config: { duration: '366d' } }] })).toEqual([
      { path: 'tasks.0.config.duration', message: 'must be at most 365d' },
    ]);
    expect(issues({ ...valid, run_timeout: '999999999d' })).toEqual([
      { path: 'run_timeout', message: 'must be at most 365d' },
    ]);
    expect(issues({ ...valid, retry: { maximum_interval: '400d' } })).toEqual([
      { path: 'retry.maximum_interval', message: 'must be at most 365d' },
    ]);
    expect(issues({ ...valid, run_timeout: '10 days' })).toEqual([
      { path: 'run_timeout', message: 'must be a duration such as 500ms, 30s, 5m, 2h or 1d' },
    ]);
  });

  test('http bodies and emitted data nested deeper than 32 levels are refused without walking them recursively', () => {
    expect(
      issues({ ...valid, tasks: [{ type: 'http', config: { url: 'https://example.test/', body: deep(32) } }] }),
    ).toEqual([]);
    expect(
      issues({ ...valid, tasks: [{ type: 'http', config: { url: 'https://example.test/', body: deep(33) } }] }),
    ).toEqual([{ path: 'tasks.0.config.body', message: expect.stringContaining('the limit is 32') }]);
    expect(
      issues({ ...valid, tasks: [{ type: 'http', config: { url: 'https://example.test/', body: deep(100_000) } }] }),
    ).toEqual([{ path: 'tasks.0.config.body', message: expect.stringContaining('the limit is 32') }]);
    expect(
      issues({ ...valid, tasks: [{ type: 'emit_event', config: { event_type: 'a.b', data: { x: deep(40) } } }] }),
    ).toEqual([{ path: 'tasks.0.config.data', message: expect.stringContaining('the limit is 32') }]);
  });

  test('a definition stored before the limits is still served as it was stored', () => {
    const stored = {
      ...valid,
      run_timeout: '400d',
      tasks: [
        ...Array.from({ length: 60 }, () => ({ type: 'noop' })),
        { type: 'http', config: { url: 'https://example.test/', timeout: '1d', body: { a: { b: { c: {} } } } } },
      ],
    };
    expect(StoredActivityDefinition.safeParse(stored).success).toBe(true);
    expect(ActivityDefinition.safeParse(stored).success).toBe(false);
  });

  test('seconds-level cron is refused unless the operator allows it, naming the trigger cron field', () => {
    const definition = ActivityDefinition.parse({
      ...valid,
      triggers: [
        { type: 'event', event_type: 'a.b' },
        { type: 'cron', cron: '*/5 * * * * *' },
        { type: 'cron', cron: '0 9 * * *' },
      ],
    });
    expect(secondsCronIssues(definition, { allowSeconds: false })).toEqual([
      {
        path: 'triggers[1].cron',
        message: expect.stringContaining('CRON_ALLOW_SECONDS=true'),
        code: 'cron_seconds_disabled',
      },
    ]);
    expect(secondsCronIssues(definition, { allowSeconds: true })).toEqual([]);
  });
});

describe('expression fields', () => {
  const withFilter = (filter: string) => ({
    name: 'filtered',
    triggers: [{ type: 'event', event_type: 'order.created', filter }],
    tasks: [{ type: 'noop' }],
  });

  test('a filter passes the schema unchanged; whether it compiles is the server check', () => {
    expect(ActivityDefinition.parse(withFilter('data.amount > 100')).triggers[0]).toMatchObject({
      filter: 'data.amount > 100',
    });
    expect(ActivityDefinition.safeParse(withFilter('amount >')).success).toBe(true);
  });

  test('an over-long expression fails with exactly one issue', () => {
    const result = ActivityDefinition.safeParse(withFilter(`${'true && '.repeat(300)}true`));
    expect(result.error?.issues).toEqual([
      expect.objectContaining({
        code: 'too_big',
        path: ['triggers', 0, 'filter'],
        maximum: MAX_EXPRESSION_LENGTH,
        message: `a filter expression may be at most ${MAX_EXPRESSION_LENGTH} characters long`,
      }),
    ]);
  });

  test('the generated JSON Schema declares the length limit and the description', () => {
    expect(z.toJSONSchema(FilterExpression)).toMatchObject({
      type: 'string',
      maxLength: MAX_EXPRESSION_LENGTH,
      description: expect.stringContaining('CEL expression over the event envelope'),
    });
  });

  test('expressionsAt finds the expression at every site of a definition, in field order', () => {
    const parsed = ActivityDefinition.parse({
      name: 'sites',
      triggers: [
        { type: 'event', event_type: 'a.b', filter: 'f', cancel_on: [{ event_type: 'a.c', match: 'm1' }] },
        { type: 'cron', cron: '0 9 * * *' },
      ],
      tasks: [{ type: 'noop' }, { type: 'wait_for_event', config: { event_type: 'a.d', match: 'm2', timeout: '1h' } }],
      concurrency: { limit: 1, key: 'k' },
    });
    expect(expressionsAt(parsed)).toEqual([
      { path: ['triggers', 0, 'filter'], kind: 'filter', expression: 'f' },
      { path: ['triggers', 0, 'cancel_on', 0, 'match'], kind: 'match', expression: 'm1' },
      { path: ['tasks', 1, 'config', 'match'], kind: 'match', expression: 'm2' },
      { path: ['concurrency', 'key'], kind: 'key', expression: 'k' },
    ]);
    expect(fieldPath(['triggers', 0, 'cancel_on', 0, 'match'])).toBe('triggers[0].cancel_on[0].match');
  });
});

describe('empty expressions', () => {
  test('an empty filter, match or key is refused by the schema, which states minLength 1', () => {
    const result = ActivityDefinition.safeParse({
      name: 'empty-expressions',
      triggers: [{ type: 'event', event_type: 'a.b', filter: '', cancel_on: [{ event_type: 'a.c', match: '' }] }],
      tasks: [{ type: 'noop' }],
      concurrency: { limit: 1, key: '' },
    });
    expect(result.error?.issues.map((issue) => [issue.path.join('.'), issue.code, issue.message])).toEqual([
      ['triggers.0.filter', 'too_small', 'the expression is empty'],
      ['triggers.0.cancel_on.0.match', 'too_small', 'the expression is empty'],
      ['concurrency.key', 'too_small', 'the expression is empty'],
    ]);
    expect(z.toJSONSchema(FilterExpression)).toMatchObject({ minLength: 1 });
  });
});

describe('when_disabled: what a disabled activity does with its events', () => {
  test('absent action drops; a hold without a ttl lasts seven days', () => {
    expect(ActivityDefinition.parse({ ...valid, when_disabled: {} }).when_disabled).toEqual({
      action: 'drop',
      ttl: '7d',
    });
    expect(ActivityDefinition.parse({ ...valid, when_disabled: { action: 'hold' } }).when_disabled).toEqual({
      action: 'hold',
      ttl: '7d',
    });
  });

  test('a ttl of 0, under a minute or past 30 days is refused naming the field and the bounds', () => {
    for (const ttl of ['0s', '59s', '31d', '721h'])
      expect(issues({ ...valid, when_disabled: { action: 'hold', ttl } })).toEqual([
        { path: 'when_disabled.ttl', message: 'must be at least 1m and at most 30d' },
      ]);
    expect(issues({ ...valid, when_disabled: { action: 'hold', ttl: '1m' } })).toEqual([]);
    expect(issues({ ...valid, when_disabled: { action: 'hold', ttl: '30d' } })).toEqual([]);
  });

  test('an unknown action or field is refused', () => {
    expect(issues({ ...valid, when_disabled: { action: 'queue' } }).map((issue) => issue.path)).toEqual([
      'when_disabled.action',
    ]);
    expect(issues({ ...valid, when_disabled: { action: 'hold', for: '1d' } }).map((issue) => issue.path)).toEqual([
      'when_disabled',
    ]);
  });
});
