/** Terms used across the project, one line each: ./vocabulary.ts. */

export * from './ids';
export * from './duration';
export * from './date-time';
export * from './event-envelope';
export * from './activity-definition';
export * from './expressions';
export * from './api';
export * from './http-api';
export * from './page-cursor';
export * from './errors';
export * from './schedules';
export * from './reruns';
export * from './replays';
export * from './held-events';
export * from './dead-letters';
export * from './canonical-json';
export * from './task-secrets';
export * from './json-bounds';
export * from './json-patch';
export * from './definition-history';
export * from './schema-patterns';
export * from './stored-event';
export * from './system-events';
export type * from './workflow-types';
export type { Logger } from './logger';
export * from './audit';
export * from './task-graph';
