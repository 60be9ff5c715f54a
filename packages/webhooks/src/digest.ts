import { createHmac, timingSafeEqual } from 'node:crypto';

/** Sees the size of every HMAC computed for verification; for tests that compare the work of two paths. */
let hmacObserver: ((bytes: number) => void) | undefined;

/** Installs an observer of every verification HMAC (its input size in bytes); returns the function that removes it. */
export function observeHmac(observer: (bytes: number) => void): () => void {
  hmacObserver = observer;
  return () => {
    if (hmacObserver === observer) hmacObserver = undefined;
  };
}

/** HMAC-SHA256 over the parts in order; a Buffer body is hashed as the exact bytes received. */
export function hmacSha256(secret: string | Buffer, parts: readonly (Buffer | string)[]): Buffer {
  const hmac = createHmac('sha256', secret);
  for (const part of parts) hmac.update(part);
  hmacObserver?.(parts.reduce((total, part) => total + Buffer.byteLength(part), 0));
  return hmac.digest();
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;

/** Decodes hex; `undefined` for anything that is not whole bytes of hex (Buffer.from would silently truncate). */
export function decodeHex(value: string): Buffer | undefined {
  return HEX.test(value) ? Buffer.from(value, 'hex') : undefined;
}

/**
 * Constant-time comparison of two digests. `timingSafeEqual` throws on unequal
 * lengths; a length mismatch is simply a wrong signature, and the length of a
 * SHA-256 digest is no secret.
 */
export function digestsEqual(expected: Buffer, provided: Buffer): boolean {
  return expected.length === provided.length && timingSafeEqual(expected, provided);
}
