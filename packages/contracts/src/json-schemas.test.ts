import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { generateJsonSchemas, renderJsonSchema } from './json-schemas';

const dir = join(process.cwd(), 'schemas');

describe('published JSON Schemas', () => {
  test('every file in schemas/ matches what the zod models generate (run npm run schemas:generate)', async () => {
    const generated = generateJsonSchemas();
    const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
    expect(files).toEqual(Object.keys(generated).sort());
    for (const [file, schema] of Object.entries(generated)) {
      expect(await readFile(join(dir, file), 'utf8'), `schemas/${file} is stale`).toBe(renderJsonSchema(schema));
    }
  });

  test('the definition schema names its trigger and task types', () => {
    const text = JSON.stringify(generateJsonSchemas()['activity-definition.schema.json']);
    for (const type of ['event', 'cron', 'http', 'delay', 'emit_event', 'noop'])
      expect(text).toContain(`"const":"${type}"`);
  });
});
