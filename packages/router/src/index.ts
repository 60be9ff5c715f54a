export { eventTriggerMatches, eventTypeMatches } from './matching';
export { eventFingerprint } from './fingerprint';
export { createEventIngest, routingBackoffMs, type EventIngest, type EventIngestDeps } from './event-ingest';
export { createDispatcher, type Dispatcher, type DispatcherOptions } from './dispatcher';
export { createAvailabilityGate, type AvailabilityGate, type AvailabilityGateOptions } from './availability-gate';
export { createEventRetention, type EventRetention, type EventRetentionOptions } from './event-retention';
export type { Logger } from './logger';
