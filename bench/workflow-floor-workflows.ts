/**
 * Empty workflows for the engine's floor (bench/workflow-floor.ts, bench/hot-path.ts): Temporal's own
 * cost of the shape every run has — a parent workflow and one child workflow per task — with nothing
 * of activity-core in them.
 */
import { executeChild, workflowInfo } from '@temporalio/workflow';

/** The run shapes the hot-path benchmark measures: one task, five in a line, five with two parallel branches. */
export type FloorShape = 'one' | 'linear5' | 'graph5';

export async function floorChild(): Promise<string> {
  return 'ok';
}

export async function floorParent(): Promise<string> {
  return await executeChild(floorChild, { workflowId: `${workflowInfo().workflowId}:child` });
}

/**
 * A parent shaped like a run of `shape`, each task an empty child: `one` is floorParent; `linear5`
 * runs five children one after another; `graph5` runs the first, then two branches at once (two
 * children in a line beside one), then the last once both branches ended — the shape of the
 * hot-path benchmark's five-task graph.
 */
export async function floorRun(shape: FloorShape): Promise<number> {
  const id = workflowInfo().workflowId;
  const child = (index: number) => executeChild(floorChild, { workflowId: `${id}:${index}` });
  if (shape === 'one') {
    await child(0);
    return 1;
  }
  if (shape === 'linear5') {
    for (let index = 0; index < 5; index++) await child(index);
    return 5;
  }
  await child(0);
  await Promise.all([child(1).then(() => child(2)), child(3)]);
  await child(4);
  return 5;
}
