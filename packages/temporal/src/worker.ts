import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Activities } from './activities';

export const WORKFLOWS_PATH = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));

/**
 * Bundles the workflow code once. Workers created from the same bundle start
 * in milliseconds instead of seconds (tests create many).
 */
export async function bundleWorkflows(): Promise<{ code: string }> {
  return await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

export interface CreateWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: Activities;
  /** A prebuilt bundle; the workflows are bundled at start when omitted. */
  workflowBundle?: { code: string };
  /** Extra worker options (tuning); identity, shutdown grace, ... */
  overrides?: Partial<WorkerOptions>;
}

export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  return await Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    activities: options.activities,
    ...(options.workflowBundle === undefined ? { workflowsPath: WORKFLOWS_PATH } : { workflowBundle: options.workflowBundle }),
    // Let in-flight activities finish on SIGTERM before giving up.
    shutdownGraceTime: '10 seconds',
    ...options.overrides,
  });
}
