/**
 * The API's start-up behaviour, each step named: what runs once before the
 * process serves (stored webhook sources, Temporal's setup), what runs in
 * the background (the start-up schedule reconciliation, the dispatcher, the
 * retention sweeper, the bulk re-run runner), and the bounded shutdown.
 */
import type { Config } from '@activity-core/config';
import { createDispatcher, createEventRetention, createHeldExpiry } from '@activity-core/router';
import {
  checkSearchAttributes,
  diagnoseTemporalConnectFailure,
  MissingSearchAttributesError,
} from '@activity-core/temporal/client';
import type { FastifyInstance } from 'fastify';
import type { ApiAppOptions, ApiWiring } from './app-wiring';
import { createBulkReplayRunner } from './services/bulk-replay-runner';
import { createBulkRerunRunner } from './services/bulk-rerun-runner';

/** Longest each shutdown step may take before close() moves on without it. */
const CLOSE_STEP_TIMEOUT_MS = 10_000;

/**
 * Seals plaintext webhook secrets (when WEBHOOK_SECRET_KEYS is set) and warns
 * about sources registered under older, weaker rules. A failure fails the
 * start, closing the server and the pool.
 */
export async function prepareWebhookSources(wiring: ApiWiring, server: FastifyInstance): Promise<void> {
  if (wiring.secretBox === undefined) {
    server.log.warn('WEBHOOK_SECRET_KEYS is empty: webhook secrets are stored in plain text in Postgres');
  }
  try {
    await wiring.webhooks.prepareStoredSources();
  } catch (error) {
    await server.close();
    await wiring.database.close();
    throw error;
  }
}

/**
 * Checks Temporal's search attributes, bounded: an unreachable Temporal does
 * not hold up the start (events are accepted without it). Missing search
 * attributes, or TLS/credential settings Temporal refuses, fail the start
 * naming the setting: waiting fixes neither.
 */
export async function checkTemporalSetup(wiring: ApiWiring, config: Config, server: FastifyInstance): Promise<void> {
  const { connection } = wiring;
  try {
    await connection.withDeadline(Date.now() + 3_000, () =>
      checkSearchAttributes(connection, config.temporal.namespace),
    );
  } catch (error) {
    const misconfigured =
      error instanceof MissingSearchAttributesError
        ? error
        : await diagnoseTemporalConnectFailure(error, config.temporal);
    if (misconfigured !== undefined) {
      await wiring.dependencies.stop();
      // The lazy Temporal connection is left to the exiting process: closing it now would let a pending
      // gRPC retry timer of the refused calls fire on a closed channel (an uncaught error).
      await wiring.database.close();
      throw misconfigured;
    }
    server.log.warn({ err: error }, 'Temporal is not reachable yet; events are stored and routed once it is');
  }
}

/**
 * Makes Temporal Schedules match Postgres, in the background: the API serves
 * while Temporal is down, and workers reconcile periodically. A short
 * deadline (workers reconcile every minute anyway); `stop` aborts it and
 * waits for it.
 */
export function startScheduleReconcile(wiring: ApiWiring, server: FastifyInstance) {
  const { client, scheduleManager } = wiring;
  const abort = new AbortController();
  const done = client
    .withDeadline(new Date(Date.now() + 10_000), () =>
      // From the listing, like the workers' sweep (ADR 0072): describing every schedule does not fit the deadline at scale.
      client.withAbortSignal(abort.signal, () => scheduleManager.reconcile({ compareWith: 'listing' })),
    )
    .then(
      (changes) => {
        if (changes.created.length + changes.updated.length + changes.deleted.length > 0)
          server.log.info({ ...changes }, 'schedules reconciled');
      },
      (error: unknown) =>
        server.log.warn({ err: error }, 'schedule reconciliation at start-up failed; workers retry it periodically'),
    );
  return {
    /** Ends calls in flight; a connect to an unreachable Temporal still runs to the reconcile's deadline. */
    stop(): Promise<void> {
      abort.abort();
      return done;
    },
  };
}

