/**
 * The floor's worker as a process of its own (bench/hot-path.ts): an SDK worker with default options
 * and the empty workflows of bench/workflow-floor-workflows.ts, nothing of activity-core, so its CPU is
 * read from /proc exactly like the activity-core worker's.
 *
 *   TEMPORAL_ADDRESS=… FLOOR_TASK_QUEUE=… FLOOR_BUNDLE=<code path> node --import tsx bench/floor-worker.ts
 *
 * FLOOR_BUNDLE is a workflow bundle written beforehand (as `npm run build` writes the worker's), so the
 * process does not spend its first seconds bundling. Runs until SIGTERM or SIGINT.
 */
import { NativeConnection, Worker } from '@temporalio/worker';

const required = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};
const connection = await NativeConnection.connect({ address: required('TEMPORAL_ADDRESS') });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: required('FLOOR_TASK_QUEUE'),
  workflowBundle: { codePath: required('FLOOR_BUNDLE') },
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => worker.shutdown());
await worker.run();
await connection.close();
