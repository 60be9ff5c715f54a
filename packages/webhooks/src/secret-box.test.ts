import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { createSecretBox, isSealedSecret, SecretBoxError } from './secret-box';

const key = () => randomBytes(32).toString('base64');

describe('webhook secrets at rest', () => {
  test('a sealed secret opens to the original and does not contain it', () => {
    const box = createSecretBox([key()]);
    const sealed = box.seal('whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=', 'shop');
    expect(JSON.stringify(sealed)).not.toContain('whsec_');
    expect(isSealedSecret(sealed)).toBe(true);
    expect(box.open(sealed, 'shop')).toBe('whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=');
  });

  test('the same secret seals differently every time', () => {
    const box = createSecretBox([key()]);
    const [a, b] = [box.seal('s', 'shop'), box.seal('s', 'shop')];
    expect(a.iv).not.toBe(b.iv);
    expect(a.ct + a.tag).not.toBe(b.ct + b.tag);
  });

  test('a secret sealed for one source does not open for another', () => {
    const box = createSecretBox([key()]);
    expect(() => box.open(box.seal('s', 'shop'), 'billing')).toThrow(SecretBoxError);
  });

  test('a tampered ciphertext does not open', () => {
    const box = createSecretBox([key()]);
    const sealed = box.seal('secret-value', 'shop');
    const ct = Buffer.from(sealed.ct, 'base64');
    ct[0] = (ct[0] ?? 0) ^ 1;
    expect(() => box.open({ ...sealed, ct: ct.toString('base64') }, 'shop')).toThrow(SecretBoxError);
  });

  test.each([4, 8, 12, 15])(
    'a tag truncated to %i bytes does not open, even where GCM would check only that much',
    (bytes) => {
      const box = createSecretBox([key()]);
      const sealed = box.seal('secret-value', 'shop');
      const short = Buffer.from(sealed.tag, 'base64').subarray(0, bytes).toString('base64');
      expect(() => box.open({ ...sealed, tag: short }, 'shop')).toThrow(SecretBoxError);
    },
  );

  test('after rotation the new key seals and the old key still opens what it sealed', () => {
    const [oldKey, newKey] = [key(), key()];
    const before = createSecretBox([oldKey]).seal('old', 'shop');
    const rotated = createSecretBox([newKey, oldKey]);
    expect(rotated.open(before, 'shop')).toBe('old');
    expect(rotated.seal('new', 'shop').kid).toBe(rotated.keyId);
    expect(rotated.keyId).not.toBe(before.kid);
  });

  test('a secret sealed with a key that is no longer configured names the missing key', () => {
    const sealed = createSecretBox([key()]).seal('s', 'shop');
    expect(() => createSecretBox([key()]).open(sealed, 'shop')).toThrow(`sealed with key ${sealed.kid}`);
  });
});
