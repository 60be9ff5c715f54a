import {
  InvalidInputError,
  isJsonMediaType,
  UnsupportedMediaTypeError,
  type FieldIssue,
} from '@activity-core/contracts';

/**
 * CloudEvents 1.0 over HTTP on `POST /v1/events`: which content mode a
 * request is in, and how a binary-mode request's `ce-*` headers become a
 * CloudEvent. Validation of the event itself is not here: the object built
 * from the headers goes through the same CloudEvent model and the same event
 * service as a structured one (docs/ingress.md, adr/0030).
 */

/** Structured mode: the body is one CloudEvent in JSON. */
export const STRUCTURED_MEDIA_TYPE = 'application/cloudevents+json';
/** Batched mode: the body is a JSON array of CloudEvents. */
export const BATCH_MEDIA_TYPE = 'application/cloudevents-batch+json';
/**
 * What `POST /v1/events` reads, as sent in `Accept-Post` with a 415. Binary
 * mode (a `ce-specversion` header) takes `application/json` or any `+json`
 * media type as the event's data.
 */
export const EVENT_MEDIA_TYPES: readonly string[] = ['application/json', STRUCTURED_MEDIA_TYPE, BATCH_MEDIA_TYPE];

/** At most this many `ce-*` headers on one request: the 7 attributes the envelope reads plus extensions. */
export const MAX_CE_HEADERS = 40;
/** Longest `ce-*` header value, before decoding (percent-encoding triples a byte). */
export const MAX_CE_HEADER_LENGTH = 2048;

/**
 * - `json`: `application/json` without `ce-specversion`: an envelope, a structured CloudEvent or a batch of them, as always.
 * - `structured`, `batched`: the CloudEvents media types.
 * - `binary`: a `ce-specversion` header with a JSON body (or none): the headers are the attributes, the body is `data`.
 */
export type ContentMode = 'json' | 'structured' | 'batched' | 'binary';

/** `application/json; charset=utf-8` → `application/json`; undefined without a Content-Type. */
export function mediaTypeEssence(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const essence = (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();
  return essence === '' ? undefined : essence;
}

const ACCEPTED_SENTENCE =
  'accepted are application/json (an event envelope, a CloudEvent or a batch), application/cloudevents+json (one CloudEvent), ' +
  'application/cloudevents-batch+json (a batch of CloudEvents), and CloudEvents binary mode (ce-* headers) with application/json or any +json data';

/** The 415 for a Content-Type `POST /v1/events` does not read: why, and what would work. */
export function unsupportedEventMediaType(contentType: string | undefined, binary: boolean): UnsupportedMediaTypeError {
  const essence = mediaTypeEssence(contentType);
  const shown = essence === undefined ? undefined : essence.slice(0, 100);
  let reason: string;
  if (shown === undefined) {
    reason = 'a body needs a Content-Type';
  } else if (shown.startsWith('application/cloudevents')) {
    reason = `${shown} is a CloudEvents format activity-core does not read`;
  } else if (binary) {
    reason = `in CloudEvents binary mode the body is the event's data, and event data must be JSON: ${shown} is not accepted`;
  } else {
    reason = `Content-Type ${shown} is not accepted`;
  }
  const detail = `${reason}; ${ACCEPTED_SENTENCE}`;
  return new UnsupportedMediaTypeError(detail, EVENT_MEDIA_TYPES, [{ path: 'header.content-type', message: reason }]);
}

/**
 * The content mode of a request whose body was read as JSON (or that has
 * none). The Content-Type decides first, as the CloudEvents HTTP binding
 * says: the CloudEvents media types are structured and batched mode;
 * otherwise a `ce-specversion` header means binary mode. Anything else that
 * is not `application/json` is a 415.
 */
export function contentModeOf(contentType: string | undefined, hasSpecversionHeader: boolean): ContentMode {
  const essence = mediaTypeEssence(contentType);
  if (essence === BATCH_MEDIA_TYPE) return 'batched';
  if (essence === STRUCTURED_MEDIA_TYPE) return 'structured';
  if (essence?.startsWith('application/cloudevents') === true) throw unsupportedEventMediaType(contentType, false);
  if (hasSpecversionHeader) {
    if (essence === undefined || isJsonMediaType(essence)) return 'binary';
    throw unsupportedEventMediaType(contentType, true);
  }
  if (essence === 'application/json') return 'json';
  throw unsupportedEventMediaType(contentType, false);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const HEX = '0123456789abcdefABCDEF';

/**
 * One `ce-*` header value to its attribute value, as the CloudEvents HTTP
 * binding says: a value in double quotes is unquoted first (backslash
 * escapes), then one round of percent-decoding, and the bytes must be UTF-8
 * (overlong and other invalid sequences are refused). Characters outside
 * printable ASCII must arrive percent-encoded; a space is tolerated (older
 * senders sent it bare). A linear scan, no regular expression.
 * @throws Error whose message says what is wrong (the caller names the header)
 */
export function decodeHeaderValue(raw: string): string {
  let text = raw;
  if (text.startsWith('"')) {
    let unquoted = '';
    let closed = false;
    for (let i = 1; i < text.length; i++) {
      const char = text[i]!;
      if (char === '\\') {
        if (i + 1 >= text.length) break;
        unquoted += text[++i]!;
      } else if (char === '"') {
        if (i !== text.length - 1) throw new Error('text after the closing double quote');
        closed = true;
      } else {
        unquoted += char;
      }
    }
    if (!closed) throw new Error('a double-quoted value must end with a double quote');
    text = unquoted;
  }
  const bytes = new Uint8Array(text.length);
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x25) {
      const high = text[i + 1];
      const low = text[i + 2];
      if (high === undefined || low === undefined || !HEX.includes(high) || !HEX.includes(low)) {
        throw new Error(`"%" at position ${i} does not start a percent-encoded byte (%XX); a literal "%" is %25`);
      }
      bytes[length++] = Number.parseInt(high + low, 16);
      i += 2;
    } else if (code < 0x20 || code > 0x7e) {
      throw new Error(
        `character ${code < 0x20 || code === 0x7f ? `0x${code.toString(16).padStart(2, '0')}` : JSON.stringify(text[i])} at position ${i} must be percent-encoded (UTF-8)`,
      );
    } else {
      bytes[length++] = code;
    }
  }
  let decoded: string;
  try {
    decoded = UTF8.decode(bytes.subarray(0, length));
  } catch {
    throw new Error('the percent-encoded bytes are not valid UTF-8');
  }
  for (let i = 0; i < decoded.length; i++) {
    const code = decoded.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f))
      throw new Error(`the value contains a control character (U+${code.toString(16).toUpperCase().padStart(4, '0')})`);
  }
  return decoded;
}

