/** Empty workflows for bench/workflow-floor.ts: Temporal's own cost of a parent that runs one child. */
import { executeChild, workflowInfo } from '@temporalio/workflow';

export async function floorChild(): Promise<string> {
  return 'ok';
}

export async function floorParent(): Promise<string> {
  return await executeChild(floorChild, { workflowId: `${workflowInfo().workflowId}:child` });
}
