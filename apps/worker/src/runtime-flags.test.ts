import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { WORKER_NODE_FLAGS, WORKER_PROCESS_ENV } from './runtime-flags';

const root = join(import.meta.dirname, '..', '..', '..');

describe('the worker start commands', () => {
  test('npm run start:worker starts node with the worker memory flags and malloc arena limit', () => {
    const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts['start:worker'];
    expect(script).toBe(
      `${Object.entries(WORKER_PROCESS_ENV)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ')} node ${WORKER_NODE_FLAGS.join(' ')} --enable-source-maps dist/worker/main.js`,
    );
  });

  test('the worker image sets the same flags and malloc arena limit', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const worker = dockerfile.slice(
      dockerfile.indexOf('FROM runtime AS worker'),
      dockerfile.indexOf('FROM runtime AS api'),
    );
    for (const [key, value] of Object.entries(WORKER_PROCESS_ENV)) expect(worker).toContain(`${key}=${value}`);
    expect(worker).toContain(`NODE_OPTIONS="${WORKER_NODE_FLAGS.join(' ')}"`);
  });
});
