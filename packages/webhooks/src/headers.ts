import { WebhookVerificationError, type WebhookVerificationErrorCode } from './errors';

/**
 * Request headers as frameworks hand them over (Node and fastify lowercase the
 * names; other callers may not). Names are matched case-insensitively.
 */
export type WebhookHeaders = Record<string, string | string[] | undefined>;

/**
 * Every distinct non-empty value sent for `name`, whatever the case of the key
 * and whether it came as a string or an array.
 */
export function headerValues(headers: WebhookHeaders, name: string): string[] {
  const wanted = name.toLowerCase();
  const values = new Set<string>();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      const trimmed = item.trim();
      if (trimmed !== '') values.add(trimmed);
    }
  }
  return [...values];
}

/**
 * The single value of a header verification depends on. A header repeated
 * with different values is refused rather than guessed at: picking one would
 * let a sender choose which value gets checked.
 */
export function requireHeader(
  headers: WebhookHeaders,
  name: string,
  missingCode: Extract<WebhookVerificationErrorCode, 'missing_signature' | 'missing_header'>,
): string {
  const values = headerValues(headers, name);
  const [value] = values;
  if (value === undefined) throw new WebhookVerificationError(missingCode, `the ${name} header is missing`, name);
  if (values.length > 1) {
    throw new WebhookVerificationError(
      'invalid_header',
      `the ${name} header was sent more than once with different values`,
      name,
    );
  }
  return value;
}
