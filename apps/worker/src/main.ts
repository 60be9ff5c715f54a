import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '@activity-core/config';
import { startOtlpTracing } from '@activity-core/temporal/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { pino } from 'pino';
import { createWorkerApp } from './worker-app';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = pino({
    level: config.logLevel,
    base: { service: 'activity-core-worker' },
    // LOG_FORMAT=pretty (the dev stack): colored lines for a terminal; JSON otherwise.
    ...(config.logFormat === 'pretty'
      ? {
          transport: {
            target: 'pino-pretty',
            options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true },
          },
        }
      : {}),
  });
  // Traces only when OTEL_* names a collector.
  const tracing = config.tracing === null ? undefined : startOtlpTracing(config.tracing, 'activity-core-worker');
  // The SDK's own logs (bundling, state changes) only when asked for with LOG_LEVEL=debug|trace.
  const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
  const metricsAddress = config.worker.metricsBindAddress;
  Runtime.install({
    logger: new DefaultLogger(verbose ? 'DEBUG' : 'WARN'),
    // The SDK's own Prometheus exporter (a Rust HTTP server), when asked for.
    ...(metricsAddress === null
      ? {}
      : { telemetryOptions: { metrics: { prometheus: { bindAddress: metricsAddress, countersTotalSuffix: true } } } }),
  });
  // A production build (`npm run build`) puts the bundled workflow code beside this module; from the sources it is bundled now.
  const prebuiltBundle = fileURLToPath(new URL('./workflow-bundle.js', import.meta.url));
  const workflowBundle = existsSync(prebuiltBundle) ? { codePath: prebuiltBundle } : undefined;
  const app = await createWorkerApp(config, {
    logger,
    ...(workflowBundle === undefined ? {} : { workflowBundle }),
    ...(tracing === undefined ? {} : { tracing }),
  });
  // Names only: which {{ secrets.NAME }} this worker can render, never their values.
  logger.info(
    {
      taskQueue: config.temporal.taskQueue,
      namespace: config.temporal.namespace,
      address: config.temporal.address,
      metrics: metricsAddress,
      taskSecrets: config.taskSecrets.names,
      workflowBundle: workflowBundle?.codePath ?? 'bundled at start',
    },
    'worker started',
  );
  if (metricsAddress !== null && !/^(127\.\d+\.\d+\.\d+|localhost|\[::1\]):\d+$/.test(metricsAddress)) {
    logger.warn(
      { metrics: metricsAddress },
      'WORKER_METRICS_BIND_ADDRESS is not loopback: /metrics has no authentication, so anyone who can reach that address can read it',
    );
  }

  // Temporal's Runtime installs SIGINT/SIGTERM handlers that shut the worker down gracefully.
  // If Temporal is already gone, that shutdown can wait on it for a long time: a signal
  // starts a watchdog so the process always ends.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      setTimeout(() => {
        logger.error({ signal }, 'graceful shutdown took longer than 30 s; exiting');
        process.exit(1);
      }, 30_000).unref();
    });
  }
  await app.run();
  await app.close();
  // Exports the spans still buffered.
  await tracing?.shutdown().catch((error: unknown) => logger.warn({ err: error }, 'exporting the last spans failed'));
  logger.info('worker stopped');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else console.error(error);
  process.exit(1);
});