/**
 * The loops an API process runs, each started unless its option says not:
 * the dispatcher of pending events, the event retention sweeper (only when
 * an operator chose a retention: by default event ids are remembered
 * forever), the runner of bulk re-runs accepted by any process or left
 * behind by one that died, and the expiry sweep of held events.
 */
export function startBackgroundLoops(
  wiring: ApiWiring,
  config: Config,
  options: ApiAppOptions,
  server: FastifyInstance,
) {
  const dispatcher = createDispatcher({
    events: wiring.events,
    ingest: wiring.ingest,
    logger: server.log,
    pacing: wiring.pacing,
    windows: wiring.windowRevival,
    ...(options.dispatcherIntervalMs === undefined ? {} : { intervalMs: options.dispatcherIntervalMs }),
    ...(options.dispatcherBatchSize === undefined ? {} : { batchSize: options.dispatcherBatchSize }),
  });
  if (options.dispatcher ?? true) dispatcher.start();
  const { retentionDays, payloadRetentionDays } = config.events;
  const retention =
    retentionDays === null && payloadRetentionDays === null
      ? undefined
      : createEventRetention({
          events: wiring.events,
          logger: server.log,
          ...(retentionDays === null ? {} : { retentionMs: retentionDays * 86_400_000 }),
          ...(payloadRetentionDays === null ? {} : { payloadRetentionMs: payloadRetentionDays * 86_400_000 }),
        });
  if (options.retention ?? true) retention?.start();
  const bulkRerunRunner = createBulkRerunRunner({
    reruns: wiring.rerunsRepository,
    service: wiring.reruns,
    logger: server.log,
    ...(options.bulkRerunLeaseMs === undefined ? {} : { leaseMs: options.bulkRerunLeaseMs }),
  });
  if (options.bulkReruns ?? true) {
    wiring.reruns.onBulkAccepted(() => bulkRerunRunner.nudge());
    bulkRerunRunner.start();
  }
  const bulkReplayRunner = createBulkReplayRunner({
    replays: wiring.replaysRepository,
    service: wiring.replays,
    logger: server.log,
    ...(options.bulkRerunLeaseMs === undefined ? {} : { leaseMs: options.bulkRerunLeaseMs }),
  });
  if (options.bulkReruns ?? true) {
    wiring.replays.onBulkAccepted(() => bulkReplayRunner.nudge());
    bulkReplayRunner.start();
  }
  // Held events past their hold are recorded expired (docs/recovery.md); every process sweeps, skip-locked.
  const heldExpiry = createHeldExpiry({
    held: wiring.heldEventsRepository,
    logger: server.log,
    ...(options.heldExpiryIntervalMs === undefined ? {} : { intervalMs: options.heldExpiryIntervalMs }),
  });
  if (options.heldExpiry ?? true) heldExpiry.start();
  return { dispatcher, retention, bulkRerunRunner, bulkReplayRunner, heldExpiry };
}

/**
 * Runs shutdown steps in order, each bounded: a dependency that stops
 * answering mid-shutdown (a query on a connection Postgres never closes, a
 * stuck round) must not hold the process up forever. An overrun or a failure
 * is logged and the next step runs.
 */
export async function closeInSteps(
  server: FastifyInstance,
  steps: ReadonlyArray<readonly [what: string, run: () => Promise<unknown>]>,
): Promise<void> {
  for (const [what, run] of steps) {
    let timer: NodeJS.Timeout | undefined;
    const overran = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), CLOSE_STEP_TIMEOUT_MS);
    });
    const finished = run().then(
      () => false,
      (error: unknown) => {
        server.log.warn({ err: error }, `${what} failed while closing`);
        return false;
      },
    );
    if (await Promise.race([finished, overran]))
      server.log.warn(`${what} did not finish within ${CLOSE_STEP_TIMEOUT_MS} ms; closing without waiting for it`);
    clearTimeout(timer);
  }
}
