import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, test } from 'vitest';

/** Every file the typed client's entry point reaches, as esbuild resolves its imports. */
async function inputsOf(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL(entry, import.meta.url))],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs);
}

describe('the typed client', () => {
  test('reaches neither the CEL filters package nor the CEL and RE2 libraries', async () => {
    const inputs = await inputsOf('./index.ts');
    expect(inputs.some((input) => input.includes('packages/client/src/client.ts'))).toBe(true);
    expect(inputs.some((input) => input.includes('packages/contracts/src/activity-definition.ts'))).toBe(true);
    const heavy = inputs.filter((input) => /packages\/filters\/|@bufbuild\/(cel|re2)\b|\bre2\b/.test(input));
    expect(heavy).toEqual([]);
  });
});
