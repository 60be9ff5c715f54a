import type { FieldIssue, Problem } from '@activity-core/contracts';

/**
 * Stable problem types (RFC 9457 `type`); documented in docs/api.md. Keys are
 * the names code uses; the values are the wire's (invalid input is
 * `validation-error` on the wire, `invalid_input` in code, as the domain
 * error code).
 */
export const PROBLEM_TYPES = {
  invalid_json: 'urn:activity-core:problem:invalid-json',
  invalid_input: 'urn:activity-core:problem:validation-error',
  not_found: 'urn:activity-core:problem:not-found',
  method_not_allowed: 'urn:activity-core:problem:method-not-allowed',
  conflict: 'urn:activity-core:problem:conflict',
  gone: 'urn:activity-core:problem:gone',
  event_id_reused: 'urn:activity-core:problem:event-id-reused',
  unauthorized: 'urn:activity-core:problem:unauthorized',
  forbidden: 'urn:activity-core:problem:forbidden',
  invalid_signature: 'urn:activity-core:problem:invalid-signature',
  invalid_webhook_payload: 'urn:activity-core:problem:invalid-webhook-payload',
  payload_too_large: 'urn:activity-core:problem:payload-too-large',
  unsupported_media_type: 'urn:activity-core:problem:unsupported-media-type',
  rate_limited: 'urn:activity-core:problem:rate-limited',
  unavailable: 'urn:activity-core:problem:unavailable',
  bad_request: 'urn:activity-core:problem:bad-request',
  internal: 'urn:activity-core:problem:internal-error',
} as const;

export type ProblemKind = keyof typeof PROBLEM_TYPES;

/** A problem+json body: the `Problem` schema of contracts, which the routes document. */
export type ProblemBody = Problem;

export function problem(
  kind: ProblemKind,
  status: number,
  title: string,
  detail?: string,
  errors?: FieldIssue[],
): ProblemBody {
  return {
    type: PROBLEM_TYPES[kind],
    title,
    status,
    ...(detail === undefined ? {} : { detail }),
    ...(errors === undefined || errors.length === 0 ? {} : { errors }),
  };
}

/** `/a/0/b` or ['a', 0, 'b'] → `a[0].b`, the form field errors use. */
export function formatPath(path: ReadonlyArray<PropertyKey> | string): string {
  const segments = typeof path === 'string' ? path.split('/').filter((s) => s.length > 0) : path.map(String);
  return segments.reduce<string>(
    (out, segment) => (/^\d+$/.test(segment) ? `${out}[${segment}]` : out === '' ? segment : `${out}.${segment}`),
    '',
  );
}
