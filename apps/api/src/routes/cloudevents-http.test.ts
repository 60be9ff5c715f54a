import { InvalidInputError, UnsupportedMediaTypeError } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import {
  binaryFieldPath,
  cloudEventFromBinary,
  contentModeOf,
  decodeHeaderValue,
  EVENT_MEDIA_TYPES,
  MAX_CE_HEADER_LENGTH,
  MAX_CE_HEADERS,
  mediaTypeEssence,
} from './cloudevents-http';

/** A request as Node hands it over: the header map and the raw name/value list. */
function request(headers: Array<[string, string]>) {
  const map: Record<string, string> = {};
  for (const [name, value] of headers) map[name.toLowerCase()] = value;
  return { headers: map, rawHeaders: headers.flat() };
}

const REQUIRED: Array<[string, string]> = [
  ['ce-specversion', '1.0'],
  ['ce-id', 'evt-1'],
  ['ce-source', '/shop'],
  ['ce-type', 'order.paid'],
];

function refusal(run: () => unknown): InvalidInputError {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidInputError) return error;
    throw error;
  }
  throw new Error('expected an InvalidInputError');
}

describe('content mode', () => {
  test('the CloudEvents media types decide first, then a ce-specversion header means binary mode', () => {
    expect(contentModeOf('application/cloudevents+json; charset=utf-8', true)).toBe('structured');
    expect(contentModeOf('Application/CloudEvents-Batch+JSON', false)).toBe('batched');
    expect(contentModeOf('application/json', true)).toBe('binary');
    expect(contentModeOf('application/vnd.acme.order+json', true)).toBe('binary');
    expect(contentModeOf(undefined, true)).toBe('binary');
    expect(contentModeOf('application/json; charset=utf-8', false)).toBe('json');
  });

  test('anything else is a 415 that lists what is read and says why', () => {
    const cases: Array<[string | undefined, boolean, string]> = [
      ['text/plain', false, 'text/plain is not accepted'],
      ['application/vnd.acme+json', false, 'application/vnd.acme+json is not accepted'],
      ['text/plain', true, 'event data must be JSON'],
      ['application/cloudevents+avro', false, 'CloudEvents format activity-core does not read'],
      ['application/cloudevents+avro', true, 'CloudEvents format activity-core does not read'],
      [undefined, false, 'a body needs a Content-Type'],
    ];
    for (const [contentType, binary, says] of cases) {
      let error: unknown;
      try {
        contentModeOf(contentType, binary);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(UnsupportedMediaTypeError);
      expect((error as UnsupportedMediaTypeError).message).toContain(says);
      expect((error as UnsupportedMediaTypeError).accepted).toEqual(EVENT_MEDIA_TYPES);
      expect((error as UnsupportedMediaTypeError).issues[0]?.path).toBe('header.content-type');
    }
  });

  test('the media type essence drops parameters and case', () => {
    expect(mediaTypeEssence(' Application/JSON ; charset=UTF-8')).toBe('application/json');
    expect(mediaTypeEssence('')).toBeUndefined();
    expect(mediaTypeEssence(undefined)).toBeUndefined();
  });
});

describe('header values', () => {
  test('one round of percent-decoding gives UTF-8 text; upper and lower case hex both work', () => {
    expect(decodeHeaderValue('Euro%20%E2%82%AC%20%F0%9F%98%80')).toBe('Euro € 😀');
    expect(decodeHeaderValue('%e2%82%ac')).toBe('€');
    expect(decodeHeaderValue('%2541')).toBe('%41');
    expect(decodeHeaderValue('unnecessarily%2Dencoded')).toBe('unnecessarily-encoded');
  });

  test('a double-quoted value is unquoted first, as older senders sent it', () => {
    expect(decodeHeaderValue('"a b \\"c\\""')).toBe('a b "c"');
    expect(decodeHeaderValue('"%41"')).toBe('A');
    expect(decodeHeaderValue('a bare space')).toBe('a bare space');
  });

  test('invalid UTF-8, overlong encodings, broken escapes, control and raw non-ASCII characters are refused', () => {
    expect(() => decodeHeaderValue('%C0%A0')).toThrow('not valid UTF-8');
    expect(() => decodeHeaderValue('%E2%82')).toThrow('not valid UTF-8');
    expect(() => decodeHeaderValue('%ED%A0%80')).toThrow('not valid UTF-8');
    expect(() => decodeHeaderValue('100%')).toThrow('does not start a percent-encoded byte');
    expect(() => decodeHeaderValue('%G1')).toThrow('does not start a percent-encoded byte');
    expect(() => decodeHeaderValue('%00')).toThrow('control character');
    expect(() => decodeHeaderValue('%C2%85')).toThrow('control character');
    expect(() => decodeHeaderValue('caf\u00e9')).toThrow('must be percent-encoded');
    expect(() => decodeHeaderValue('a\tb')).toThrow('must be percent-encoded');
    expect(() => decodeHeaderValue('"open')).toThrow('must end with a double quote');
    expect(() => decodeHeaderValue('"a"b')).toThrow('after the closing double quote');
  });

  test('a byte-order mark is kept, not silently dropped', () => {
    expect(decodeHeaderValue('%EF%BB%BFx')).toBe('\uFEFFx');
  });
});

describe('a binary-mode request as a CloudEvent', () => {
  test('every ce-* header is an attribute, the Content-Type is datacontenttype and the body is data', () => {
    const event = cloudEventFromBinary(
      request([
        ...REQUIRED,
        ['ce-subject', 'orders%2F42'],
        ['CE-Traceparent', '00-abc'],
        ['content-type', 'application/json'],
        ['x-other', 'y'],
      ]),
      { a: 1 },
    );
    expect(event).toEqual({
      specversion: '1.0',
      id: 'evt-1',
      source: '/shop',
      type: 'order.paid',
      subject: 'orders/42',
      traceparent: '00-abc',
      datacontenttype: 'application/json',
      data: { a: 1 },
    });
  });

  test('without a body there is no data and no datacontenttype', () => {
    expect(cloudEventFromBinary(request(REQUIRED), undefined)).toEqual({
      specversion: '1.0',
      id: 'evt-1',
      source: '/shop',
      type: 'order.paid',
    });
  });

  test('a header sent twice is refused naming it, not joined into one value', () => {
    const error = refusal(() => cloudEventFromBinary(request([...REQUIRED, ['ce-source', '/other']]), {}));
    expect(error.issues).toEqual([
      expect.objectContaining({ path: 'header.ce-source', message: expect.stringContaining('more than once') }),
    ]);
  });

  test('ce-datacontenttype and ce-data are refused: binary mode takes them from the Content-Type and the body', () => {
    const error = refusal(() =>
      cloudEventFromBinary(request([...REQUIRED, ['ce-datacontenttype', 'application/json'], ['ce-data', '{}']]), {}),
    );
    expect(error.issues.map((issue) => issue.path)).toEqual(['header.ce-datacontenttype', 'header.ce-data']);
  });

  test('too many ce-* headers, a value too long and a badly encoded value are refused, each naming the header', () => {
    const many = Array.from({ length: MAX_CE_HEADERS }, (_, i): [string, string] => [`ce-ext${i}`, 'x']);
    const tooMany = refusal(() => cloudEventFromBinary(request([...REQUIRED, ...many]), {}));
    expect(tooMany.issues).toEqual([
      expect.objectContaining({ path: 'headers', message: expect.stringContaining(String(MAX_CE_HEADERS)) }),
    ]);

    const long = refusal(() =>
      cloudEventFromBinary(request([...REQUIRED, ['ce-subject', 'x'.repeat(MAX_CE_HEADER_LENGTH + 1)]]), {}),
    );
    expect(long.issues).toEqual([expect.objectContaining({ path: 'header.ce-subject', code: 'too_big' })]);

    const bad = refusal(() => cloudEventFromBinary(request([...REQUIRED, ['ce-subject', '%C0%A0']]), {}));
    expect(bad.issues).toEqual([
      expect.objectContaining({ path: 'header.ce-subject', message: expect.stringContaining('UTF-8') }),
    ]);
  });

  test('problems with attributes are reported on the header they came from; data problems on data', () => {
    expect(binaryFieldPath(['type'])).toBe('header.ce-type');
    expect(binaryFieldPath(['specversion'])).toBe('header.ce-specversion');
    expect(binaryFieldPath(['datacontenttype'])).toBe('header.content-type');
    expect(binaryFieldPath(['data'])).toBeUndefined();
    expect(binaryFieldPath(['data', 'a'])).toBeUndefined();
  });
});
