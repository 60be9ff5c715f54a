import { describe, expect, test } from 'vitest';
import { SecretMissingError, secretScope } from './task-secrets';
import { renderText, renderUrl, renderValue, TemplateError } from './templating';

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
  const secrets = new Map([
    ['VENDOR_TOKEN', 'sk_live_123'],
    ['PATH_TOKEN', 'p/t'],
  ]);

  test('a secrets placeholder renders the worker secret when the caller passes a lookup', () => {
    const scope = secretScope(secrets);
    expect(renderText('Bearer {{ secrets.VENDOR_TOKEN }}', context, scope.lookup)).toBe('Bearer sk_live_123');
    expect(renderValue({ auth: '{{secrets.VENDOR_TOKEN}}', run: '{{run.run_id}}' }, context, scope.lookup)).toEqual({
      auth: 'sk_live_123',
      run: 'r-1',
    });
  });

  test('the lookup remembers exactly the secrets a task used', () => {
    const scope = secretScope(secrets);
    renderText('https://x.test/{{secrets.PATH_TOKEN}}', context, scope.lookup);
    expect([...scope.used]).toEqual([['PATH_TOKEN', 'p/t']]);
  });

  test('without a lookup a secrets placeholder is a template error, so emit_event cannot render one', () => {
    expect(() => renderValue({ leak: '{{secrets.VENDOR_TOKEN}}' }, context)).toThrow(TemplateError);
    expect(() => renderValue({ leak: '{{secrets.VENDOR_TOKEN}}' }, context)).toThrow(
      /only be used in the url, header values and body of an http task/,
    );
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
    for (const template of [
      '{{secrets.vendor_token}}',
      '{{secrets.VENDOR_TOKEN.x}}',
      '{{secrets}}',
      '{{secrets.A-B}}',
    ]) {
      expect(() => renderText(template, context, lookup), template).toThrow(TemplateError);
    }
  });

  test('a value from the run context that looks like a secrets placeholder is not rendered again', () => {
    const sneaky = { ...context, event: { data: { note: '{{secrets.VENDOR_TOKEN}}' } } };
    expect(renderText('x {{event.data.note}}', sneaky, secretScope(secrets).lookup)).toBe('x {{secrets.VENDOR_TOKEN}}');
    expect(renderValue('{{event.data.note}}', sneaky, secretScope(secrets).lookup)).toBe('{{secrets.VENDOR_TOKEN}}');
  });
});

