import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Webhook secrets at rest. Verifying an HMAC needs the secret itself, so it
 * cannot be hashed like an API key; it is encrypted instead, with AES-256-GCM
 * from Node's OpenSSL (authenticated: a tampered or moved value fails to open,
 * it never decrypts to garbage). The source name is bound in as associated
 * data, so a sealed secret copied onto another source's row does not open.
 */

/** A secret as stored: which key sealed it, and the GCM nonce, tag and ciphertext (base64). */
export interface SealedSecret {
  readonly v: 1;
  readonly kid: string;
  readonly iv: string;
  readonly tag: string;
  readonly ct: string;
}

export class SecretBoxError extends Error {
  override readonly name = 'SecretBoxError';
}

export interface SecretBox {
  /** The id of the key new secrets are sealed with. */
  readonly keyId: string;
  seal(secret: string, context: string): SealedSecret;
  /** @throws {SecretBoxError} when no configured key sealed it, or it was altered or moved. */
  open(sealed: SealedSecret, context: string): string;
}

const ALGORITHM = 'aes-256-gcm';
const NONCE_BYTES = 12;
/**
 * The GCM tag is always the full 16 bytes. Pinned on both sides: without
 * `authTagLength` Node accepts any tag from 4 bytes up, and a truncated tag is
 * far easier to forge.
 */
const TAG_BYTES = 16;

/** A short public name for a key: the start of its SHA-256, never the key. */
function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/**
 * A box over keys given as base64 (32 bytes each). The first key seals; every
 * key opens, so a new key can be put first while the old one still opens
 * secrets written before — rewrite each source (PUT) to re-seal it, then drop
 * the old key.
 */
export function createSecretBox(base64Keys: readonly string[]): SecretBox {
  const keys = base64Keys.map((encoded) => {
    const key = Buffer.from(encoded, 'base64');
    if (key.length !== 32) throw new SecretBoxError('a secret key must be 32 bytes in base64');
    return { id: keyIdOf(key), key };
  });
  const [sealing] = keys;
  if (sealing === undefined) throw new SecretBoxError('a secret box needs at least one key');
  const byId = new Map(keys.map((entry) => [entry.id, entry.key]));

  return {
    keyId: sealing.id,
    seal(secret, context) {
      const iv = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv(ALGORITHM, sealing.key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return {
        v: 1,
        kid: sealing.id,
        iv: iv.toString('base64'),
        tag: cipher.getAuthTag().toString('base64'),
        ct: ct.toString('base64'),
      };
    },
    open(sealed, context) {
      const key = byId.get(sealed.kid);
      if (key === undefined)
        throw new SecretBoxError(`the secret was sealed with key ${sealed.kid}, which is not configured`);
      const tag = Buffer.from(sealed.tag, 'base64');
      if (tag.length !== TAG_BYTES)
        throw new SecretBoxError(`the sealed secret's tag is ${tag.length} bytes, not ${TAG_BYTES}: it was altered`);
      try {
        const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(sealed.iv, 'base64'), {
          authTagLength: TAG_BYTES,
        });
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretBoxError('the sealed secret does not open: it was altered or belongs to another source');
      }
    },
  };
}

export function isSealedSecret(value: unknown): value is SealedSecret {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return candidate['v'] === 1 && ['kid', 'iv', 'tag', 'ct'].every((field) => typeof candidate[field] === 'string');
}
