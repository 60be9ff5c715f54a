/**
 * The `activity-core` command line against the real stack (API, worker,
 * Postgres, Temporal): apply with its plan, dry run, prune and validation
 * errors; get, list, runs and explain; rerun of one run and in bulk; and the
 * bin itself.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, rerunWorkflowId, runIdFor } from '@activity-core/contracts';
import { ActivityCoreClient, collect } from '../src/index';
import { runCli } from '../src/cli/run';
import { startStack, TEST_KEY, waitFor, type TestStack } from '../../../test/harness';
import { startHttpTarget } from '../../../test/http-target';
import { listen } from './listen';

let stack: TestStack;
let baseUrl: string;
let client: ActivityCoreClient;
let dir: string;

const repoRoot = resolve(import.meta.dirname, '../../..');
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[/;

beforeAll(async () => {
  stack = await startStack({ env: { API_KEYS: TEST_KEY } });
  baseUrl = await listen(stack);
  client = new ActivityCoreClient({ baseUrl, apiKey: TEST_KEY });
  dir = await mkdtemp(join(tmpdir(), 'activity-core-cli-'));
});
afterAll(async () => {
  await stack?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in this process, output piped (not a terminal) unless `tty`. */
async function cli(args: string[], options: { tty?: boolean; env?: Record<string, string> } = {}): Promise<Ran> {
  const stdout = {
    text: '',
    isTTY: options.tty === true,
    write(chunk: string) {
      this.text += chunk;
    },
  };
  const stderr = {
    text: '',
    isTTY: options.tty === true,
    write(chunk: string) {
      this.text += chunk;
    },
  };
  const code = await runCli(args, {
    stdout,
    stderr,
    env: { ACTIVITY_CORE_URL: baseUrl, ACTIVITY_CORE_API_KEY: TEST_KEY, ...options.env },
    cwd: dir,
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

async function write(path: string, text: string): Promise<void> {
  await mkdir(join(dir, path, '..'), { recursive: true });
  await writeFile(join(dir, path), text);
}

const live = async () => new Map((await collect(client.activities.listAll())).map((record) => [record.name, record]));

const ordersYaml = (url: string) => `# orders team
name: dac-order-sync
description: Tell the ERP about paid orders
triggers:
  - type: event
    event_type: dac.order.paid
tasks:
  - type: noop
    name: ${url}
---
name: dac-order-audit
triggers:
  - type: event
    event_type: dac.order.*
    filter: data.amount > 100
tasks:
  - type: noop
`;

const reportJson = JSON.stringify(
  {
    name: 'dac-report',
    triggers: [{ type: 'cron', cron: '0 9 * * 1-5', timezone: 'Europe/Paris' }],
    tasks: [{ type: 'delay', config: { duration: '1s' } }],
  },
  null,
  2,
);

describe('activity-core apply', () => {
  test('creates every definition of the files, keyed by name, and says so per activity', async () => {
    await write('defs/orders.yaml', ordersYaml('first'));
    await write('defs/reports/report.json', reportJson);

    const ran = await cli(['apply', '-f', 'defs']);

    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('+ create    dac-order-sync (defs/orders.yaml:2)');
    expect(ran.stdout).toContain('+ create    dac-order-audit (defs/orders.yaml:11)');
    expect(ran.stdout).toContain('+ create    dac-report (defs/reports/report.json:1)');
    expect(ran.stdout).toContain('3 created, 0 updated, 0 unchanged, 0 deleted');
    expect(ran.stdout).not.toMatch(ANSI);
    const records = await live();
    expect([...records.keys()].sort()).toEqual(['dac-order-audit', 'dac-order-sync', 'dac-report']);
    expect(records.get('dac-report')).toMatchObject({
      version: 1,
      definition: { triggers: [{ timezone: 'Europe/Paris', misfire_policy: 'skip' }] },
    });
  });

  test('applying the same files again changes nothing: every activity is unchanged and keeps its version', async () => {
    const ran = await cli(['apply', '-f', 'defs']);

    expect(ran.code).toBe(0);
    expect(ran.stdout.split('\n').filter((line) => line.startsWith('= unchanged'))).toHaveLength(3);
    expect(ran.stdout).toContain('0 created, 0 updated, 3 unchanged, 0 deleted');
    expect([...(await live()).values()].map((record) => record.version)).toEqual([1, 1, 1]);
  });

  test('--dry-run prints the field diff of an update, changes nothing and exits 2', async () => {
    await write('defs/orders.yaml', ordersYaml('second'));

    const ran = await cli(['apply', '-f', 'defs', '--dry-run']);

    expect(ran.code).toBe(2);
    expect(ran.stdout).toContain('~ update    dac-order-sync v1 → v2 (defs/orders.yaml:2)');
    expect(ran.stdout).toContain('    ~ tasks[0].name: "first" → "second"');
    expect(ran.stdout).toContain('= unchanged dac-order-audit');
    expect(ran.stdout).toContain('0 to create, 1 to update, 2 unchanged, 0 to delete (dry run: nothing was changed)');
    expect((await live()).get('dac-order-sync')).toMatchObject({
      version: 1,
      definition: { tasks: [{ name: 'first' }] },
    });
  });

  test('--dry-run with nothing to change exits 0', async () => {
    await write('defs/orders.yaml', ordersYaml('first'));
    const ran = await cli(['apply', '-f', 'defs', '--dry-run']);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('0 to create, 0 to update, 3 unchanged, 0 to delete');
  });

  test('an update replaces the live definition and bumps its version', async () => {
    await write('defs/orders.yaml', ordersYaml('second'));

    const ran = await cli(['apply', '-f', 'defs']);

    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('0 created, 1 updated, 2 unchanged, 0 deleted');
    const records = await live();
    expect(records.get('dac-order-sync')).toMatchObject({ version: 2, definition: { tasks: [{ name: 'second' }] } });
    expect(records.get('dac-order-audit')?.version).toBe(1);
  });

  test('--prune deletes live activities no file defines, within --prune-prefix', async () => {
    await client.activities.create({ name: 'other-team-thing', tasks: [{ type: 'noop' }] });
    await unlink(join(dir, 'defs/reports/report.json'));

    const plan = await cli(['apply', '-f', 'defs', '--prune', '--prune-prefix', 'dac-', '--dry-run']);
    expect(plan.code).toBe(2);
    expect(plan.stdout).toMatch(/- delete {4}dac-report \(id [0-9a-f-]+, version 1; in no file\)/);
    expect(plan.stdout).not.toContain('other-team-thing');
    expect((await live()).has('dac-report')).toBe(true);

    const ran = await cli(['apply', '-f', 'defs', '--prune', '--prune-prefix', 'dac-']);

    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('0 created, 0 updated, 2 unchanged, 1 deleted');
    expect([...(await live()).keys()].sort()).toEqual(['dac-order-audit', 'dac-order-sync', 'other-team-thing']);
  });

  test('an invalid file is reported with file, line, field path and message, exits 1, and nothing is applied', async () => {
    await write(
      'bad/broken.yaml',
      `name: dac-broken
triggers:
  - type: event
    event_type: dac.broken
tasks:
  - type: http
    config:
      url: ftp://example.test/x
      retries: 3
`,
    );
    await write('bad/good.yaml', 'name: dac-would-be-fine\ntasks:\n  - type: noop\n');

    const ran = await cli(['apply', '-f', 'bad']);

    expect(ran.code).toBe(1);
    expect(ran.stdout).toBe('');
    expect(ran.stderr).toMatch(/error bad\/broken\.yaml:8:12: tasks\[0\]\.config\.url: .+/);
    expect(ran.stderr).toMatch(/error bad\/broken\.yaml:9:7: tasks\[0\]\.config: .*retries/);
    expect(ran.stderr).toContain('problems in 1 file; nothing was applied');
    expect((await live()).has('dac-would-be-fine')).toBe(false);
  });

  test('a YAML syntax error and a name defined twice are reported with their place', async () => {
    await write('twice/a.yaml', 'name: dac-twice\ntasks: [{ type: noop }]\n');
    await write('twice/b.yaml', 'name: dac-twice\ntasks: [{ type: noop }]\n---\nname: [unclosed\n');

    const ran = await cli(['apply', '-f', 'twice', '--dry-run']);

    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/error twice\/b\.yaml:\d+:\d+: [A-Z]/);
    expect(ran.stderr).toContain('twice/b.yaml:1:7: name: "dac-twice" is defined twice; first at twice/a.yaml:1');
  });

  test('a definition the server refuses is reported at the file and field the server names; the others still apply', async () => {
    await write(
      'loop/loop.yaml',
      `name: dac-loop
triggers:
  - type: event
    event_type: dac.loop
tasks:
  - type: emit_event
    config:
      event_type: dac.loop
---
name: dac-fine
tasks:
  - type: noop
`,
    );

    const ran = await cli(['apply', '-f', 'loop']);

    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain('error loop/loop.yaml: dac-loop: 400 Invalid request');
    expect(ran.stderr).toMatch(/loop\/loop\.yaml:8:19: tasks\[0\]\.config\.event_type: .*allow_self_trigger/);
    expect(ran.stdout).toContain('1 created, 0 updated, 0 unchanged, 0 deleted, 1 failed');
    const records = await live();
    expect(records.has('dac-fine')).toBe(true);
    expect(records.has('dac-loop')).toBe(false);
  });

  test('a directory without definition files is an error, so --prune cannot empty the server', async () => {
    await mkdir(join(dir, 'empty/sub'), { recursive: true });
    await write('empty/sub/notes.txt', 'not a definition');
    const ran = await cli(['apply', '-f', 'empty', '--prune']);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain('empty: the directory holds no .yaml, .yml or .json files');
  });
});

describe('activity-core get and list', () => {
  test('get prints the stored definition as YAML that applies as unchanged', async () => {
    const ran = await cli(['get', 'dac-order-audit']);

    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/^# activity dac-order-audit · id [0-9a-f-]+ · version 1 · updated /);
    expect(ran.stdout).toContain('filter: data.amount > 100');
    await write('roundtrip/audit.yaml', ran.stdout);
    const again = await cli(['apply', '-f', 'roundtrip', '--dry-run']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('= unchanged dac-order-audit');

    const asJson = await cli(['get', 'dac-order-audit', '-o', 'json']);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ name: 'dac-order-audit', version: 1, enabled: true });
  });

  test('get of an unknown name exits 1 and says so', async () => {
    const ran = await cli(['get', 'dac-nope']);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toBe('error no live activity is named dac-nope\n');
  });

  test('list prints a plain table when piped and colours on a terminal unless NO_COLOR is set', async () => {
    const piped = await cli(['list']);
    expect(piped.code).toBe(0);
    expect(piped.stdout.split('\n')[0]).toMatch(/^NAME +VERSION +ENABLED +TRIGGERS +TASKS +UPDATED$/);
    expect(piped.stdout).toMatch(/dac-order-audit +v1 +yes +event dac\.order\.\* \(filtered\) +1 /);
    expect(piped.stdout).not.toMatch(ANSI);
    expect((await cli(['list'], { tty: true })).stdout).toMatch(ANSI);
    expect((await cli(['list'], { tty: true, env: { NO_COLOR: '1' } })).stdout).not.toMatch(ANSI);
    expect((await cli(['list', '--no-color'], { tty: true })).stdout).not.toMatch(ANSI);

    const asJson = JSON.parse((await cli(['list', '-o', 'json'])).stdout) as Array<{ name: string }>;
    expect(asJson.map((record) => record.name)).toContain('dac-fine');
  });
});

describe('activity-core runs and explain', () => {
  test("runs lists an activity's runs and shows one run with its tasks", async () => {
    const sent = await client.events.send({
      event_id: 'dac-evt-1',
      event_type: 'dac.order.paid',
      source: 'shop',
      occurred_at: '2026-03-01T09:00:00Z',
      data: { amount: 50 },
    });
    const runId = sent.runs![0]!.run_id;
    await waitFor('the run to succeed', async () =>
      (await client.runs.get(runId).catch(() => undefined))?.status === 'succeeded' ? true : undefined,
    );

    const listed = await cli(['runs', '--activity', 'dac-order-sync']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${runId} +dac-order-sync +v2 +succeeded +event +dac-evt-1 `));

    const one = await cli(['runs', runId]);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`run ${runId} · dac-order-sync v2 · succeeded`);
    expect(one.stdout).toMatch(/\n0 +noop +succeeded +1 /);
    expect(one.stdout).toContain('temporal  http');

    const asJson = JSON.parse((await cli(['runs', '--event', 'dac-evt-1', '-o', 'json'])).stdout) as Array<{
      run_id: string;
    }>;
    expect(asJson.map((run) => run.run_id)).toEqual([runId]);
    expect((await cli(['runs', '--status', 'sideways'])).code).toBe(64);
  });

  test('explain event says which activity ran, which a filter stopped, and why another did not run at all', async () => {
    const ran = await cli(['explain', 'event', 'dac-evt-1', '--activity', 'dac-fine']);

    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('event dac-evt-1 · dac.order.paid from shop · accepted ');
    expect(ran.stdout).toMatch(/✓ dac-order-sync \(v2\): ran — run [0-9a-f-]+ · run succeeded/);
    expect(ran.stdout).toContain('✗ dac-order-audit (v1): did not run — its filter said no: ');
    expect(ran.stdout).toContain('✗ dac-fine: did not run — it has no event triggers');

    const unknown = await cli(['explain', 'event', 'dac-never-sent']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('event dac-never-sent was never accepted');
  });

  test("explain event shows a sender's control characters as escapes, never raw, and --output json keeps the value", async () => {
    // A clear-screen, a one-character CSI and a right-to-left override, as a hostile sender could put in `source`.
    const source = 'shop\u001b[2J\u009b31m\u202e';
    const posted = await client.events.send({
      event_id: 'cli-escapes-1',
      event_type: 'cli.escapes',
      source,
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    });
    expect(posted.status).toBe('accepted');

    const ran = await cli(['explain', 'event', 'cli-escapes-1']);
    expect(ran.code).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(ran.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(ran.stdout).toContain('from shop\\x1b[2J\\x9b31m\\u202e · accepted ');

    const asJson = await cli(['explain', 'event', 'cli-escapes-1', '--output', 'json']);
    expect(asJson.stdout).not.toMatch(/[\u009b\u202e]/);
    expect(asJson.stdout).not.toContain('\u001b');
    expect(JSON.parse(asJson.stdout).envelope.source).toBe(source);
  });

  test('explain fire says why a fire time did or did not run', async () => {
    const report = await client.activities.create({
      name: 'dac-hourly',
      triggers: [{ type: 'cron', cron: '0 * * * *' }],
      tasks: [{ type: 'noop' }],
    });
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000).toISOString();
    await client.schedules.backfill(report.id, { start: hour, end: hour });

    const ran = await cli(['explain', 'fire', 'dac-hourly', hour]);

    expect(ran.code).toBe(0);
    expect(ran.stdout.split('\n')[0]).toMatch(/^dac-hourly at \S+: .+/);
    expect(ran.stdout).toMatch(/TRIGGER +FIRE TIME +DECISION +REASON +RUN/);
    expect(ran.stdout).toMatch(/0 +\S+ +started +backfill +[0-9a-f-]{36}/);
    const asJson = JSON.parse((await cli(['explain', 'fire', 'dac-hourly', hour, '-o', 'json'])).stdout) as {
      explanation: string;
    };
    expect(asJson.explanation.length).toBeGreaterThan(0);
  });
});

describe('activity-core rerun', () => {
  let target: Awaited<ReturnType<typeof startHttpTarget>>;
  const calls = new Map<string, number>();
  /** --from and --to around the runs of dac-rerun-bulk. */
  let bulkRange: string[] = [];
  let bulkOriginals: string[] = [];

  beforeAll(async () => {
    target = await startHttpTarget((request) => {
      const path = request.url.split('?')[0] ?? '';
      const count = (calls.get(path) ?? 0) + 1;
      calls.set(path, count);
      // `/flaky/…` fails (400, not retried) the first time it is called, then succeeds.
      if (path.startsWith('/flaky') && count === 1) return { status: 400, body: { error: 'not yet' } };
      if (path.startsWith('/token')) return { status: 200, body: { token: `tok-${count}` } };
      return { status: 200, body: { ok: true } };
    });
  });
  afterAll(async () => {
    await target?.close();
  });

  async function failedRun(
    name: string,
    tasks: Parameters<ActivityCoreClient['activities']['create']>[0]['tasks'],
    eventId: string,
  ): Promise<string> {
    const activity =
      (await live()).get(name) ??
      (await client.activities.create({ name, triggers: [{ type: 'event', event_type: `dac.${name}` }], tasks }));
    const sent = await client.events.send({
      event_id: eventId,
      event_type: `dac.${name}`,
      source: 'shop',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    });
    const runId = sent.runs![0]!.run_id;
    expect(runId).toBe(runIdFor(eventRunWorkflowId(activity.id, eventId)));
    await waitFor(`run ${eventId} failed`, async () =>
      (await client.runs.get(runId).catch(() => undefined))?.status === 'failed' ? true : undefined,
    );
    return runId;
  }

  const ended = (runId: string) =>
    waitFor(`run ${runId} ended`, async () => {
      const run = await client.runs.get(runId).catch(() => undefined);
      return run === undefined || run.status === 'running' ? undefined : run;
    });

  test('rerun <run_id> re-runs a failed run from the start and prints the re-run, its workflow id, status and key', async () => {
    const original = await failedRun(
      'dac-rerun-start',
      [
        { type: 'http', config: { url: `${target.url}/start-first` } },
        { type: 'http', config: { url: `${target.url}/flaky/start` } },
      ],
      'dac-rerun-1',
    );

    const ran = await cli(['rerun', original]);

    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    const workflowId = rerunWorkflowId(original, 1);
    const rerunId = runIdFor(workflowId);
    expect(ran.stdout).toContain(`re-run ${rerunId} of ${original} · attempt 1 · from start (task 0) · started\n`);
    expect(ran.stdout).toContain(`  workflow  ${workflowId}\n`);
    expect(ran.stdout).toMatch(
      / {2}key {7}([0-9a-f-]{36}) {2}\(to repeat this request without a second re-run: --idempotency-key \1\)\n/,
    );
    expect(ran.stdout).not.toMatch(ANSI);
    expect(await ended(rerunId)).toMatchObject({
      status: 'succeeded',
      rerun_of: original,
      tasks: [
        { task_index: 0, status: 'succeeded' },
        { task_index: 1, status: 'succeeded' },
      ],
    });
    expect(calls.get('/start-first')).toBe(2);
  });

  test('rerun --from failed-task skips the tasks that succeeded and reuses their results', async () => {
    const original = await failedRun(
      'dac-rerun-resume',
      [
        { type: 'http', config: { url: `${target.url}/token` } },
        { type: 'http', config: { url: `${target.url}/flaky/resume/{{tasks.0.result.body.token}}` } },
      ],
      'dac-rerun-2',
    );

    const ran = await cli(['rerun', original, '--from', 'failed-task', '-o', 'json']);

    expect(ran.code).toBe(0);
    const answer = JSON.parse(ran.stdout) as { run_id: string; from: string; from_task_index: number; status: string };
    expect(answer).toMatchObject({
      rerun_of: original,
      from: 'failed_task',
      from_task_index: 1,
      status: 'started',
      key_generated: false,
    });
    expect(await ended(answer.run_id)).toMatchObject({
      status: 'succeeded',
      tasks: [{ task_index: 1, status: 'succeeded' }],
    });
    expect(calls.get('/token')).toBe(1);
    expect(
      target.requests.filter((request) => request.url.startsWith('/flaky/resume/')).map((request) => request.url),
    ).toEqual(['/flaky/resume/tok-1', '/flaky/resume/tok-1']);
  });

  test('the same Idempotency-Key twice is one re-run: the second command prints duplicate; the printed key repeats a request', async () => {
    const original = await failedRun(
      'dac-rerun-key',
      [{ type: 'http', config: { url: `${target.url}/flaky/key` } }],
      'dac-rerun-3',
    );

    const first = await cli(['rerun', original, '--idempotency-key', 'dac-incident-1']);
    const second = await cli(['rerun', original, '--idempotency-key', 'dac-incident-1']);

    expect(first.code).toBe(0);
    expect(first.stdout).toContain('· attempt 1 · from start (task 0) · started\n');
    expect(first.stdout).toContain('  key       dac-incident-1\n');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(
      `re-run ${runIdFor(rerunWorkflowId(original, 1))} of ${original} · attempt 1 · from start (task 0) · duplicate (this key already named this re-run: nothing new was started)\n`,
    );
    await ended(runIdFor(rerunWorkflowId(original, 1)));

    // Without --idempotency-key each command is a new re-run; its printed key repeats it.
    const third = await cli(['rerun', original]);
    expect(third.stdout).toContain('· attempt 2 ·');
    const key = /--idempotency-key (\S+)\)/.exec(third.stdout)?.[1];
    expect(key).toBeDefined();
    const repeated = await cli(['rerun', original, '--idempotency-key', key!]);
    expect(repeated.stdout).toContain('· attempt 2 · from start (task 0) · duplicate');
    await ended(runIdFor(rerunWorkflowId(original, 2)));
    expect((await client.runs.get(original)).reruns.map((link) => link.attempt)).toEqual([1, 2]);
  });

  test('a bulk re-run with --dry-run prints how many runs it would re-run and starts none', async () => {
    const tasks = [{ type: 'http' as const, config: { url: `${target.url}/flaky/bulk-{{event.event_id}}` } }];
    const since = new Date(Date.now() - 60_000).toISOString();
    const originals = [
      await failedRun('dac-rerun-bulk', tasks, 'dac-bulk-1'),
      await failedRun('dac-rerun-bulk', tasks, 'dac-bulk-2'),
    ];
    const range = ['--from', since, '--to', new Date(Date.now() + 60_000).toISOString()];
    bulkRange = range;
    bulkOriginals = originals;

    const ran = await cli(['rerun', '--activity', 'dac-rerun-bulk', '--status', 'failed', ...range, '--dry-run']);

    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    expect(ran.stdout).toBe('2 runs would be re-run (dry run: nothing was started)\n');
    for (const original of originals) expect((await client.runs.get(original)).reruns).toEqual([]);
    expect(
      (await cli(['rerun', '--activity', 'dac-rerun-bulk', '--trigger', 'cron', ...range, '--dry-run'])).stdout,
    ).toBe('0 runs would be re-run (dry run: nothing was started)\n');
  });

  test('a bulk re-run with --wait prints its id, one progress line per change when piped, and the completed record', async () => {
    const range = bulkRange;

    const ran = await cli(['rerun', '--activity', 'dac-rerun-bulk', ...range, '--wait']);

    expect(ran.code).toBe(0);
    const id = /^bulk re-run ([0-9a-f-]{36}) · 2 runs selected · key [0-9a-f-]{36}\n/.exec(ran.stdout)?.[1];
    expect(id).toBeDefined();
    expect(ran.stdout).toContain(`bulk re-run ${id} · completed\n`);
    expect(ran.stdout).toContain('  progress  2/2 processed · 2 started · 0 skipped\n');
    const progressLines = ran.stderr.split('\n').filter((line) => /^(running|completed): /.test(line));
    expect(progressLines.at(-1)).toBe('completed: 2/2 processed · 2 started · 0 skipped');
    expect(ran.stderr).not.toMatch(ANSI);
    for (const original of bulkOriginals)
      expect((await ended(runIdFor(rerunWorkflowId(original, 1)))).status).toBe('succeeded');

    // On a terminal the progress is one line redrawn in place; the runs now have a succeeded re-run, so both are skipped.
    const again = await cli(['rerun', '--activity', 'dac-rerun-bulk', ...range, '--wait'], { tty: true });
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('\r\u001b[2K');
    expect(again.stdout).toContain('2/2 processed · 0 started · 2 skipped (rerun_active 2)');

    // --bulk <id> shows a bulk re-run afterwards.
    const shown = await cli(['rerun', '--bulk', id!, '-o', 'json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, status: 'completed', total: 2, started: 2 });
  });
});

describe('activity-core audit', () => {
  interface Entry {
    actor: string;
    action: string;
    target_id: string | null;
  }
  test('audit lists the changes made so far, newest first, filtered by action and activity, as a table or JSON', async () => {
    const all = JSON.parse((await cli(['audit', '--limit', '500', '-o', 'json'])).stdout) as Entry[];
    expect(all.map((entry) => entry.action)).toEqual(expect.arrayContaining(['activity.create', 'run.rerun']));
    expect(new Set(all.map((entry) => entry.actor))).toEqual(
      new Set([`api_key:${createHash('sha256').update(TEST_KEY).digest('hex').slice(0, 12)}`]),
    );
    const creates = JSON.parse((await cli(['audit', '--action', 'activity.create', '-o', 'json'])).stdout) as Entry[];
    expect(creates.length).toBeGreaterThanOrEqual(3);
    expect(creates.every((entry) => entry.action === 'activity.create')).toBe(true);
    const sync = (await live()).get('dac-order-sync')!;
    const listed = await cli(['audit', '--activity', 'dac-order-sync']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/AT\s+ACTOR\s+ACTION\s+TARGET\s+OUTCOME\s+STATUS\s+REQUEST/);
    expect(listed.stdout).toContain(`activity.create  activity ${sync.id}`);
    expect(listed.stdout).toContain('activity.update');
    const refused = await cli(['audit', '--action', 'activity.rename']);
    expect(refused.code).toBe(64);
    expect(refused.stderr).toContain('--action must be one of');
  });
});

describe('the activity-core bin', () => {
  const bin = (args: string[], env: Record<string, string> = {}): Promise<Ran> =>
    new Promise((done, fail) => {
      const child = spawn(join(repoRoot, 'node_modules/.bin/activity-core'), args, {
        cwd: dir,
        env: {
          PATH: `${join(repoRoot, 'node_modules/.bin')}:${process.env.PATH ?? ''}`,
          HOME: process.env.HOME ?? dir,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', fail);
      child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
    });

  test('replay <event_id> starts the run of an event that matched nothing when it arrived; a bulk --dry-run counts, --wait follows', async () => {
    await client.events.send({
      event_id: 'evt_cli_replay',
      event_type: 'cli.replay',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    });
    const since = new Date(Date.now() - 60_000).toISOString();
    const created = await client.activities.create({
      name: 'cli-replay',
      triggers: [{ type: 'event', event_type: 'cli.replay' }],
      tasks: [{ type: 'noop' }],
    });
    const to = new Date(Date.now() + 60_000).toISOString();
    const counted = await cli([
      'replay',
      '--from',
      since,
      '--to',
      to,
      '--event-type',
      'cli.replay',
      '--outcome',
      'unmatched',
      '--dry-run',
    ]);
    expect(counted).toMatchObject({ code: 0, stdout: '1 events selected (at most 10000 per bulk replay)\n' });
    const one = await cli(['replay', 'evt_cli_replay']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('started');
    expect(one.stdout).toContain(eventRunWorkflowId(created.id, 'evt_cli_replay'));
    const bulk = await cli([
      'replay',
      '--from',
      since,
      '--to',
      to,
      '--event-type',
      'cli.replay',
      '--wait',
      '-o',
      'json',
    ]);
    expect(bulk.code).toBe(0);
    expect(JSON.parse(bulk.stdout)).toMatchObject({
      status: 'completed',
      processed: 1,
      started: 0,
      skipped_reasons: { already_ran: 1 },
    });
    expect((await cli(['replay', 'evt_cli_replay', '--mode', 'sometimes'])).code).toBe(64);
  });

  test('held list, release and discard act on the events a disabled activity held', async () => {
    const created = await client.activities.create({
      name: 'cli-held',
      triggers: [{ type: 'event', event_type: 'cli.held' }],
      tasks: [{ type: 'noop' }],
    });
    await client.activities.disable(created.id, { whenDisabled: { action: 'hold', ttl: '1h' } });
    for (const id of ['evt_cli_held_1', 'evt_cli_held_2', 'evt_cli_held_3'])
      await client.events.send({
        event_id: id,
        event_type: 'cli.held',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      });
    const listed = await cli(['held', 'list', 'cli-held', '-o', 'json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      total: 3,
      items: [{ event_id: 'evt_cli_held_1' }, { event_id: 'evt_cli_held_2' }, { event_id: 'evt_cli_held_3' }],
    });
    const text = await cli(['held', 'list', 'cli-held']);
    expect(text.stdout).toContain('evt_cli_held_2');
    expect(text.stdout).toContain('3 held');
    const early = await cli(['held', 'release', 'cli-held']);
    expect(early.code).toBe(1);
    expect(early.stderr).toContain('is disabled');
    const discarded = await cli(['held', 'discard', 'cli-held', '--event-id', 'evt_cli_held_3']);
    expect(discarded).toMatchObject({ code: 0, stdout: 'cli-held: discarded 1; 2 still held\n' });
    expect((await client.activities.enable(created.id)).held_events).toEqual({ held: 2, released: 0 });
    const released = await cli(['held', 'release', 'cli-held']);
    expect(released).toMatchObject({
      code: 0,
      stdout: 'cli-held: released 2 (2 runs started, 0 already there, 0 pending); 0 still held\n',
    });
    expect((await cli(['held', 'release', 'cli-held', '-o', 'json'])).stdout).toContain('"released": 0');
    expect((await cli(['held', 'pause', 'cli-held'])).code).toBe(64);
    expect((await cli(['held', 'list'])).code).toBe(64);
  });

  test('--help lists every command, the options and the exit codes', async () => {
    const ran = await bin(['--help']);
    expect(ran.code).toBe(0);
    for (const word of [
      'apply -f',
      'get <name>',
      'list',
      'runs [run_id]',
      'explain event',
      'explain fire',
      'rerun <run_id>',
      '--url',
      '--api-key',
      'NO_COLOR',
      'Exit codes',
    ])
      expect(ran.stdout).toContain(word);
    const apply = await bin(['apply', '--help']);
    for (const word of ['--dry-run', '--prune', '--prune-prefix', '-f, --file']) expect(apply.stdout).toContain(word);
  });

  test('apply --dry-run through the bin exits 2 when something would change, for CI', async () => {
    await write('ci/new.yaml', 'name: dac-from-ci\ntasks:\n  - type: noop\n');
    const ran = await bin(['apply', '-f', 'ci', '--dry-run'], {
      ACTIVITY_CORE_URL: baseUrl,
      ACTIVITY_CORE_API_KEY: TEST_KEY,
    });
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(2);
    expect(ran.stdout).toContain('+ create    dac-from-ci');
  });

  test('an unknown option is a usage error (64)', async () => {
    const ran = await bin(['list', '--prune']);
    expect(ran.code).toBe(64);
    expect(ran.stderr).toContain('list does not take --prune');
  });
});
