import { describe, expect, test } from 'vitest';
import { COMMAND_HELP, EXIT } from './help';
import { runCli } from './run';

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = {
    text: '',
    write(chunk: string) {
      this.text += chunk;
    },
  };
  const stderr = {
    text: '',
    write(chunk: string) {
      this.text += chunk;
    },
  };
  // Nothing listens on port 9: a command that got as far as the API would fail with 1, not with these codes.
  const code = await runCli(args, {
    stdout,
    stderr,
    env: { ACTIVITY_CORE_URL: 'http://127.0.0.1:9' },
    cwd: '/',
    client: { retry: { maxAttempts: 1 } },
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('the command line before it talks to the API', () => {
  test('--help and help <command> print the help and exit 0; no command prints it and exits 64', async () => {
    expect(await cli(['--help'])).toMatchObject({
      code: EXIT.ok,
      stdout: expect.stringContaining('Usage: activity-core <command>'),
    });
    for (const command of Object.keys(COMMAND_HELP)) {
      expect(await cli(['help', command])).toEqual({ code: EXIT.ok, stdout: COMMAND_HELP[command], stderr: '' });
      expect(await cli([command, '--help'])).toEqual({ code: EXIT.ok, stdout: COMMAND_HELP[command], stderr: '' });
    }
    expect((await cli([])).code).toBe(EXIT.usage);
    expect(await cli(['--version'])).toEqual({ code: EXIT.ok, stdout: '0.1.0\n', stderr: '' });
  });

  test('dead-letters without an action, a half selection or a bad reason is a usage error (64)', async () => {
    expect(await cli(['dead-letters'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('dead-letters takes list, retry or discard'),
    });
    expect(await cli(['dead-letters', 'retry'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('needs an event id and --activity, or --all'),
    });
    expect(await cli(['dead-letters', 'discard', 'evt_1'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('needs --activity'),
    });
    expect(await cli(['dead-letters', 'list', '--reason', 'broken'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('--reason must be one of definition_deleted, start_refused'),
    });
    expect(await cli(['dead-letters', 'list', '--mode', 'force'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('dead-letters does not take --mode'),
    });
  });

  test('unknown commands and options, options of another command and missing arguments are usage errors (64)', async () => {
    expect(await cli(['deploy'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('unknown command deploy'),
    });
    expect(await cli(['list', '--frobnicate'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining("Unknown option '--frobnicate'"),
    });
    expect(await cli(['get', 'x', '--dry-run'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('get does not take --dry-run'),
    });
    expect(await cli(['apply'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('apply needs at least one -f'),
    });
    expect(await cli(['apply', '-f', 'x', '--prune-prefix', 'a-'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('--prune-prefix only makes sense with --prune'),
    });
    expect(await cli(['get'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('get needs an activity name'),
    });
    expect(await cli(['explain', 'run', 'x'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('explain event or explain fire'),
    });
    expect(await cli(['explain', 'fire', 'only-one'])).toMatchObject({ code: EXIT.usage });
    expect(await cli(['list', '-o', 'xml'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('-o must be one of table, json'),
    });
  });

  test('rerun refuses, as usage errors (64), arguments that mix one run with a bulk re-run or name nothing to re-run', async () => {
    const run = '0b8f2a52-5bfc-500d-b265-f0bb62f7b33a';
    const range = ['--from', '2026-03-01T00:00:00Z', '--to', '2026-03-02T00:00:00Z'];
    const refused = async (args: string[], message: string) =>
      expect(await cli(['rerun', ...args])).toMatchObject({
        code: EXIT.usage,
        stdout: '',
        stderr: expect.stringContaining(message),
      });
    await refused([], 'rerun needs a run id, or --from and --to');
    await refused(['not-a-run'], 'rerun needs a run id (a UUID');
    await refused([run, run], 'rerun takes one run id');
    await refused([run, '--from', 'the-middle'], '--from must be start or failed-task, got the-middle');
    await refused([run, '--activity', 'x', '--wait'], '--activity, --wait are for a bulk re-run (no run id)');
    await refused([run, '--idempotency-key', ''], '--idempotency-key must not be empty');
    await refused(['--activity', 'x', '--to', '2026-03-02T00:00:00Z'], '--from is missing');
    await refused(['--from', 'failed-task', '--to', '2026-03-02T00:00:00Z'], 'use --rerun-from failed-task');
    await refused(
      ['--from', 'yesterday', '--to', '2026-03-02T00:00:00Z'],
      '--from must be an RFC 3339 date-time with a timezone',
    );
    await refused(
      ['--from', '2026-03-02T00:00:00Z', '--to', '2026-03-01T00:00:00Z'],
      '--to (2026-03-01T00:00:00Z) must be after --from',
    );
    await refused([...range, '--status', 'running'], '--status must be one of succeeded, failed, cancelled, skipped');
    await refused([...range, '--trigger', 'carrier-pigeon'], '--trigger must be one of event, cron, manual, backfill');
    await refused([...range, '--rerun-from', 'the-end'], '--rerun-from must be start or failed-task');
    await refused([...range, '--dry-run', '--wait'], '--wait follows a bulk re-run; a --dry-run starts none');
    await refused([...range, '--dry-run', '--idempotency-key', 'k'], '--dry-run records nothing');
    await refused([...range, '-o', 'yaml'], '-o must be one of text, json');
    await refused(['--bulk', 'nope'], '--bulk must be a bulk re-run id');
    await refused(['--bulk', run, '--status', 'failed'], 'it does not take --status');
    await refused(['--bulk', run, run], 'rerun --bulk <id> takes no run id');
    expect(await cli(['rerun', run, '--prune'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('rerun does not take --prune'),
    });
    expect(await cli(['list', '--wait'])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('list does not take --wait'),
    });
  });

  test('a rerun whose request got no answer exits 1 and prints the command to repeat it under the same Idempotency-Key', async () => {
    const run = '0b8f2a52-5bfc-500d-b265-f0bb62f7b33a';
    const ran = await cli(['rerun', run, '--from', 'failed-task']);
    expect(ran.code).toBe(EXIT.failed);
    const key = /Idempotency-Key (\S+);/.exec(ran.stderr)?.[1];
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(ran.stderr).toContain(`activity-core rerun ${run} --from failed-task --idempotency-key ${key}`);
    // A key given is the key repeated.
    expect((await cli(['rerun', run, '--idempotency-key', 'incident-42'])).stderr).toContain(
      `activity-core rerun ${run} --idempotency-key incident-42`,
    );
  });

  test('an unreachable API is an error (1) that names the URL and how to set it', async () => {
    const ran = await cli(['list']);
    expect(ran.code).toBe(EXIT.failed);
    expect(ran.stderr).toContain('cannot reach the API at http://127.0.0.1:9');
    expect(ran.stderr).toContain('ACTIVITY_CORE_URL');
  });
});
