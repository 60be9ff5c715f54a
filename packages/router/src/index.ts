export { eventTriggerMatches, eventTypeMatches, selfTriggerIssues } from './matching';
export { eventFingerprint } from './fingerprint';
export {
  createEventIngest,
  routingBackoffMs,
  type EventIngest,
  type EventIngestDeps,
  type IngestOrigin,
  StoreUnreachableError,
} from './event-ingest';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './dispatcher';
export {
  classifyFailure,
  createAvailabilityGate,
  createDependencyMonitor,
  type AvailabilityGate,
  type AvailabilityGateOptions,
  type DependencyCheck,
  type DependencyMonitor,
  type DependencyStatus,
  type FailureReason,
} from './availability-gate';
export { createEventRetention, type EventRetention, type EventRetentionOptions } from './event-retention';
export { createHeldExpiry, type HeldExpiry, type HeldExpiryOptions } from './held-expiry';
export {
  buildDefinitionIndex,
  createDefinitionCache,
  type DefinitionCache,
  type DefinitionIndex,
  type DefinitionSource,
  type IndexableDefinition,
  type IndexedDefinition,
  type VersionedIndex,
} from './definition-index';
export { createVersionedCache, type Versioned, type VersionedCache, type VersionedSource } from './versioned-cache';
export {
  cancelWatchers,
  createCancelOn,
  decideCancellations,
  type CancelOn,
  type CancelOnDeps,
  type CancelOnFailure,
  type CancelWatcher,
} from './cancel-on';
export {
  createEventWaits,
  decideWaitMatches,
  type EventWaits,
  type EventWaitsDeps,
  type EventWaitsFailure,
} from './event-waits';
export { createWindowRevival, WINDOW_REVIVAL_GRACE_MS, type WindowRevival } from './window-revival';
