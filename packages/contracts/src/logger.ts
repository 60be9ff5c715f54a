/**
 * The log every package writes to: structured fields first, then a message,
 * the way pino takes them. The API's fastify logger and the worker's pino
 * logger both are one; tests pass a silent or recording object. Packages that
 * log only warnings ask for `Pick<Logger, 'warn'>`, so callers can hand them
 * less. A type only: importing it loads nothing.
 */
export interface Logger {
  debug(obj: object, message?: string): void;
  info(obj: object, message?: string): void;
  warn(obj: object, message?: string): void;
  error(obj: object, message?: string): void;
}
