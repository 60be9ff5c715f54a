/**
 * What every part of the event path (accept, dispatch, settle) is built
 * from: the caller's dependencies and the shared objects made from them once
 * (the availability gate, the definition cache, the resolved timeouts). No
 * logic of its own.
 */
import type { EventDataLimits, Logger } from '@activity-core/contracts';
import type {
  CoalesceWindowsRepository,
  DefinitionRow,
  DefinitionsRepository,
  EventsRepository,
  PacingRepository,
  RunsRepository,
} from '@activity-core/db';
import type { CoalesceStarter, RunStarter } from '@activity-core/temporal/client';
import { createAvailabilityGate, type AvailabilityGate } from './availability-gate';
import type { CancelOn } from './cancel-on';
import { createDefinitionCache, type DefinitionCache } from './definition-index';
import type { EventWaits } from './event-waits';
import type { RoutingBudget } from './ingest-plan';

export interface EventIngestDeps {
  definitions: Pick<DefinitionsRepository, 'listRoutable' | 'getVersion' | 'currentVersion'>;
  /**
   * Called each time the in-process index of enabled definitions is
   * (re)loaded: with the change counter it was loaded at and its size.
   */
  onDefinitionsLoad?: (version: bigint | undefined, size: number) => void;
  events: Pick<EventsRepository, 'accept' | 'settle'>;
  starter: RunStarter;
  /**
   * The run records, for the dispatcher's retries: a route whose run row
   * already exists is a duplicate without asking Temporal, whose memory of
   * closed runs ends with namespace retention while ours does not. (A new
   * event gets the same check inside its accept statement.)
   */
  runs: Pick<RunsRepository, 'getRunByWorkflowId'>;
  logger: Logger;
  /** How long an inline dispatch keeps background dispatchers away. @default 30000 */
  inlineLeaseMs?: number;
  /**
   * Deadline for one Temporal start call; past it the route is left to the
   * dispatcher. It is also the longest a request waits on an unreachable
   * Temporal, and only the first requests of an outage (or one probe per
   * retry window) wait at all — see AvailabilityGate. @default 5000
   */
  startTimeoutMs?: number;
  /**
   * Deadline for a probe: the one start call per retry window that tests
   * whether an unreachable Temporal is back. Short, so a Temporal that
   * returns is noticed within about this plus the gate's retry window.
   * @default 2000
   */
  probeTimeoutMs?: number;
  /** Shared knowledge of whether Temporal answers. @default a new gate with its defaults */
  gate?: AvailabilityGate;
  /** Bounds on event `data` (EVENT_DATA_LIMIT_BYTES, EVENT_DATA_MAX_DEPTH). @default 256 KiB, 32 levels */
  eventDataLimits?: EventDataLimits;
  /**
   * The routing retry budget (ROUTING_RETRY_MAX_ATTEMPTS, _MAX_AGE_SECONDS):
   * a route whose start keeps failing with an answer (not Temporal
   * unreachable) becomes a dead letter past it (docs/recovery.md). Absent:
   * retried for ever, as before dead letters.
   */
  routingBudget?: RoutingBudget;
  /**
   * Whether an activity is deleted (the dispatcher's retry asks before
   * starting a run: a deleted activity's route becomes a dead letter).
   * Absent: never asked.
   */
  isDeleted?: (activityId: string) => Promise<boolean>;
  /** Triggers' `cancel_on` (cancel-on.ts): events that cancel running runs. Without it, cancel_on entries are ignored. */
  cancelOn?: CancelOn;
  /** `wait_for_event` tasks (event-waits.ts): events that resume waiting tasks. Without it, waits are never resumed by events. */
  eventWaits?: EventWaits;
  /** The pacing buckets (throttle, rate_limit; docs/pacing.md). Without it, a route of a paced activity stays pending. */
  pacing?: Pick<PacingRepository, 'decide'>;
  /**
   * Called once per pacing decision taken (not per re-read): `throttle` for a
   * run delayed, `rate_limit` for a run dropped, undefined for a run started
   * at once. For the metrics.
   */
  onPaced?: (activityName: string, reason: 'throttle' | 'rate_limit' | undefined) => void;
  /**
   * Debounce and batching (coalescing.ts, docs/coalescing.md): the windows in
   * Postgres and the starter of their workflows. Without it, a debounced or
   * batched trigger's events each run alone (logged).
   */
  coalescing?: {
    windows: Pick<CoalesceWindowsRepository, 'join' | 'joinBatch'>;
    starter: Pick<CoalesceStarter, 'start' | 'wake'>;
    /** Most open windows per activity. @default COALESCE_MAX_OPEN_WINDOWS */
    maxOpenWindows?: number;
  };
}

/** The dependencies with their defaults applied, and the objects the parts share. */
export interface IngestContext {
  deps: EventIngestDeps;
  logger: Logger;
  gate: AvailabilityGate;
  /** Enabled definitions, parsed once per change to them (any process's), not per event. */
  definitionCache: DefinitionCache<DefinitionRow>;
  leaseMs: number;
  timeouts: { timeoutMs: number; probeTimeoutMs: number };
}

export function createIngestContext(deps: EventIngestDeps): IngestContext {
  return {
    deps,
    logger: deps.logger,
    gate: deps.gate ?? createAvailabilityGate(),
    definitionCache: createDefinitionCache(deps.definitions, {
      onLoad: (version, size) => {
        deps.logger.debug({ definitionsVersion: version?.toString(), definitions: size }, 'definition index loaded');
        deps.onDefinitionsLoad?.(version, size);
      },
    }),
    leaseMs: deps.inlineLeaseMs ?? 30_000,
    timeouts: { timeoutMs: deps.startTimeoutMs ?? 5_000, probeTimeoutMs: deps.probeTimeoutMs ?? 2_000 },
  };
}
