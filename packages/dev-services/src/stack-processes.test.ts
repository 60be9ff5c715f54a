import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { entryPointArgs, killHard, outputReady, spawnStackProcess, stopGracefully } from './stack-processes';

const env = { PATH: process.env.PATH ?? '' };
/** A Node process running `code`; it stays up until it exits by itself or is stopped. */
const node = (code: string, options: { keepOutputChars?: number } = {}) =>
  spawnStackProcess({ name: 'probe', args: ['-e', code], env, ...options });
const STAYS_UP = 'setInterval(() => undefined, 1000);';

describe('entry point arguments', () => {
  test('a build directory starts its compiled main.js with source maps', () => {
    expect(entryPointArgs('api', '/srv/dist')).toEqual(['--enable-source-maps', join('/srv/dist', 'api', 'main.js')]);
    expect(entryPointArgs('worker', '/srv/dist')).toEqual([
      '--enable-source-maps',
      join('/srv/dist', 'worker', 'main.js'),
    ]);
  });

  test('no build (or an empty one) starts the sources through tsx', () => {
    expect(entryPointArgs('api')).toEqual(['--import', 'tsx', join('apps', 'api', 'src', 'main.ts')]);
    expect(entryPointArgs('worker', '')).toEqual(['--import', 'tsx', join('apps', 'worker', 'src', 'main.ts')]);
  });
});

describe('a spawned stack process', () => {
  test('is ready once its output says so, and SIGTERM stops it with its exit code', async () => {
    const proc = node(`process.on('SIGTERM', () => process.exit(0)); console.log('server ready'); ${STAYS_UP}`);
    await outputReady(proc, (output) => output.includes('server ready'));
    expect(proc.alive()).toBe(true);
    expect(await stopGracefully(proc.child, 5_000)).toBe(0);
    expect(proc.alive()).toBe(false);
    expect(await proc.exited).toBe(0);
  });

  test('that exits before it is ready rejects the wait with its output', async () => {
    const proc = node(`console.error('cannot start'); process.exit(3);`);
    await expect(outputReady(proc, (output) => output.includes('never'))).rejects.toThrow(
      /the probe exited early with 3:\ncannot start/,
    );
  });

  test('that ignores SIGTERM is killed after the grace', async () => {
    const proc = node(`process.on('SIGTERM', () => undefined); console.log('up'); ${STAYS_UP}`);
    await outputReady(proc, (output) => output.includes('up'));
    expect(await stopGracefully(proc.child, 200)).toBe('SIGKILL');
  });

  test('killed hard ends at once; stopping an ended process answers how it ended', async () => {
    const proc = node(`console.log('up'); ${STAYS_UP}`);
    await outputReady(proc, (output) => output.includes('up'));
    await killHard(proc.child);
    expect(proc.alive()).toBe(false);
    expect(await stopGracefully(proc.child)).toBe('SIGKILL');
    await killHard(proc.child);
  });

  test('keeps only the tail of its output when asked to', async () => {
    const proc = node(`process.stdout.write('a'.repeat(100) + 'END')`, { keepOutputChars: 10 });
    await proc.exited;
    expect(proc.output()).toBe('aaaaaaaEND');
  });
});
