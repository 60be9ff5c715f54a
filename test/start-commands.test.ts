import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { API_NODE_FLAGS, API_PROCESS_ENV } from '../apps/api/src/runtime-flags';
import { WORKER_NODE_FLAGS, WORKER_PROCESS_ENV } from '../apps/worker/src/runtime-flags';

const root = join(import.meta.dirname, '..');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

/** The Dockerfile's stage `FROM runtime AS <name>`, up to the next stage. */
function imageStage(name: string): string {
  const start = dockerfile.indexOf(`FROM runtime AS ${name}`);
  expect(start, `the Dockerfile has a ${name} stage`).toBeGreaterThanOrEqual(0);
  const next = dockerfile.indexOf('\nFROM ', start + 1);
  return dockerfile.slice(start, next === -1 ? undefined : next);
}

const processes = [
  { name: 'api', flags: API_NODE_FLAGS, env: API_PROCESS_ENV },
  { name: 'worker', flags: WORKER_NODE_FLAGS, env: WORKER_PROCESS_ENV },
] as const;

describe.each(processes)('the $name start commands', ({ name, flags, env }) => {
  test(`npm run start:${name} starts node with the ${name}'s memory flags and malloc arena limit`, () => {
    expect(scripts[`start:${name}`]).toBe(
      `${Object.entries(env)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ')} node ${flags.join(' ')} --enable-source-maps dist/${name}/main.js`,
    );
  });

  test(`the ${name} image sets the same flags and malloc arena limit`, () => {
    const stage = imageStage(name);
    for (const [key, value] of Object.entries(env)) expect(stage).toContain(`${key}=${value}`);
    expect(stage).toContain(`NODE_OPTIONS="${flags.join(' ')}"`);
  });
});

describe('the worker image', () => {
  test('serves its unauthenticated metrics on loopback unless told otherwise, and does not expose the port', () => {
    const stage = imageStage('worker');
    expect(stage).toContain('ENV WORKER_METRICS_BIND_ADDRESS=127.0.0.1:9464');
    expect(stage).not.toMatch(/WORKER_METRICS_BIND_ADDRESS=0\.0\.0\.0|EXPOSE 9464/);
  });
});
