import { ConfigError, loadConfig } from '@activity-core/config';
import { startOtlpTracing } from '@activity-core/temporal/client';
import { createApiApp } from './app';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  let host = config.http.host;
  if (!config.auth.enabled && !LOOPBACK.has(host)) {
    console.warn(
      `\n!!! API_KEYS is empty: authentication is OFF.\n!!! Refusing to listen on ${host}; listening on 127.0.0.1 only.\n!!! Set API_KEYS (and INGEST_KEYS) to serve other hosts.\n`,
    );
    host = '127.0.0.1';
  }
  // Traces only when OTEL_* names a collector.
  const tracing = config.tracing === null ? undefined : startOtlpTracing(config.tracing, 'activity-core-api');
  const app = await createApiApp(config, tracing === undefined ? {} : { tracing });
  if (!config.auth.enabled) app.server.log.warn('API_KEYS is empty: authentication is off (loopback only)');
  await app.server.listen({ host, port: config.http.port });

  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    app.server.log.info({ signal }, 'shutting down');
    app
      .close()
      // Exports the spans still buffered.
      .then(() =>
        tracing
          ?.shutdown()
          .catch((error: unknown) => app.server.log.warn({ err: error }, 'exporting the last spans failed')),
      )
      .then(
        () => process.exit(0),
        (error: unknown) => {
          console.error(error);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else console.error(error);
  process.exit(1);
});
