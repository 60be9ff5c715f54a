/**
 * What the worker's workflow side costs per workflow, without a server: replays recorded histories
 * (test/histories) many times in this process through `Worker.runReplayHistories`, which creates
 * every workflow in the same reusable V8 context a worker uses, and prints the CPU time per replayed
 * workflow. Every replay instantiates the workflow (its bundle's per-workflow modules run again),
 * so this is the cost a worker pays for each new run and for each run it must replay after its
 * cache evicted it.
 *
 *   npm run bench:workflow-replay -- [--replays 400] [--bundle dist/worker/workflow-bundle.js]
 *
 * Without --bundle it bundles the workflow sources first (as `npm run build` does). The timed part
 * includes creating the replay worker once per run of the loop (amortised over --replays). Compare two
 * bundles by running it twice; the figures are this process's CPU, so a busy machine moves them
 * less than it moves wall-clock time.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { bundleWorkflows } from '../packages/temporal/src/worker';

const at = process.argv.indexOf('--replays');
const replays = at === -1 ? 400 : Number(process.argv[at + 1]);
if (!Number.isInteger(replays) || replays < 1) throw new Error('--replays needs a positive integer');
const bundleAt = process.argv.indexOf('--bundle');
const bundlePath = bundleAt === -1 ? undefined : process.argv[bundleAt + 1];

// A run and a task, with local bookkeeping, as a worker runs them today: the run's workflow and an
// `http` task's child workflow (no `noop` task history is recorded; a noop task does less than this).
const FILES = ['run-activity-workflow.local-bookkeeping.binpb', 'task-workflow-http.local-bookkeeping.binpb'];
const dir = join(process.cwd(), 'test', 'histories');
const workflowIds = JSON.parse(await readFile(join(dir, 'workflow-ids.json'), 'utf8')) as Record<string, string>;
const histories = await Promise.all(
  FILES.map(async (file) => ({
    file,
    workflowId: workflowIds[file] ?? file,
    history: proto.temporal.api.history.v1.History.decode(await readFile(join(dir, file))),
  })),
);

const workflowBundle = bundlePath === undefined ? await bundleWorkflows() : { codePath: bundlePath };
const load0 = loadavg()[0]!;

async function replayAll(count: number): Promise<{ cpuMs: number; wallMs: number }> {
  async function* items() {
    for (let i = 0; i < count; i++) {
      const { history, workflowId } = histories[i % histories.length]!;
      yield { history, workflowId };
    }
  }
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: 'bench' }, items())) {
    if (result.error !== undefined) throw result.error;
  }
  const cpu = process.cpuUsage(cpu0);
  return { cpuMs: (cpu.user + cpu.system) / 1000, wallMs: performance.now() - wall0 };
}

await replayAll(Math.min(50, replays)); // warm-up: JIT, the reusable context
const { cpuMs, wallMs } = await replayAll(replays);
console.log(
  `workflow replay — ${replays} workflows (${FILES.join(', ')} in turn), bundle ${bundlePath ?? 'built from the sources'}`,
);
console.log(`load average (1 min) at start ${load0.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}`);
console.log(
  `per workflow: ${(cpuMs / replays).toFixed(2)} ms CPU (this process, all threads), ${(wallMs / replays).toFixed(2)} ms wall`,
);
