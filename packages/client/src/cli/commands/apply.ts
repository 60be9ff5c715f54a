import { randomUUID } from 'node:crypto';
import { usesTaskGraph, type ActivityRecord } from '@activity-core/contracts';
import { collect } from '../../pagination';
import { ActivityCoreProblem } from '../../problem';
import { describeError, type CommandContext, UsageError } from '../context';
import { EXIT } from '../help';
import { formatIssue, loadDefinitions, parsePath, type LoadedDefinition } from '../load';
import { brief, terminalSafe } from '../output';
import { graphText } from './inspect';
import { hasChanges, planChanges, summarise, type Change, type FieldChange, type PlanSummary } from '../plan';

export interface ApplyOptions {
  files: string[];
  dryRun: boolean;
  prune: boolean;
  prunePrefix: string | undefined;
}

const MARK = { create: '+', update: '~', unchanged: '=', delete: '-' } as const;

function fieldLine(change: FieldChange, context: CommandContext): string {
  const { style } = context;
  const where = change.path === '' ? '(definition)' : change.path;
  switch (change.kind) {
    case 'added':
      return style.green(`    + ${where}: ${brief(change.after)}`);
    case 'removed':
      return style.red(`    - ${where}: ${brief(change.before)}`);
    case 'changed':
      return style.yellow(`    ~ ${where}: ${brief(change.before, 60)} → ${brief(change.after, 60)}`);
  }
}

function changeLines(change: Change, context: CommandContext): string[] {
  const { style } = context;
  const label = { create: 'create', update: 'update', unchanged: 'unchanged', delete: 'delete' }[change.kind].padEnd(9);
  const colour = { create: style.green, update: style.yellow, unchanged: style.dim, delete: style.red }[change.kind];
  const from =
    change.kind === 'delete'
      ? style.dim(`(id ${change.live.id}, version ${change.live.version}; in no file)`)
      : style.dim(
          `(${change.desired.file}${change.desired.position === undefined ? '' : `:${change.desired.position.line}`})`,
        );
  const version = change.kind === 'update' ? style.dim(` v${change.live.version} → v${change.live.version + 1}`) : '';
  const lines = [`${colour(`${MARK[change.kind]} ${label}`)} ${style.bold(change.name)}${version} ${from}`];
  if (change.kind === 'update') lines.push(...change.fields.map((field) => fieldLine(field, context)));
  return lines;
}

function summaryLine(summary: PlanSummary, applied: boolean): string {
  return applied
    ? `${summary.create} created, ${summary.update} updated, ${summary.unchanged} unchanged, ${summary.delete} deleted`
    : `${summary.create} to create, ${summary.update} to update, ${summary.unchanged} unchanged, ${summary.delete} to delete`;
}

/** A refusal of one definition, printed where the server says the problem is (file, line, field). */
function refusalLines(
  definition: LoadedDefinition | undefined,
  name: string,
  error: unknown,
  context: CommandContext,
): string[] {
  if (definition !== undefined && error instanceof ActivityCoreProblem && error.errors.length > 0) {
    return [
      `${definition.file}: ${name}: ${error.status} ${error.title}`,
      ...error.errors.map(
        (issue) =>
          `  ${formatIssue({ file: definition.file, position: definition.locate(parsePath(issue.path)), path: issue.path, message: issue.message })}`,
      ),
    ];
  }
  return [
    `${definition === undefined ? name : `${definition.file}: ${name}`}: ${describeError(error, context.baseUrl)}`,
  ];
}

export async function apply(options: ApplyOptions, context: CommandContext): Promise<number> {
  const { out, err, style, errStyle, progress, client } = context;
  if (options.files.length === 0) throw new UsageError('apply needs at least one -f <file|dir>');
  if (options.prunePrefix !== undefined && !options.prune)
    throw new UsageError('--prune-prefix only makes sense with --prune');

  const loaded = await loadDefinitions(options.files, context.cwd);
  if (loaded.issues.length > 0) {
    for (const issue of loaded.issues) err.write(`${errStyle.red('error')} ${formatIssue(issue)}\n`);
    const files = new Set(loaded.issues.map((issue) => issue.file)).size;
    err.write(
      `${loaded.issues.length} problem${loaded.issues.length === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'}; nothing was applied\n`,
    );
    return EXIT.failed;
  }
  if (options.prune && loaded.definitions.length === 0) {
    err.write('refusing to --prune: the files define no activity, so every live activity would be deleted\n');
    return EXIT.failed;
  }

  progress.show('reading live activities…');
  let live: ActivityRecord[];
  try {
    live = await collect(client.activities.listAll({ limit: 200 }));
  } finally {
    progress.clear();
  }
  const changes = planChanges(loaded.definitions, live, { prune: options.prune, prunePrefix: options.prunePrefix });
  for (const change of changes) {
    out.write(`${changeLines(change, context).join('\n')}\n`);
    // A dry run of a created or changed graph shows the graph it would register.
    if (
      options.dryRun &&
      (change.kind === 'create' || change.kind === 'update') &&
      usesTaskGraph(change.desired.definition.tasks)
    )
      out.write(terminalSafe(graphText(change.desired.definition.tasks)));
  }
  const summary = summarise(changes);

  if (options.dryRun) {
    out.write(`\n${summaryLine(summary, false)} ${style.dim('(dry run: nothing was changed)')}\n`);
    return hasChanges(changes) ? EXIT.changes : EXIT.ok;
  }

  const work = changes.filter((change) => change.kind !== 'unchanged');
  const done: PlanSummary = { create: 0, update: 0, unchanged: summary.unchanged, delete: 0 };
  let failures = 0;
  for (const [index, change] of work.entries()) {
    const verb = { create: 'creating', update: 'updating', delete: 'deleting', unchanged: '' }[change.kind];
    progress.show(`[${index + 1}/${work.length}] ${verb} ${change.name}…`);
    try {
      if (change.kind === 'create') {
        // PUT with an id chosen here: a retry after a lost answer is the same create, never a second activity.
        await client.activities.put(randomUUID(), change.desired.source);
      } else if (change.kind === 'update') {
        await client.activities.put(change.live.id, change.desired.source);
      } else if (change.kind === 'delete') {
        await client.activities.delete(change.live.id);
      }
      done[change.kind]++;
    } catch (error) {
      failures++;
      progress.clear();
      const definition = change.kind === 'delete' ? undefined : change.desired;
      for (const line of refusalLines(definition, change.name, error, context))
        err.write(`${errStyle.red('error')} ${line}\n`);
    }
  }
  progress.clear();
  out.write(`\n${summaryLine(done, true)}${failures > 0 ? `, ${failures} failed` : ''}\n`);
  return failures > 0 ? EXIT.failed : EXIT.ok;
}
