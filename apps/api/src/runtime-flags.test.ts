import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { API_NODE_FLAGS, API_PROCESS_ENV } from './runtime-flags';

const root = join(import.meta.dirname, '..', '..', '..');

describe('the API start commands', () => {
  test('npm run start:api starts node with the API memory flags and malloc arena limit', () => {
    const script = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts['start:api'];
    expect(script).toBe(
      `${Object.entries(API_PROCESS_ENV)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ')} node ${API_NODE_FLAGS.join(' ')} --enable-source-maps dist/api/main.js`,
    );
  });

  test('the API image sets the same flags and malloc arena limit', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const api = dockerfile.slice(dockerfile.indexOf('FROM runtime AS api'));
    for (const [key, value] of Object.entries(API_PROCESS_ENV)) expect(api).toContain(`${key}=${value}`);
    expect(api).toContain(`NODE_OPTIONS="${API_NODE_FLAGS.join(' ')}"`);
  });
});
