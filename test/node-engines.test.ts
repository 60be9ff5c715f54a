import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

type Version = [number, number, number];

/** `20`, `20.19`, `6.*`, `0.8.x` → the lowest version and how many parts were given. */
function parse(text: string): { version: Version; parts: number } {
  const parts = text
    .replace(/^v/, '')
    .split('.')
    .filter((part) => part !== '' && part !== '*' && part.toLowerCase() !== 'x');
  const numbers = parts.map(Number);
  return { version: [numbers[0] ?? 0, numbers[1] ?? 0, numbers[2] ?? 0], parts: parts.length };
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/**
 * Whether `version` satisfies an npm `engines.node` range, for the forms
 * package manifests use: `||`, space-separated comparators, `>= < <= > ^ ~`,
 * plain and x-ranges, `*`.
 */
function satisfies(version: Version, range: string): boolean {
  return range.split('||').some((alternative) => {
    const comparators = alternative
      .trim()
      .replace(/(>=|<=|>|<|\^|~|=)\s+/g, '$1')
      .split(/\s+/)
      .filter(Boolean);
    return comparators.every((comparator) => {
      const [, operator = '', rest = ''] = /^(>=|<=|>|<|\^|~|=)?(.*)$/.exec(comparator)!;
      if (rest === '*' || rest === '') return true;
      const { version: bound, parts } = parse(rest);
      const upper = (index: number): Version =>
        index === 0
          ? [bound[0] + 1, 0, 0]
          : index === 1
            ? [bound[0], bound[1] + 1, 0]
            : [bound[0], bound[1], bound[2] + 1];
      switch (operator) {
        case '>=':
          return compare(version, bound) >= 0;
        case '>':
          return compare(version, bound) > 0;
        case '<=':
          return compare(version, bound) <= 0;
        case '<':
          return compare(version, bound) < 0;
        case '^':
          return (
            compare(version, bound) >= 0 &&
            compare(version, upper(bound[0] > 0 || parts === 1 ? 0 : bound[1] > 0 || parts === 2 ? 1 : 2)) < 0
          );
        case '~':
          return compare(version, bound) >= 0 && compare(version, upper(parts === 1 ? 0 : 1)) < 0;
        default:
          return compare(version, bound) >= 0 && compare(version, upper(Math.min(parts, 3) - 1)) < 0;
      }
    });
  });
}

describe('the supported Node versions: 20.19+ starts the commands, 24 LTS runs the tests and the images', () => {
  test('the range check reads the forms package manifests use', () => {
    const node20 = parse('20.19.0').version;
    for (const range of [
      '>=18',
      '>= 20.3.0',
      '^20.19.0 || >=22.12.0',
      '18 || 20 || >=22',
      '6.* || 8.* || >= 10.*',
      '>=16 || 14 >=14.17',
      '*',
    ])
      expect(satisfies(node20, range), range).toBe(true);
    for (const range of ['>=22', '^22.0.0', '>=20.20', '18 || >=22', '<20', '~20.18.0'])
      expect(satisfies(node20, range), range).toBe(false);
  });

  test('every package in the lockfile supports the lowest Node that package.json promises, so installs print no EBADENGINE', async () => {
    const manifest = JSON.parse(await readFile('package.json', 'utf8')) as { engines: { node: string } };
    const floor = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(manifest.engines.node)?.[1];
    expect(floor, 'package.json engines.node is a lower bound').toBeDefined();
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8')) as {
      packages: Record<string, { version?: string; engines?: unknown }>;
    };
    const unsupported = Object.entries(lock.packages)
      .filter(
        ([, entry]) =>
          typeof entry.engines === 'object' &&
          entry.engines !== null &&
          typeof (entry.engines as { node?: unknown }).node === 'string',
      )
      .map(([path, entry]) => ({ path, version: entry.version, node: (entry.engines as { node: string }).node }))
      .filter((entry) => !satisfies(parse(floor!).version, entry.node));
    expect(unsupported).toEqual([]);
  });

  test('the images and the tests run on the same Node LTS, a supported one that the lockfile supports too', async () => {
    const dockerfile = await readFile('Dockerfile', 'utf8');
    const bootstrap = await readFile('scripts/bootstrap.mjs', 'utf8');
    const image = /^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile)?.[1];
    const tests = /^const TEST_NODE_VERSION = '([^']+)';$/m.exec(bootstrap)?.[1];
    expect(image, 'the Dockerfile pins NODE_VERSION').toBeDefined();
    expect(tests, 'scripts/bootstrap.mjs pins TEST_NODE_VERSION').toBe(image);
    // Node 24 is LTS until 2028-04-30; Node 20 reached its end of life on 2026-04-30.
    expect(parse(image!).version[0]).toBe(24);
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8')) as {
      packages: Record<string, { engines?: { node?: unknown } }>;
    };
    const unsupported = Object.entries(lock.packages)
      .filter(([, entry]) => typeof entry.engines?.node === 'string')
      .filter(([, entry]) => !satisfies(parse(image!).version, entry.engines!.node as string))
      .map(([path]) => path);
    expect(unsupported).toEqual([]);
  });

  test('npm start and npm test refuse a Node older than package.json promises, before installing anything', async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'activity-core-engines-'));
    try {
      await mkdir(join(scratch, 'scripts'));
      await copyFile('scripts/bootstrap.mjs', join(scratch, 'scripts', 'bootstrap.mjs'));
      await writeFile(
        join(scratch, 'package.json'),
        JSON.stringify({ name: 'engines-check', engines: { node: '>=99.1' } }),
      );
      const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          [join(scratch, 'scripts', 'bootstrap.mjs'), 'test'],
          { cwd: scratch, timeout: 60_000 },
          (_error, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
        );
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('needs Node >=99.1');
      expect((await readdir(scratch)).sort()).toEqual(['package.json', 'scripts']);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
