/** The slice of pino's API the services use; fastify's and the worker's loggers both fit. */
export interface Logger {
  debug(obj: object, message?: string): void;
  info(obj: object, message?: string): void;
  warn(obj: object, message?: string): void;
  error(obj: object, message?: string): void;
}
