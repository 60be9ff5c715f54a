import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';

/** Where the golden histories live: test/history-replay.int.test.ts replays every one of them. */
export const HISTORIES_DIR = join(process.cwd(), 'test', 'histories');

/**
 * Adds a golden history when the run is started with `RECORD_HISTORIES=<shape>`
 * (lower-case letters, digits and dashes naming the workflow code's shape,
 * e.g. `local-bookkeeping`); does nothing otherwise. Writes
 * `test/histories/<name>.<shape>.binpb` and the workflow id replay needs into
 * `workflow-ids.json`. Golden histories are only ever added: an existing file is
 * never overwritten (the old shapes must keep replaying). Record one test file
 * at a time (they share workflow-ids.json).
 */
export async function recordGoldenHistory(
  name: string,
  history: temporal.api.history.v1.IHistory,
  workflowId: string,
): Promise<void> {
  const shape = process.env.RECORD_HISTORIES;
  if (shape === undefined || shape === '') return;
  if (!/^[a-z][a-z0-9-]*$/.test(shape))
    throw new Error(
      `RECORD_HISTORIES must name the shape being recorded (lower-case letters, digits, dashes), e.g. local-bookkeeping; got ${JSON.stringify(shape)}`,
    );
  const file = `${name}.${shape}.binpb`;
  const path = join(HISTORIES_DIR, file);
  const exists = await access(path).then(
    () => true,
    () => false,
  );
  if (exists)
    throw new Error(`${file} exists already: golden histories are never overwritten; choose a new shape name`);
  await writeFile(path, temporal.api.history.v1.History.encode(history).finish());
  const idsPath = join(HISTORIES_DIR, 'workflow-ids.json');
  const ids = JSON.parse(await readFile(idsPath, 'utf8')) as Record<string, string>;
  // Replay needs each history's workflow id: the run id (and so the task ids) derive from it.
  ids[file] = workflowId;
  const sorted = Object.fromEntries(Object.entries(ids).sort(([a], [b]) => a.localeCompare(b)));
  await writeFile(idsPath, `${JSON.stringify(sorted, null, 2)}\n`);
}
