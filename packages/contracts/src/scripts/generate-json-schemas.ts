import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateJsonSchemas, renderJsonSchema } from '../json-schemas';

const out = join(process.cwd(), 'schemas');
await mkdir(out, { recursive: true });
for (const [file, schema] of Object.entries(generateJsonSchemas())) {
  await writeFile(join(out, file), renderJsonSchema(schema));
  console.log(`wrote schemas/${file}`);
}
