import { describe, expect, test } from 'vitest';
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
