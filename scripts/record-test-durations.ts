/**
 * `npm run test:durations`: writes test/durations.json, the file order the
 * suite falls back to on a clean clone (test/sequencer.ts), from the last
 * `npm test` run's .data/test-results.json. Commit the result after a full
 * run when files were added or their times changed much.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fromReport } from '../test/sequencer';

const root = process.cwd();
const durations = fromReport(JSON.parse(await readFile(join(root, '.data', 'test-results.json'), 'utf8')), root);
const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => a.localeCompare(b)));
await writeFile(join(root, 'test', 'durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/durations.json: ${Object.keys(sorted).length} files`);
