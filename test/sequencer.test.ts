import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { fromReport, longestFirst, recordedDurations } from './sequencer';

describe('the duration sequencer', () => {
  let scratch: string | undefined;
  afterEach(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
    scratch = undefined;
  });

  test('files start longest first, and a file never timed starts before every timed one', () => {
    const order = longestFirst(['a.ts', 'b.ts', 'new.ts', 'c.ts'], (path) => path, {
      'a.ts': 3,
      'b.ts': 40,
      'c.ts': 12,
    });
    expect(order).toEqual(['new.ts', 'b.ts', 'c.ts', 'a.ts']);
  });

  test("a vitest JSON report gives each file's wall time in seconds, by path from the root", () => {
    const report = {
      testResults: [
        { name: '/repo/test/slow.int.test.ts', startTime: 1_000, endTime: 61_000 },
        { name: '/repo/test/broken.int.test.ts', startTime: 'x' },
      ],
    };
    expect(fromReport(report, '/repo')).toEqual({ 'test/slow.int.test.ts': 60 });
  });

  test('a report made in another clone is keyed by paths inside that clone, which match this tree', () => {
    const report = {
      testResults: [
        { name: '/tmp/clone/test/slow.int.test.ts', startTime: 0, endTime: 60_000 },
        { name: '/tmp/clone/apps/api/test/fuzz.int.test.ts', startTime: 0, endTime: 120_000 },
      ],
    };
    expect(fromReport(report, '/work/repo')).toEqual({
      'test/slow.int.test.ts': 60,
      'apps/api/test/fuzz.int.test.ts': 120,
    });
  });

  test('the committed durations name files of this tree, so a clean clone orders its files by them', async () => {
    const committed = Object.keys(
      JSON.parse(await readFile(join(import.meta.dirname, 'durations.json'), 'utf8')) as Record<string, number>,
    );
    expect(committed.filter((path) => path.startsWith('..') || isAbsolute(path))).toEqual([]);
    expect(committed.filter((path) => existsSync(join(import.meta.dirname, '..', path))).length).toBeGreaterThan(
      committed.length / 2,
    );
  });

  test("the last run's report wins over the committed durations, which are the fallback", async () => {
    scratch = await mkdtemp(join(tmpdir(), 'sequencer-'));
    await mkdir(join(scratch, 'test'));
    await writeFile(join(scratch, 'test', 'durations.json'), JSON.stringify({ 'test/a.int.test.ts': 5 }));
    expect(recordedDurations(scratch)).toEqual({ 'test/a.int.test.ts': 5 });

    await mkdir(join(scratch, '.data'));
    await writeFile(
      join(scratch, '.data', 'test-results.json'),
      JSON.stringify({ testResults: [{ name: join(scratch, 'test/a.int.test.ts'), startTime: 0, endTime: 9_000 }] }),
    );
    expect(recordedDurations(scratch)).toEqual({ 'test/a.int.test.ts': 9 });
  });

  test('an unreadable report falls back to the committed durations, and nothing at all is no durations', async () => {
    scratch = await mkdtemp(join(tmpdir(), 'sequencer-'));
    expect(recordedDurations(scratch)).toEqual({});
    await mkdir(join(scratch, '.data'));
    await mkdir(join(scratch, 'test'));
    await writeFile(join(scratch, '.data', 'test-results.json'), '{ not json');
    await writeFile(join(scratch, 'test', 'durations.json'), JSON.stringify({ 'test/a.int.test.ts': 5 }));
    expect(recordedDurations(scratch)).toEqual({ 'test/a.int.test.ts': 5 });
  });
});
