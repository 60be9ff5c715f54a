import { expect } from 'vitest';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { silentLogger, waitFor, workflowBundle, type TestStack } from './harness';

/** The fields of a run record these tests read. */
export interface RunView {
  run_id: string;
  workflow_id: string;
  trigger_type: string;
  scheduled_for: string | null;
  window_start: string | null;
  window_end: string | null;
  status: string;
}

/** The fields of a fire record these tests read. */
export interface FireView {
  trigger_index: number;
  scheduled_for: string;
  range_end: string | null;
  status: string;
  reason: string;
  workflow_id: string | null;
  window_start: string | null;
  window_end: string | null;
  covered_by: string | null;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `2026-03-01T09:00:02+00:00`, the `scheduled_for` form. */
export const utc = (date: Date): string =>
  `${new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString().slice(0, 19)}+00:00`;

/** ISO strings as the API returns window bounds, for comparison with nominal times. */
export const isoOf = (scheduledFor: string): string => new Date(scheduledFor).toISOString();

export async function registerActivity(
  stack: TestStack,
  body: object,
): Promise<{ id: string; version: number; schedules: Array<Record<string, unknown>> }> {
  const response = await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload: body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

export async function listRuns(stack: TestStack, activityId: string): Promise<RunView[]> {
  const response = await stack.api.server.inject({
    method: 'GET',
    url: `/v1/runs?activity_id=${activityId}&limit=200`,
  });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json().items as RunView[]).sort((a, b) =>
    (a.scheduled_for ?? '').localeCompare(b.scheduled_for ?? ''),
  );
}

export async function listFires(stack: TestStack, activityId: string): Promise<FireView[]> {
  const response = await stack.api.server.inject({
    method: 'GET',
    url: `/v1/activities/${activityId}/fires?limit=500`,
  });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json().items as FireView[]).sort((a, b) => a.scheduled_for.localeCompare(b.scheduled_for));
}

/** The fire log once every decided run's start is confirmed (a run row can appear a moment before its fire row says `started`). */
export async function settledFires(stack: TestStack, activityId: string): Promise<FireView[]> {
  return await waitFor('every decided run to be confirmed started', async () => {
    const fires = await listFires(stack, activityId);
    return fires.some((fire) => fire.status === 'pending') ? undefined : fires;
  });
}

/**
 * The runs, once every run the fire log started at or before `through` has a row that has ended.
 * Runs decided together start in order but may finish in any order, and a run's row is written by
 * the run itself, a moment after its fire is recorded.
 */
export async function runsEndedThrough(stack: TestStack, activityId: string, through: string): Promise<RunView[]> {
  return await waitFor(`every run decided up to ${through} to end`, async () => {
    const fires = (await listFires(stack, activityId)).filter((fire) => fire.scheduled_for <= through);
    if (fires.some((fire) => fire.status === 'pending')) return undefined;
    const runs = await listRuns(stack, activityId);
    const ended = (workflowId: string | null) =>
      runs.some((run) => run.workflow_id === workflowId && run.status !== 'running');
    return fires.every((fire) => fire.status !== 'started' || ended(fire.workflow_id)) ? runs : undefined;
  });
}

/** Waits until the activity has a run whose nominal time satisfies `predicate`, and returns it. */
export async function waitForRun(
  stack: TestStack,
  activityId: string,
  predicate: (run: RunView) => boolean,
  timeoutMs = 20_000,
): Promise<RunView> {
  return await waitFor('a matching run', async () => (await listRuns(stack, activityId)).find(predicate), timeoutMs);
}

/** Stops the stack's worker (Temporal keeps firing schedules; nobody processes the ticks). */
export async function stopWorker(stack: TestStack): Promise<void> {
  await stack.worker?.close();
}

/** Starts a fresh worker on the stack's task queue; the caller closes it (before `stack.close()`). */
export async function startWorker(stack: TestStack): Promise<WorkerApp> {
  const worker = await createWorkerApp(stack.config, {
    logger: silentLogger,
    workflowBundle: await workflowBundle(),
    scheduleSweepIntervalMs: 0,
  });
  void worker.run();
  return worker;
}

/** Disables an activity, which pauses its schedules, so it stops firing for the rest of a test file. */
export async function disable(stack: TestStack, activityId: string): Promise<void> {
  const response = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activityId}/disable` });
  expect(response.statusCode, response.body).toBe(200);
}

/** A cron trigger every `seconds` seconds (6-field, seconds first). */
export const everySeconds = (seconds: number): string => `*/${seconds} * * * * *`;
