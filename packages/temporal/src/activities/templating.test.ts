import { describe, expect, test } from 'vitest';
import { SecretMissingError, secretScope } from './task-secrets';
import { renderText, renderValue, TemplateError } from './templating';

const context = {
  run: { run_id: 'r-1', trigger_type: 'event' },
  event: { event_id: 'evt_1', data: { order: { id: 42, lines: [1, 2] }, 'customer-id': 'c-9' } },
};

describe('templating over the run context', () => {
  test('a placeholder inside a string is replaced by the value as text', () => {
    expect(renderText('https://x.test/orders/{{event.data.order.id}}?run={{ run.run_id }}', context)).toBe(
      'https://x.test/orders/42?run=r-1',
    );
  });

  test('a string that is only a placeholder keeps the value type', () => {
    expect(renderValue({ order: '{{event.data.order}}', n: 1, ok: true }, context)).toEqual({
      order: { id: 42, lines: [1, 2] },
      n: 1,
      ok: true,
    });
  });

  test('placeholders are rendered inside nested arrays and objects', () => {
    expect(renderValue([{ a: ['{{event.event_id}}'] }], context)).toEqual([{ a: ['evt_1'] }]);
  });

  test('keys with dashes can be addressed', () => {
    expect(renderText('{{event.data.customer-id}}', context)).toBe('c-9');
  });

  test('a path that does not exist is an error naming the path', () => {
    expect(() => renderText('{{event.data.missing}}', context)).toThrow(TemplateError);
    expect(() => renderText('{{event.data.missing}}', context)).toThrow(/event\.data\.missing/);
  });

  test('inherited properties are not reachable', () => {
    expect(() => renderText('{{event.constructor}}', context)).toThrow(TemplateError);
    expect(() => renderText('{{event.data.__proto__}}', context)).toThrow(TemplateError);
  });

  test('text without placeholders is left alone', () => {
    expect(renderValue('plain {text}', context)).toBe('plain {text}');
  });
});

describe('secret references', () => {
  const secrets = new Map([['VENDOR_TOKEN', 'sk_live_123'], ['PATH_TOKEN', 'p/t']]);

  test('a secrets placeholder renders the worker secret when the caller passes a lookup', () => {
    const scope = secretScope(secrets);
    expect(renderText('Bearer {{ secrets.VENDOR_TOKEN }}', context, scope.lookup)).toBe('Bearer sk_live_123');
    expect(renderValue({ auth: '{{secrets.VENDOR_TOKEN}}', run: '{{run.run_id}}' }, context, scope.lookup)).toEqual({ auth: 'sk_live_123', run: 'r-1' });
  });

  test('the lookup remembers exactly the secrets a task used', () => {
    const scope = secretScope(secrets);
    renderText('https://x.test/{{secrets.PATH_TOKEN}}', context, scope.lookup);
    expect([...scope.used]).toEqual([['PATH_TOKEN', 'p/t']]);
  });

  test('without a lookup a secrets placeholder is a template error, so emit_event cannot render one', () => {
    expect(() => renderValue({ leak: '{{secrets.VENDOR_TOKEN}}' }, context)).toThrow(TemplateError);
    expect(() => renderValue({ leak: '{{secrets.VENDOR_TOKEN}}' }, context)).toThrow(/only be used in the url, header values and body of an http task/);
  });

  test('a secret the worker does not have is a SecretMissingError naming the variable to set', () => {
    const error = (() => {
      try {
        renderText('{{secrets.OTHER_TOKEN}}', context, secretScope(secrets).lookup);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(SecretMissingError);
    expect((error as Error).message).toContain('secrets.OTHER_TOKEN');
    expect((error as Error).message).toContain('TASK_SECRET_OTHER_TOKEN');
  });

  test('a malformed secret reference is a template error, not a lookup', () => {
    const lookup = secretScope(secrets).lookup;
    for (const template of ['{{secrets.vendor_token}}', '{{secrets.VENDOR_TOKEN.x}}', '{{secrets}}', '{{secrets.A-B}}']) {
      expect(() => renderText(template, context, lookup), template).toThrow(TemplateError);
    }
  });

  test('a value from the run context that looks like a secrets placeholder is not rendered again', () => {
    const sneaky = { ...context, event: { data: { note: '{{secrets.VENDOR_TOKEN}}' } } };
    expect(renderText('x {{event.data.note}}', sneaky, secretScope(secrets).lookup)).toBe('x {{secrets.VENDOR_TOKEN}}');
    expect(renderValue('{{event.data.note}}', sneaky, secretScope(secrets).lookup)).toBe('{{secrets.VENDOR_TOKEN}}');
  });
});
