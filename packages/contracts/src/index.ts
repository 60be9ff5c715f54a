export * from './ids';
export * from './duration';
export * from './event-envelope';
export * from './activity-definition';
export * from './api';
export * from './errors';
export * from './schedules';
export * from './canonical-json';
export type * from './workflow-types';
