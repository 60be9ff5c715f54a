import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  createEncryptionCodec,
  ENCRYPTED_ENCODING,
  PayloadKeyMissingError,
  payloadFromJson,
  payloadToJson,
} from './encryption-codec';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };
const event = { order_id: 'o-42', card_last4: '4242' };
const plain = () => defaultPayloadConverter.toPayload(event);
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('latin1');

describe('the payload encryption codec', () => {
  test('a sealed payload holds none of the plaintext and names its key and cipher', async () => {
    const [sealed] = await createEncryptionCodec([k1]).encode([plain()]);
    expect(text(sealed!.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(sealed!.metadata?.['encryption-key-id'])).toBe('k1');
    expect(text(sealed!.metadata?.['encryption-cipher'])).toBe('AES-256-GCM');
    expect(text(sealed!.data)).not.toContain('o-42');
    expect(text(sealed!.data)).not.toContain('json/plain');
  });

  test('decode gives back the original payload, metadata included', async () => {
    const codec = createEncryptionCodec([k1]);
    const [opened] = await codec.decode(await codec.encode([plain()]));
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual(event);
    expect(text(opened!.metadata?.encoding)).toBe('json/plain');
  });

  test('the same payload sealed twice gives two different ciphertexts (a fresh IV each time)', async () => {
    const codec = createEncryptionCodec([k1]);
    const [a] = await codec.encode([plain()]);
    const [b] = await codec.encode([plain()]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  test('after rotation new payloads are sealed with the first key and old ones still open with the second', async () => {
    const before = createEncryptionCodec([k1]);
    const after = createEncryptionCodec([k2, k1]);
    const [old] = await before.encode([plain()]);
    const [fresh] = await after.encode([plain()]);
    expect(text(fresh!.metadata?.['encryption-key-id'])).toBe('k2');
    expect(defaultPayloadConverter.fromPayload((await after.decode([old!]))[0]!)).toEqual(event);
    await expect(before.decode([fresh!])).rejects.toBeInstanceOf(PayloadKeyMissingError);
  });

  test('a tampered ciphertext, or one relabelled with another key id, does not open', async () => {
    const codec = createEncryptionCodec([k1, { id: 'k1-copy', key: k1.key }]);
    const [sealed] = await codec.encode([plain()]);
    const flipped = Buffer.from(sealed!.data!);
    flipped[20] = flipped[20]! ^ 1;
    await expect(codec.decode([{ ...sealed!, data: flipped }])).rejects.toThrow();
    const relabelled = { ...sealed!, metadata: { ...sealed!.metadata, 'encryption-key-id': Buffer.from('k1-copy') } };
    await expect(codec.decode([relabelled])).rejects.toThrow();
  });

  test('payloads that were never sealed pass through decode unchanged, so older histories stay readable', async () => {
    const [opened] = await createEncryptionCodec([k1]).decode([plain()]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual(event);
  });

  test('the remote codec JSON form round-trips a payload', () => {
    const payload = plain();
    const back = payloadFromJson(payloadToJson(payload));
    expect(defaultPayloadConverter.fromPayload(back)).toEqual(event);
  });

  test('a key that is not 32 bytes is refused when the codec is built', () => {
    expect(() => createEncryptionCodec([{ id: 'short', key: randomBytes(16) }])).toThrow(/32 bytes/);
  });
});