/** Attributes binary mode takes from elsewhere than a `ce-*` header. */
const NOT_FROM_HEADERS: Readonly<Record<string, string>> = {
  datacontenttype: 'in binary mode the Content-Type header is the datacontenttype; ce-datacontenttype must not be sent',
  data: "in binary mode the body is the event's data",
  data_base64: "in binary mode the body is the event's data",
};

/** The request as binary mode reads it: Node's header map and its raw header list (to see repeats). */
export interface BinaryRequest {
  headers: Record<string, string | string[] | undefined>;
  /** Alternating names and values, as received (`IncomingMessage.rawHeaders`). */
  rawHeaders: readonly string[];
}

/**
 * A binary-mode request as a CloudEvent-shaped object: every `ce-{name}`
 * header becomes attribute `name` (decoded), the Content-Type becomes
 * `datacontenttype`, the parsed JSON body becomes `data` (absent without a
 * body). Header problems are refused here, each naming its header: too many
 * `ce-*` headers, one sent twice, one too long or badly encoded, and
 * attributes binary mode takes from elsewhere. The result is validated as a
 * CloudEvent by the event service, like any other.
 */
export function cloudEventFromBinary(request: BinaryRequest, body: unknown): Record<string, unknown> {
  const issues: FieldIssue[] = [];
  const values = new Map<string, string>();
  let count = 0;
  for (let i = 0; i + 1 < request.rawHeaders.length; i += 2) {
    const header = request.rawHeaders[i]!.toLowerCase();
    if (!header.startsWith('ce-')) continue;
    count++;
    if (count > MAX_CE_HEADERS) continue;
    const path = `header.${header.slice(0, 64)}`;
    if (values.has(header)) {
      issues.push({ path, message: 'sent more than once; a CloudEvents attribute has one value' });
      continue;
    }
    values.set(header, request.rawHeaders[i + 1]!);
  }
  if (count > MAX_CE_HEADERS) {
    throw new InvalidInputError(`a binary-mode event carries at most ${MAX_CE_HEADERS} ce-* headers, got ${count}`, [
      { path: 'headers', message: `at most ${MAX_CE_HEADERS} ce-* headers`, code: 'too_big' },
    ]);
  }
  const event: Record<string, unknown> = {};
  for (const [header, raw] of values) {
    const name = header.slice(3);
    const path = `header.${header.slice(0, 64)}`;
    const refused = Object.hasOwn(NOT_FROM_HEADERS, name) ? NOT_FROM_HEADERS[name] : undefined;
    if (refused !== undefined) {
      issues.push({ path, message: refused });
      continue;
    }
    if (raw.length > MAX_CE_HEADER_LENGTH) {
      issues.push({
        path,
        message: `at most ${MAX_CE_HEADER_LENGTH} characters (percent-encoded), got ${raw.length}`,
        code: 'too_big',
      });
      continue;
    }
    try {
      event[name] = decodeHeaderValue(raw);
    } catch (error) {
      issues.push({ path, message: `not a valid CloudEvents header value: ${(error as Error).message}` });
    }
  }
  if (issues.length > 0)
    throw new InvalidInputError(
      `not a valid binary-mode CloudEvent: ${issues.map((issue) => issue.path).join(', ')}`,
      issues,
    );
  const contentType = request.headers['content-type'];
  if (typeof contentType === 'string' && body !== undefined) event.datacontenttype = contentType;
  if (body !== undefined) event.data = body;
  return event;
}

/**
 * Where a problem with a binary-mode attribute is reported: the header it
 * came from (`header.ce-type`), the Content-Type for `datacontenttype`, and
 * `data` (the body) for the data.
 */
export function binaryFieldPath(path: readonly PropertyKey[]): string | undefined {
  const [attribute] = path;
  if (typeof attribute !== 'string' || attribute === 'data') return undefined;
  if (attribute === 'datacontenttype') return 'header.content-type';
  return `header.ce-${attribute}`;
}
