import { WebhookVerificationError } from './errors';

const UNIX_SECONDS = /^\d{1,12}$/;

/** Parses a header holding whole Unix seconds; anything else is refused, not rounded. */
export function parseUnixSeconds(header: string, value: string): Date {
  if (!UNIX_SECONDS.test(value)) {
    throw new WebhookVerificationError('invalid_header', `the ${header} header must be whole Unix seconds`, header);
  }
  return new Date(Number(value) * 1000);
}

/** Like {@link parseUnixSeconds} for extraction, where an unusable value just means "no timestamp". */
export function tryParseUnixSeconds(value: string | undefined): Date | undefined {
  return value !== undefined && UNIX_SECONDS.test(value) ? new Date(Number(value) * 1000) : undefined;
}

/**
 * Refuses a signed timestamp further than `toleranceMs` from `now` in either
 * direction: too old may be a replay; too new means a skewed or forged clock.
 */
export function assertFresh(header: string, signedAt: Date, now: Date, toleranceMs: number): void {
  const skewMs = now.getTime() - signedAt.getTime();
  if (skewMs > toleranceMs) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `the ${header} timestamp is older than the allowed tolerance`,
      header,
    );
  }
  if (-skewMs > toleranceMs) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `the ${header} timestamp is further in the future than the allowed tolerance`,
      header,
    );
  }
}