describe('rendering an http task url', () => {
  const template = 'https://erp.example/api/v1/orders/{{event.data.order_id}}/refund';
  const withOrder = (order_id: unknown) => ({ event: { data: { order_id } } });

  test('an ordinary value fills its path segment', () => {
    expect(renderUrl(template, withOrder('ord_42'))).toBe('https://erp.example/api/v1/orders/ord_42/refund');
    expect(renderUrl(template, withOrder(42))).toBe('https://erp.example/api/v1/orders/42/refund');
  });

  test.each([
    ['../../admin/users/7/delete?', 'https://erp.example/api/v1/orders/..%2F..%2Fadmin%2Fusers%2F7%2Fdelete%3F/refund'],
    ['%2e%2e/%2e%2e/admin', 'https://erp.example/api/v1/orders/%252e%252e%2F%252e%252e%2Fadmin/refund'],
    ['..\\..\\admin', 'https://erp.example/api/v1/orders/..%5C..%5Cadmin/refund'],
    ['1?admin=true', 'https://erp.example/api/v1/orders/1%3Fadmin%3Dtrue/refund'],
    ['1&x=y', 'https://erp.example/api/v1/orders/1%26x%3Dy/refund'],
    ['1#', 'https://erp.example/api/v1/orders/1%23/refund'],
    ['@evil.example/x', 'https://erp.example/api/v1/orders/%40evil.example%2Fx/refund'],
  ])('a path value %j stays inside its one segment', (value, expected) => {
    const rendered = renderUrl(template, withOrder(value));
    expect(rendered).toBe(expected);
    const url = new URL(rendered);
    expect(url.origin).toBe('https://erp.example');
    expect(url.pathname.split('/')).toEqual(['', 'api', 'v1', 'orders', expected.split('/')[6], 'refund']);
    expect(url.pathname.endsWith('/refund')).toBe(true);
    expect(url.search).toBe('');
  });

  test.each([
    [template, '.'],
    [template, '..'],
    ['https://erp.example/api/v1/orders/{{event.data.order_id}}', '..'],
    // A value glued to a static dot in the template makes `..` too.
    ['https://erp.example/api/v1/orders/.{{event.data.order_id}}/refund', '.'],
    ['https://erp.example/api/v1/orders/%2E{{event.data.order_id}}/refund', '.'],
  ])('a path value that would make a "." or ".." segment is refused (%s with %j)', (url, value) => {
    expect(() => renderUrl(url, withOrder(value))).toThrow(TemplateError);
    expect(() => renderUrl(url, withOrder(value))).toThrow(/"\." or "\.\." path segment/);
  });

  test('a query value stays one value, and a query key one key', () => {
    const rendered = renderUrl('https://erp.example/search?q={{event.data.q}}&{{event.data.k}}=1', {
      event: { data: { q: 'a&admin=true#x y+z', k: 'role=admin&x' } },
    });
    expect(rendered).toBe('https://erp.example/search?q=a%26admin%3Dtrue%23x%20y%2Bz&role%3Dadmin%26x=1');
    const params = new URL(rendered).searchParams;
    expect([...params.keys()]).toEqual(['q', 'role=admin&x']);
    expect(params.get('q')).toBe('a&admin=true#x y+z');
  });

  test('a value in the query cannot change the path', () => {
    expect(
      new URL(renderUrl('https://erp.example/api/orders?id={{event.data.order_id}}', withOrder('/../../admin')))
        .pathname,
    ).toBe('/api/orders');
  });

  test('secret values are encoded for their position like any other value', () => {
    const scope = secretScope(new Map([['PATH_TOKEN', 'p/t?x']]));
    expect(renderUrl('https://x.test/{{secrets.PATH_TOKEN}}/hook?k={{secrets.PATH_TOKEN}}', {}, scope.lookup)).toBe(
      'https://x.test/p%2Ft%3Fx/hook?k=p%2Ft%3Fx',
    );
  });

  test('a placeholder in the host is refused even if registration was bypassed', () => {
    expect(() => renderUrl('https://{{event.data.order_id}}/x', withOrder('evil.example'))).toThrow(/scheme or host/);
    expect(() => renderUrl('https://erp.{{event.data.order_id}}/x', withOrder('evil.example'))).toThrow(TemplateError);
  });

  test("static dot segments written in the template are the definition's own; a value completing one is refused", () => {
    // A static `..` before the placeholder is resolved by the parser in both the template and the result: allowed.
    expect(renderUrl('https://erp.example/a/../b/{{event.data.order_id}}', withOrder('1'))).toBe(
      'https://erp.example/a/../b/1',
    );
    // A value glued to a static dot makes `..`, which would climb out of the prefix.
    expect(() => renderUrl('https://erp.example/api/v1/{{event.data.order_id}}./x', withOrder('.'))).toThrow(
      TemplateError,
    );
  });

  test.each([
    // The parser reads `\\` as `/`, so `x\\..` is two segments and the second resolves away.
    ['https://erp.example/api/{{event.data.a}}\\{{event.data.b}}/x', 'v1', '..'],
    ['https://erp.example/api/{{event.data.a}}\\.{{event.data.b}}/x', 'v1', '.'],
    // The parser drops tabs and line breaks, so a static tab does not keep a value's dots apart.
    ['https://erp.example/api/{{event.data.a}}/{{event.data.b}}\t/x', 'v1', '..'],
    ['https://erp.example/api/{{event.data.a}}/.\n{{event.data.b}}/x', 'v1', '.'],
    // ... nor does a trailing space, which the parser trims.
    ['https://erp.example/api/{{event.data.a}}/.{{event.data.b}} ', 'v1', '.'],
  ])('a value cannot make a dot segment through what the URL parser normalises (%j)', (url, a, b) => {
    expect(() => renderUrl(url, { event: { data: { a, b } } })).toThrow(/"\." or "\.\." path segment/);
  });

  test('tabs and line breaks in a value are encoded, so they cannot join static dots into a dot segment', () => {
    const rendered = renderUrl('https://erp.example/api/.{{event.data.order_id}}./x', withOrder('\t\n'));
    expect(rendered).toBe('https://erp.example/api/.%09%0A./x');
    expect(new URL(rendered).pathname).toBe('/api/.%09%0A./x');
  });

  test('a backslash in the template separates segments for the structure check as it does for the parser', () => {
    const rendered = renderUrl('https://erp.example/api\\{{event.data.a}}\\{{event.data.b}}', {
      event: { data: { a: 'v1', b: 'x\\y' } },
    });
    expect(new URL(rendered).pathname).toBe('/api/v1/x%5Cy');
  });

  test('a value that renders its path segment empty is refused, since servers collapse "//"', () => {
    expect(() => renderUrl(template, withOrder(''))).toThrow(/empty path segment/);
    // An empty segment written in the template is the definition's own.
    expect(renderUrl('https://erp.example/api//{{event.data.order_id}}', withOrder('1'))).toBe(
      'https://erp.example/api//1',
    );
  });

  test('a static ".." after a placeholder, which would resolve the value\'s segment away, is refused', () => {
    expect(() => renderUrl('https://erp.example/api/{{event.data.order_id}}/../x', withOrder('1'))).toThrow(
      TemplateError,
    );
  });

  test('non-ASCII and reserved static characters keep working in a path with placeholders', () => {
    const rendered = renderUrl('https://erp.example/caf\u00e9 menu/{{event.data.order_id}}/x', withOrder('\u00e9 1'));
    expect(new URL(rendered).pathname).toBe('/caf%C3%A9%20menu/%C3%A9%201/x');
  });

  test('a value in the fragment of an old definition is encoded and the path is kept', () => {
    expect(renderUrl('https://erp.example/a#{{event.data.order_id}}', withOrder('/../b?x'))).toBe(
      'https://erp.example/a#%2F..%2Fb%3Fx',
    );
  });
});
