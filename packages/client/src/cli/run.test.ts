import { describe, expect, test } from 'vitest';
import { COMMAND_HELP, EXIT } from './help';
import { runCli } from './run';

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = { text: '', write(chunk: string) { this.text += chunk; } };
  const stderr = { text: '', write(chunk: string) { this.text += chunk; } };
  // Nothing listens on port 9: a command that got as far as the API would fail with 1, not with these codes.
  const code = await runCli(args, { stdout, stderr, env: { ACTIVITY_CORE_URL: 'http://127.0.0.1:9' }, cwd: '/', client: { retry: { maxAttempts: 1 } } });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('the command line before it talks to the API', () => {
  test('--help and help <command> print the help and exit 0; no command prints it and exits 64', async () => {
    expect(await cli(['--help'])).toMatchObject({ code: EXIT.ok, stdout: expect.stringContaining('Usage: activity-core <command>') });
    for (const command of Object.keys(COMMAND_HELP)) {
      expect(await cli(['help', command])).toEqual({ code: EXIT.ok, stdout: COMMAND_HELP[command], stderr: '' });
      expect(await cli([command, '--help'])).toEqual({ code: EXIT.ok, stdout: COMMAND_HELP[command], stderr: '' });
    }
    expect((await cli([])).code).toBe(EXIT.usage);
    expect(await cli(['--version'])).toEqual({ code: EXIT.ok, stdout: '0.1.0\n', stderr: '' });
  });

  test('unknown commands and options, options of another command and missing arguments are usage errors (64)', async () => {
    expect(await cli(['deploy'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('unknown command deploy') });
    expect(await cli(['list', '--frobnicate'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining("Unknown option '--frobnicate'") });
    expect(await cli(['get', 'x', '--dry-run'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('get does not take --dry-run') });
    expect(await cli(['apply'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('apply needs at least one -f') });
    expect(await cli(['apply', '-f', 'x', '--prune-prefix', 'a-'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('--prune-prefix only makes sense with --prune') });
    expect(await cli(['get'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('get needs an activity name') });
    expect(await cli(['explain', 'run', 'x'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('explain event or explain fire') });
    expect(await cli(['explain', 'fire', 'only-one'])).toMatchObject({ code: EXIT.usage });
    expect(await cli(['list', '-o', 'xml'])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('-o must be one of table, json') });
  });

  test('an unreachable API is an error (1) that names the URL and how to set it', async () => {
    const ran = await cli(['list']);
    expect(ran.code).toBe(EXIT.failed);
    expect(ran.stderr).toContain('cannot reach the API at http://127.0.0.1:9');
    expect(ran.stderr).toContain('ACTIVITY_CORE_URL');
  });
});
