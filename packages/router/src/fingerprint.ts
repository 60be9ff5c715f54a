import { createHash } from 'node:crypto';
import { canonicalJson, type EventEnvelope } from '@activity-core/contracts';

/**
 * What makes two deliveries "the same event": type, source, subject and data.
 * `occurred_at` is left out on purpose: webhook providers stamp each delivery
 * attempt with a new timestamp, and an envelope without one gets the receive
 * time, so it differs between honest retries.
 */
export function eventFingerprint(envelope: EventEnvelope): string {
  const content = {
    event_type: envelope.event_type,
    source: envelope.source,
    subject: envelope.subject ?? null,
    data: envelope.data,
  };
  return `sha256:${createHash('sha256').update(canonicalJson(content)).digest('hex')}`;
}
