/**
 * Whether Temporal is worth calling right now, shared by the inline dispatch
 * of every request and the background dispatcher of one process.
 *
 * While Temporal answers, every caller goes ahead. Once a call finds it
 * unreachable, callers stop waiting on it: their events stay pending (they
 * are already on disk) and the answer is `pending` at once instead of after a
 * connect timeout per request. One caller per retry window — the probe — tries
 * again; the window doubles from `initialRetryMs` up to `maxRetryMs`, so a
 * Temporal that comes back is noticed within `maxRetryMs`, and one that stays
 * down costs one timed-out call per window instead of one per event.
 */
export interface AvailabilityGateOptions {
  /** First retry window after Temporal is found unreachable. @default 250 */
  initialRetryMs?: number;
  /**
   * Longest retry window. With the probe's own deadline it bounds how long
   * routing lags behind a Temporal that is back; one probe call every couple
   * of seconds is no load worth saving. @default 2000
   */
  maxRetryMs?: number;
  /** Clock, for tests. @default Date.now */
  now?: () => number;
}

/** Permission to call Temporal; hand it back with the verdict. */
export interface GatePass {
  readonly probe: boolean;
}

export interface AvailabilityGate {
  /** True while the last verdict was "reachable". */
  readonly healthy: boolean;
  /** Milliseconds until the next probe may run; 0 when healthy or due. */
  retryInMs(): number;
  /** A pass when this caller may call Temporal now, `undefined` when it should leave the event pending. */
  tryEnter(): GatePass | undefined;
  /** Temporal answered (whatever it said). */
  reachable(pass: GatePass): void;
  /** Temporal could not be reached (unavailable, deadline exceeded). */
  unreachable(pass: GatePass): void;
}

export function createAvailabilityGate(options: AvailabilityGateOptions = {}): AvailabilityGate {
  const initialRetryMs = options.initialRetryMs ?? 250;
  const maxRetryMs = options.maxRetryMs ?? 2_000;
  const now = options.now ?? Date.now;
  let failures = 0;
  let retryAt = 0;
  let probing = false;

  const backOff = (): void => {
    failures += 1;
    retryAt = now() + Math.min(maxRetryMs, initialRetryMs * 2 ** (failures - 1));
  };

  return {
    get healthy() {
      return failures === 0;
    },
    retryInMs: () => (failures === 0 ? 0 : Math.max(0, retryAt - now())),
    tryEnter() {
      if (failures === 0) return { probe: false };
      if (probing || now() < retryAt) return undefined;
      probing = true;
      return { probe: true };
    },
    reachable(pass) {
      failures = 0;
      retryAt = 0;
      if (pass.probe) probing = false;
    },
    unreachable(pass) {
      if (pass.probe) {
        probing = false;
        backOff();
      } else if (failures === 0) {
        // The first failure of a healthy period opens the gate; calls that
        // were already in flight and fail after it do not stretch the window.
        backOff();
      }
    },
  };
}

/** gRPC status codes that mean "Temporal is not answering", not "this request is wrong". */
const UNAVAILABLE_CODES = new Set([
  4, // DEADLINE_EXCEEDED: the client gave up retrying an unreachable server
  8, // RESOURCE_EXHAUSTED: Temporal is rate limiting; back off as a whole
  14, // UNAVAILABLE
]);

/** True when a start failed because Temporal could not be reached (as opposed to refusing the request). */
export function isTemporalUnreachable(error: unknown): boolean {
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 5; depth++) {
    if (current instanceof StartTimeoutError) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'number' && UNAVAILABLE_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Our own backstop fired: the start call outlived its deadline. */
export class StartTimeoutError extends Error {
  override readonly name = 'StartTimeoutError';
}
