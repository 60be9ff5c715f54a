import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

/**
 * Terminology
 * - payload: one value Temporal stores (a workflow input, an activity result,
 *   a memo field) as metadata plus bytes.
 * - sealed payload: the whole original payload (its metadata and data),
 *   serialised and encrypted with AES-256-GCM, carried as the data of a new
 *   payload whose metadata says how to open it: `encoding:
 *   binary/encrypted`, the key id and the cipher. Temporal's persistence and
 *   every history then hold only ciphertext.
 * - key id: the name of a key, stored in each sealed payload, so keys can be
 *   rotated: new payloads are sealed with the first key, and any configured
 *   key opens the payloads sealed with it.
 */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID_METADATA = 'encryption-key-id';
const CIPHER_METADATA = 'encryption-cipher';
const CIPHER = 'AES-256-GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface PayloadKey {
  id: string;
  /** 32 bytes. */
  key: Uint8Array;
}

export class PayloadKeyMissingError extends Error {
  constructor(readonly keyId: string) {
    super(`a payload is encrypted with key "${keyId}", which is not in PAYLOAD_ENCRYPTION_KEYS`);
    this.name = 'PayloadKeyMissingError';
  }
}

const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const decodeText = (value: Uint8Array | null | undefined): string | undefined =>
  value === null || value === undefined ? undefined : new TextDecoder().decode(value);

/**
 * A PayloadCodec that seals every payload with AES-256-GCM under the first
 * key, and opens payloads sealed under any of the keys. Payloads that are not
 * sealed pass through decode unchanged, so histories written before
 * encryption was turned on stay readable and replayable.
 */
export function createEncryptionCodec(keys: readonly PayloadKey[]): PayloadCodec {
  const [current] = keys;
  if (current === undefined) throw new Error('the encryption codec needs at least one key');
  for (const { id, key } of keys) {
    if (key.length !== 32) throw new Error(`payload key "${id}" must be 32 bytes, got ${key.length}`);
  }
  const byId = new Map(keys.map((entry) => [entry.id, entry.key]));

  function seal(payload: Payload): Payload {
    const plain = proto.temporal.api.common.v1.Payload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', current!.key, iv, { authTagLength: TAG_BYTES });
    // The key id is bound as associated data: a sealed payload relabelled with another key id does not open.
    cipher.setAAD(text(current!.id));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return {
      metadata: {
        encoding: text(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: text(current!.id),
        [CIPHER_METADATA]: text(CIPHER),
      },
      data: Buffer.concat([iv, body, cipher.getAuthTag()]),
    };
  }

  function open(payload: Payload): Payload {
    if (decodeText(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
    const keyId = decodeText(payload.metadata?.[KEY_ID_METADATA]) ?? '';
    const key = byId.get(keyId);
    if (key === undefined) throw new PayloadKeyMissingError(keyId);
    const data = payload.data ?? new Uint8Array();
    if (data.length < IV_BYTES + TAG_BYTES) throw new Error('a sealed payload is too short to hold its IV and tag');
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(text(keyId));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    return proto.temporal.api.common.v1.Payload.decode(plain);
  }

  return {
    encode: async (payloads) => payloads.map(seal),
    decode: async (payloads) => payloads.map(open),
  };
}

/** A payload as the remote codec protocol carries it: proto3 JSON, every bytes value in base64. */
export interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export function payloadFromJson(json: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(
      Object.entries(json.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    ),
    data: Buffer.from(json.data ?? '', 'base64'),
  };
}

export function payloadToJson(payload: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value ?? new Uint8Array()).toString('base64'),
      ]),
    ),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
  };
}
