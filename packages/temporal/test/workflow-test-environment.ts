/**
 * One Temporal time-skipping test server and one worker running the real
 * workflow bundle with stub effects (Temporal activities), shared by the tests of one file
 * (packages/temporal/src/workflows/*.int.test.ts; ADR 0032).
 *
 * The stubs are plain functions: the workflow logic is tested in isolation
 * from Postgres and HTTP. The test server skips time whenever a test waits on
 * a workflow result and nothing else is due, so durations in these tests are
 * the real ones (`delay: 2h`, `run_timeout: 1h`) and still take milliseconds.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ApplicationFailure, IllegalStateError } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import type { Effects } from '../src/effects';
import { createTaskExpressionEffects } from '../src/effects/task-expressions';
import { SEARCH_ATTRIBUTE_KEYS } from '../src/search-attributes';

export interface WorkflowTestEnvironment {
  env: TestWorkflowEnvironment;
  /** The worker's task queue: start workflows on it. */
  taskQueue: string;
  /** Stops the worker, then the test server. */
  close(): Promise<void>;
}

/** Every activity throws "not expected" unless the test gives its own. */
export function stubEffects(stubs: Partial<Effects>): Effects {
  const unexpected = (name: string) => async (): Promise<never> => {
    throw ApplicationFailure.nonRetryable(`the activity ${name} is not expected in this test`);
  };
  return {
    logRun: unexpected('logRun'),
    setRunStatus: unexpected('setRunStatus'),
    recordTask: unexpected('recordTask'),
    httpTask: unexpected('httpTask'),
    awaitTaskWorkflow: unexpected('awaitTaskWorkflow'),
    emitEvent: unexpected('emitEvent'),
    processScheduleTick: unexpected('processScheduleTick'),
    requestConcurrencySlot: unexpected('requestConcurrencySlot'),
    markRunHoldsSlot: unexpected('markRunHoldsSlot'),
    closedWorkflows: unexpected('closedWorkflows'),
    requestOverlapSlot: unexpected('requestOverlapSlot'),
    cancelOverlappedRun: unexpected('cancelOverlappedRun'),
    registerEventWait: unexpected('registerEventWait'),
    closeEventWait: unexpected('closeEventWait'),
    prepareCalledRun: unexpected('prepareCalledRun'),
    advanceCoalesceWindow: unexpected('advanceCoalesceWindow'),
    // Pure (the CEL engine, no I/O): the real one.
    ...createTaskExpressionEffects(),
    ...stubs,
  };
}

const INDEXED_TYPE: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  DATETIME: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
};

export async function startWorkflowTestEnvironment(effects: Effects): Promise<WorkflowTestEnvironment> {
  const server = inject('temporalTestServer');
  if (server === '') {
    throw new Error(
      "Temporal's test server is not installed: run `npm test` once (scripts/bootstrap.mjs installs it into .tools/temporal-test-server) or set TEMPORAL_TEST_SERVER_PATH",
    );
  }
  try {
    // Workflow failures are what these tests provoke; the worker would log each one as a warning, and
    // core warns that the test server advertises fewer capabilities than a real one.
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
    });
  } catch (error) {
    if (!(error instanceof IllegalStateError)) throw error;
  }
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: server } },
  });
  try {
    // Every run carries these (the run starter sets them); the test server, like a real one, wants them registered.
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTE_KEYS.map((key) => [key.name, INDEXED_TYPE[key.type]!])),
    });
    const taskQueue = `workflow-tests-${randomUUID()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      // The bundle test/global-setup.ts built from the workflow sources, as production runs them.
      workflowBundle: { code: await readFile(inject('workflowBundlePath'), 'utf8') },
      activities: effects,
    });
    const running = worker.run();
    return {
      env,
      taskQueue,
      close: async () => {
        worker.shutdown();
        await running;
        await env.teardown();
      },
    };
  } catch (error) {
    await env.teardown();
    throw error;
  }
}

/**
 * Polls (in real time) until `check` returns something other than undefined.
 * Time is not skipped meanwhile: the test server skips only while a test
 * waits on a result (`handle.result()`, `client.workflow.execute()`).
 */
export async function until<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
