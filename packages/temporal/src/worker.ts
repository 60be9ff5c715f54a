import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { PayloadCodec } from '@temporalio/common';
import type { Effects } from './effects';
import type { Tracing } from './tracing';
import { effectTracingInterceptors, workflowTracingSinks } from './worker-tracing';

export const WORKFLOWS_PATH = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));
/** Workflow interceptors in every bundle: traces, for workflows started with a trace context (see tracing.ts). */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  fileURLToPath(new URL('./workflows/tracing-interceptors.ts', import.meta.url)),
];

/**
 * Bundles the workflow code once. Workers created from the same bundle start
 * in milliseconds instead of seconds (tests create many).
 */
export async function bundleWorkflows(): Promise<{ code: string }> {
  return await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    logger: quietBundlerLogger,
  });
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/** The output of bundleWorkflows(), in memory or in a file. */
export type PrebuiltWorkflowBundle = { code: string } | { codePath: string };

export interface CreateWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  effects: Effects;
  /** A prebuilt bundle (its code, or the file `npm run build` wrote); the workflows are bundled at start when omitted. */
  workflowBundle?: PrebuiltWorkflowBundle;
  /** Codecs for every payload the worker reads and writes (the encryption codec). */
  payloadCodecs?: PayloadCodec[];
  /** Extra worker options (tuning); identity, shutdown grace, ... */
  overrides?: Partial<WorkerOptions>;
  /** Traces (OTEL_*): activity spans, and the sink workflow spans are exported through. Off when absent. */
  tracing?: Tracing;
}

export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  // A production build (dist/) has no workflow sources to bundle: it must be given dist/worker/workflow-bundle.js.
  if (options.workflowBundle === undefined && !existsSync(WORKFLOWS_PATH)) {
    throw new Error(
      `No workflow bundle was given and the workflow sources are not at ${WORKFLOWS_PATH}; a production build loads the one \`npm run build\` writes (dist/worker/workflow-bundle.js)`,
    );
  }
  return await Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: options.effects,
    ...(options.workflowBundle === undefined
      ? { workflowsPath: WORKFLOWS_PATH }
      : { workflowBundle: options.workflowBundle }),
    interceptors: {
      // A prebuilt bundle has them already (bundleWorkflows()).
      ...(options.workflowBundle === undefined ? { workflowModules: WORKFLOW_INTERCEPTOR_MODULES } : {}),
      ...(options.tracing === undefined ? {} : { activity: [effectTracingInterceptors()] }),
    },
    sinks: workflowTracingSinks(options.tracing),
    // Let in-flight activities finish on SIGTERM before giving up.
    shutdownGraceTime: '10 seconds',
    // A heartbeat's answer is how a cancellation reaches an activity (an `http` request in flight is then
    // aborted): send one at least every 5 s while an activity heartbeats, whatever its heartbeat timeout.
    maxHeartbeatThrottleInterval: '5 seconds',
    ...(options.payloadCodecs === undefined ? {} : { dataConverter: { payloadCodecs: options.payloadCodecs } }),
    ...options.overrides,
  });
}
