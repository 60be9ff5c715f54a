import type { Logger } from '@activity-core/contracts';
import { pgFaultOfCode } from '@activity-core/db';
import { StartTimeoutError } from '@activity-core/temporal/client';

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

/** What a failing dependency check says in public: a fixed class, never the driver's text. */
export type FailureReason = 'unreachable' | 'timeout' | 'error';

/**
 * Sorts a dependency failure into a coarse class. The full error goes to the
 * log; a client (a load balancer reading /readyz) sees only the class.
 */
export function classifyFailure(error: unknown): FailureReason {
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 5; depth++) {
    if (current instanceof DependencyCheckTimeoutError || current instanceof StartTimeoutError) return 'timeout';
    const code = (current as { code?: unknown }).code;
    if (code === 4 || code === 'ETIMEDOUT') return 'timeout';
    // gRPC UNAVAILABLE from Temporal; a lost Postgres connection or socket as packages/db reads the code.
    if (code === 14 || pgFaultOfCode(code) === 'connection_lost') return 'unreachable';
    const message = (current as { message?: unknown }).message;
    if (typeof message === 'string') {
      if (/timeout|timed out|deadline/i.test(message)) return 'timeout';
      if (
        /ECONNREFUSED|Connection terminated|not queryable|UNAVAILABLE|No connection established|connect ECONN/i.test(
          message,
        )
      )
        return 'unreachable';
    }
    current = (current as { cause?: unknown }).cause;
  }
  return 'error';
}

/** A dependency check outlived its deadline. */
export class DependencyCheckTimeoutError extends Error {
  override readonly name = 'DependencyCheckTimeoutError';
}

export interface DependencyCheck {
  /** `postgres`, `temporal`: a label value and a log field. */
  name: string;
  /** Resolves when the dependency answered. */
  check(): Promise<void>;
}

export type DependencyStatus = { status: 'ok' } | { status: 'failing'; reason: FailureReason };

export interface DependencyMonitorOptions {
  checks: DependencyCheck[];
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Background check interval (0: only when asked, e.g. by /readyz). @default 2000 */
  intervalMs?: number;
  /** A check slower than this fails as `timeout`. @default 3000 */
  timeoutMs?: number;
  /** Called on every transition (and on each dependency's first verdict). */
  onChange?: (name: string, up: boolean) => void;
}

export interface DependencyMonitor {
  /** Runs every check now; logs and reports transitions; answers coarse verdicts only. */
  checkNow(): Promise<Record<string, DependencyStatus>>;
  /** The last verdict per dependency (undefined before the first check). */
  isUp(name: string): boolean | undefined;
  /**
   * The checks as readiness probes: each runs its check (with the deadline),
   * records the verdict, and rejects with the raw error for the caller to log.
   */
  probes(): DependencyCheck[];
  start(): void;
  stop(): Promise<void>;
}

/**
 * Watches the process's dependencies and says, once per transition, when one
 * was lost and when it was regained (with how long it was away). The
 * processes ride out an outage on their own; this is for the operator.
 */
export function createDependencyMonitor(options: DependencyMonitorOptions): DependencyMonitor {
  const intervalMs = options.intervalMs ?? 2_000;
  const timeoutMs = options.timeoutMs ?? 3_000;
  const state = new Map<string, { up: boolean; since: number }>();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<Record<string, DependencyStatus>> | undefined;

  const record = (name: string, up: boolean, error?: unknown, reason?: FailureReason): void => {
    const previous = state.get(name);
    if (previous?.up === up) return;
    const now = Date.now();
    state.set(name, { up, since: now });
    if (!up)
      options.logger.warn({ dependency: name, reason, err: error }, `${name} lost: unreachable from this process`);
    else if (previous !== undefined)
      options.logger.info({ dependency: name, downForMs: now - previous.since }, `${name} regained`);
    options.onChange?.(name, up);
  };

  const runOne = async (dependency: DependencyCheck): Promise<void> => {
    let timeout: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        dependency.check(),
        new Promise<never>((_, reject) => {
          timeout = setTimeout(
            () => reject(new DependencyCheckTimeoutError(`${dependency.name} did not answer within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
      record(dependency.name, true);
    } catch (error) {
      record(dependency.name, false, error, classifyFailure(error));
      throw error;
    } finally {
      clearTimeout(timeout);
    }
  };

  const runChecks = async (): Promise<Record<string, DependencyStatus>> => {
    const results = await Promise.all(
      options.checks.map(async (dependency): Promise<[string, DependencyStatus]> => {
        try {
          await runOne(dependency);
          return [dependency.name, { status: 'ok' }];
        } catch (error) {
          return [dependency.name, { status: 'failing', reason: classifyFailure(error) }];
        }
      }),
    );
    return Object.fromEntries(results);
  };

  // Concurrent callers (a readiness probe during a background round) share one round.
  const checkNow = (): Promise<Record<string, DependencyStatus>> => {
    inFlight ??= runChecks().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  let stopped = true;
  const loop = (): void => {
    if (stopped || intervalMs <= 0) return;
    timer = setTimeout(() => {
      void checkNow().finally(loop);
    }, intervalMs);
    timer.unref();
  };

  return {
    checkNow,
    isUp: (name) => state.get(name)?.up,
    probes: () => options.checks.map((dependency) => ({ name: dependency.name, check: () => runOne(dependency) })),
    start() {
      if (!stopped) return;
      stopped = false;
      void checkNow().finally(loop);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight?.catch(() => undefined);
    },
  };
}
