/**
 * Temporal's own floor for the shape of a run: an empty parent workflow that runs one empty child
 * workflow (a run of one `noop` task is that, plus its bookkeeping), on the same dev server and SDK
 * as the hot-path benchmark, with nothing of activity-core in the way.
 *
 *   npx tsx bench/workflow-floor.ts [--runs 30] [--backlog 0] [--dc key=value …]
 *
 * Starts its own Temporal dev server and an SDK worker with default options in this process, runs
 * `--runs` parents one after another, and prints the median of every workflow task's dispatch
 * (WorkflowTaskScheduled → WorkflowTaskStarted) and of a parent's whole run (its first to its last
 * history event). Compare with the hot path's idle-run latency (docs/performance.md).
 *
 * With `--backlog N` it first starts N parents before the worker runs, then lets the worker drain
 * them and prints runs per second (first to last parent finished) and the CPU the Temporal server
 * and this process (the worker) used per run: the engine's own drain rate for the shape, to
 * compare with the hot path's backlog row. The server runs with the dynamic config `npm start`
 * gives it (DEV_SERVER_DYNAMIC_CONFIG); `--dc key=value` changes one value, e.g.
 * `--dc history.transferProcessorMaxPollRPS=20` for Temporal's stock setting (the value is JSON:
 * quote strings, `--dc 'some.key="text"'`).
 */
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { DEV_SERVER_DYNAMIC_CONFIG, findTemporalCli, startTemporalDevServer } from '@activity-core/dev-services';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { CLOCK_TICKS, keyValueArgs, procStat } from './proc';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} needs a whole number`);
  return value;
}
const runs = flag('runs', 30);
const backlog = flag('backlog', 0);
if (backlog === 1) throw new Error('--backlog needs 0 or at least 2 (a rate from the first to the last)');
if (runs < 1) throw new Error('--runs needs a positive integer');
const cli = findTemporalCli(process.cwd(), process.env.TEMPORAL_CLI_PATH, process.env.PATH);
if (cli === undefined)
  throw new Error('no Temporal CLI: run `npm test` or `npm start` once (it installs .tools/temporal)');

// `--dc key=value` (repeatable): a dynamic-config value for the dev server, to try server settings.
const dynamicConfig: Record<string, string | number | boolean> = { ...DEV_SERVER_DYNAMIC_CONFIG };
for (const [key, value] of keyValueArgs('dc')) dynamicConfig[key] = JSON.parse(value) as string | number | boolean;

const load0 = loadavg()[0]!;
const server = await startTemporalDevServer({ cliPath: cli, dynamicConfig });
const connection = await NativeConnection.connect({ address: server.address });
const client = new Client({ connection: await Connection.connect({ address: server.address }) });
/** CPU seconds (user + system) the server process has used so far. */
const serverCpu = () => (procStat(server.process.pid ?? -1)?.ownTicks ?? NaN) / CLOCK_TICKS;
// The backlog's parents are started before any worker polls the queue.
const backlogHandles = await Promise.all(
  Array.from({ length: backlog }, (_, i) =>
    client.workflow.start('floorParent', { taskQueue: 'workflow-floor', workflowId: `floor-backlog-${i}` }),
  ),
);
const worker = await Worker.create({
  connection,
  taskQueue: 'workflow-floor',
  workflowsPath: fileURLToPath(new URL('./workflow-floor-workflows.ts', import.meta.url)),
});
const [serverBefore, ownBefore] = [serverCpu(), process.cpuUsage()];
const running = worker.run();
try {
  if (backlog > 0) {
    const finished = await Promise.all(backlogHandles.map(async (handle) => (await handle.result(), Date.now())));
    const own = process.cpuUsage(ownBefore);
    const seconds = (Math.max(...finished) - Math.min(...finished)) / 1000;
    console.log(
      `backlog of ${backlog} parents (each with one child): ${((backlog - 1) / seconds).toFixed(1)} runs/s from the first to the last finished; CPU per run: server ${(((serverCpu() - serverBefore) * 1000) / backlog).toFixed(2)} ms, worker (this process from worker.run(), with its ${backlog} result() calls) ${((own.user + own.system) / 1000 / backlog).toFixed(2)} ms`,
    );
  }
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
