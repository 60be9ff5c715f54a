/**
 * Temporal's own floor for the shape of a run: an empty parent workflow that runs one empty child
 * workflow (a run of one `noop` task is that, plus its bookkeeping), on the same dev server and SDK
 * as the hot-path benchmark, with nothing of activity-core in the way.
 *
 *   npx tsx bench/workflow-floor.ts [--runs 30]
 *
 * Starts its own Temporal dev server and an SDK worker with default options in this process, runs
 * `--runs` parents one after another, and prints the median of every workflow task's dispatch
 * (WorkflowTaskScheduled → WorkflowTaskStarted) and of a parent's whole run (its first to its last
 * history event). Compare with the hot path's idle-run latency (docs/performance.md).
 */
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { findTemporalCli, startTemporalDevServer } from '@activity-core/dev-services';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';

const at = process.argv.indexOf('--runs');
const runs = at === -1 ? 30 : Number(process.argv[at + 1]);
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs needs a positive integer');
const cli = findTemporalCli(process.cwd(), process.env.TEMPORAL_CLI_PATH, process.env.PATH);
if (cli === undefined)
  throw new Error('no Temporal CLI: run `npm test` or `npm start` once (it installs .tools/temporal)');

const load0 = loadavg()[0]!;
const server = await startTemporalDevServer({ cliPath: cli });
const connection = await NativeConnection.connect({ address: server.address });
const client = new Client({ connection: await Connection.connect({ address: server.address }) });
const worker = await Worker.create({
  connection,
  taskQueue: 'workflow-floor',
  workflowsPath: fileURLToPath(new URL('./workflow-floor-workflows.ts', import.meta.url)),
});
const running = worker.run();
try {
  const dispatches: number[] = [];
  const totals: number[] = [];
  const { EVENT_TYPE_WORKFLOW_TASK_STARTED } = proto.temporal.api.enums.v1.EventType;
  for (let i = 0; i < runs; i++) {
    const handle = await client.workflow.start('floorParent', {
      taskQueue: 'workflow-floor',
      workflowId: `floor-${i}`,
    });
    await handle.result();
    for (const workflowId of [handle.workflowId, `${handle.workflowId}:child`]) {
      const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      const ms = (index: number) =>
        Number(events[index]!.eventTime!.seconds) * 1000 + (events[index]!.eventTime!.nanos ?? 0) / 1e6;
      events.forEach((event, index) => {
        if (event.eventType === EVENT_TYPE_WORKFLOW_TASK_STARTED) dispatches.push(ms(index) - ms(index - 1));
      });
      if (workflowId === handle.workflowId) totals.push(ms(events.length - 1) - ms(0));
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`workflow floor — ${runs} runs of an empty parent with one empty child, one after another`);
  console.log(`load average (1 min) at start ${load0.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}`);
  console.log(
    `workflow task dispatch (scheduled → started), median of ${dispatches.length}: ${median(dispatches).toFixed(1)} ms`,
  );
  console.log(`parent run (first → last history event), median: ${median(totals).toFixed(1)} ms`);
} finally {
  worker.shutdown();
  await running;
  await server.stop();
}
