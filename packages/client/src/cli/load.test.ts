import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expandInputs, formatIssue, formatPath, loadDefinitions, parsePath } from './load';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'activity-core-load-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function files(entries: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(dir, 'case-'));
  for (const [path, text] of Object.entries(entries)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

describe('paths', () => {
  test('field paths are written and read the way the API writes them', () => {
    expect(formatPath(['tasks', 0, 'config', 'url'])).toBe('tasks[0].config.url');
    expect(formatPath([])).toBe('');
    expect(parsePath('tasks[0].config.url')).toEqual(['tasks', 0, 'config', 'url']);
    expect(parsePath('triggers[12]')).toEqual(['triggers', 12]);
    expect(parsePath('')).toEqual([]);
  });

  test('an issue prints as file:line:column: path: message, leaving out what is unknown', () => {
    expect(formatIssue({ file: 'a.yaml', position: { line: 3, column: 5 }, path: 'tasks[0]', message: 'bad' })).toBe(
      'a.yaml:3:5: tasks[0]: bad',
    );
    expect(formatIssue({ file: 'a.yaml', path: '', message: 'no such file or directory' })).toBe(
      'a.yaml: no such file or directory',
    );
  });
});

describe('finding files', () => {
  test('directories are searched recursively for .yaml, .yml and .json in name order, skipping hidden entries and other files', async () => {
    const root = await files({
      'b.yml': '',
      'a/z.json': '',
      'a/y.yaml': '',
      'notes.md': '',
      '.git/x.yaml': '',
      '.hidden.yaml': '',
    });
    const found = await expandInputs(['.'], root);
    expect(found).toEqual({ files: ['a/y.yaml', 'a/z.json', 'b.yml'], issues: [] });
  });

  test('a missing path and a directory without definition files are issues', async () => {
    const root = await files({ 'empty/readme.txt': '' });
    const found = await expandInputs(['nope.yaml', 'empty'], root);
    expect(found.files).toEqual([]);
    expect(found.issues.map((issue) => `${issue.file}: ${issue.message}`)).toEqual([
      'nope.yaml: no such file or directory',
      'empty: the directory holds no .yaml, .yml or .json files',
    ]);
  });

  test('a file named twice is read once', async () => {
    const root = await files({ 'a.yaml': '' });
    expect((await expandInputs(['a.yaml', '.'], root)).files).toEqual(['a.yaml']);
  });
});

describe('reading definitions', () => {
  test('YAML documents, lists of definitions and JSON arrays each give definitions with defaults applied and their position', async () => {
    const root = await files({
      'one.yaml':
        'name: one\ntasks:\n  - type: noop\n---\n- name: two\n  tasks: [{ type: noop }]\n- name: three\n  tasks: [{ type: noop }]\n---\n',
      'more.json': JSON.stringify(
        [{ name: 'four', triggers: [{ type: 'cron', cron: '0 9 * * *' }], tasks: [{ type: 'noop' }] }],
        null,
        2,
      ),
    });
    const loaded = await loadDefinitions(['.'], root);
    expect(loaded.issues).toEqual([]);
    expect(
      loaded.definitions.map((definition) => [definition.name, definition.file, definition.position?.line]),
    ).toEqual([
      ['four', 'more.json', 2],
      ['one', 'one.yaml', 1],
      ['two', 'one.yaml', 5],
      ['three', 'one.yaml', 7],
    ]);
    const four = loaded.definitions[0]!;
    expect(four.source).toEqual({
      name: 'four',
      triggers: [{ type: 'cron', cron: '0 9 * * *' }],
      tasks: [{ type: 'noop' }],
    });
    expect(four.definition).toMatchObject({
      enabled: true,
      dedupe_key_strategy: 'skip',
      triggers: [{ timezone: 'UTC', misfire_policy: 'skip', max_catchup: 10 }],
    });
  });

  test('each schema problem names file, line and column of the offending value, field path and message', async () => {
    const root = await files({
      'bad.yaml': 'name: Bad Name\ntasks:\n  - type: delay\n    config:\n      duration: soon\n',
    });
    const loaded = await loadDefinitions(['bad.yaml'], root);
    expect(loaded.definitions).toEqual([]);
    expect(loaded.issues.map(formatIssue)).toEqual([
      expect.stringMatching(/^bad\.yaml:1:7: name: name may contain lowercase letters/),
      expect.stringMatching(/^bad\.yaml:5:17: tasks\[0\]\.config\.duration: must be a duration/),
    ]);
  });

  test('an expression that does not compile is refused as the server refuses it, at its file, line and field', async () => {
    const root = await files({
      'cel.yaml':
        '- name: fine\n  tasks: [{ type: noop }]\n' +
        '- name: bad-filter\n  triggers:\n    - type: event\n      event_type: order.paid\n      filter: amount > 1\n  tasks: [{ type: noop }]\n',
    });
    const loaded = await loadDefinitions(['cel.yaml'], root);
    expect(loaded.definitions.map((definition) => definition.name)).toEqual(['fine']);
    expect(loaded.issues.map(formatIssue)).toEqual([
      expect.stringMatching(/^cel\.yaml:7:15: \[1\]\.triggers\[0\]\.filter: unknown variable 'amount'/),
    ]);
  });

  test('an unknown key is reported at the key, on the object that holds it', async () => {
    const root = await files({ 'extra.yaml': 'name: extra\ntasks:\n  - type: noop\nowner: team-a\n' });
    const loaded = await loadDefinitions(['extra.yaml'], root);
    expect(loaded.issues.map(formatIssue)).toEqual([expect.stringMatching(/^extra\.yaml:4:1: [^:]*: .*owner/)]);
  });

  test('items of a list carry their index in the path', async () => {
    const root = await files({ 'list.yaml': '- name: fine\n  tasks: [{ type: noop }]\n- name: broken\n  tasks: []\n' });
    const loaded = await loadDefinitions(['list.yaml'], root);
    expect(loaded.definitions.map((definition) => definition.name)).toEqual(['fine']);
    expect(loaded.issues.map(formatIssue)).toEqual([expect.stringMatching(/^list\.yaml:4:10: \[1\]\.tasks: /)]);
  });

  test('JSON problems have a line when the JSON has one, and invalid JSON says so', async () => {
    const root = await files({
      'bad.json': '{\n  "name": "bad-json",\n  "tasks": [{ "type": "wait" }]\n}\n',
      'broken.json': '{ "name": ',
    });
    const loaded = await loadDefinitions(['bad.json', 'broken.json'], root);
    expect(loaded.issues.map(formatIssue)).toEqual([
      expect.stringMatching(/^bad\.json:3:\d+: tasks\[0\]\.type: /),
      expect.stringMatching(/^broken\.json: not valid JSON: /),
    ]);
  });

  test('YAML syntax errors, non-mapping documents and duplicate names are issues with positions', async () => {
    const root = await files({
      'a.yaml': 'name: same\ntasks: [{ type: noop }]\n',
      'b.yaml': 'just a string\n---\nname: same\ntasks: [{ type: noop }]\n---\nkey: [open\n',
    });
    const loaded = await loadDefinitions(['.'], root);
    const printed = loaded.issues.map(formatIssue);
    expect(printed).toContainEqual('b.yaml:1:1: expected a definition (a mapping) or a list of definitions');
    expect(printed).toContainEqual(expect.stringMatching(/^b\.yaml:\d+:\d+: \S/));
    expect(printed).toContainEqual(
      'b.yaml:3:7: name: "same" is defined twice; first at a.yaml:1 (names are the key: one definition per name)',
    );
  });
});
