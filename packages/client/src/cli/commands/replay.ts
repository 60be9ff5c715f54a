/** `replay`: replay one stored event, or every stored event a filter selects (a bulk replay), and follow its progress. */
import { BulkReplayOutcome, ReplayMode, type BulkReplayRecord, type ReplayResponse } from '@activity-core/contracts';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CommandContext, UsageError } from '../context';
import { EXIT } from '../help';
import { table } from '../output';

/** How often `--wait` asks for a bulk replay's progress. */
const POLL_MS = 1_000;

export interface ReplayOptions {
  args: readonly string[];
  mode: string | undefined;
  from: string | undefined;
  to: string | undefined;
  eventType: string | undefined;
  source: string | undefined;
  outcome: string | undefined;
  idempotencyKey: string | undefined;
  bulk: string | undefined;
  dryRun: boolean;
  wait: boolean;
  output: string | undefined;
}

function progressLine(record: BulkReplayRecord): string {
  return `bulk replay ${record.id}: ${record.status}, ${record.processed}/${record.total} events, ${record.started} runs started, ${record.skipped} skipped`;
}

async function follow(record: BulkReplayRecord, format: string, context: CommandContext): Promise<number> {
  let current = record;
  let last = '';
  while (current.status !== 'completed') {
    const line = progressLine(current);
    if (line !== last) context.progress.show(line);
    last = line;
    await sleep(POLL_MS);
    current = await context.client.events.bulkReplayStatus(current.id);
  }
  context.progress.clear();
  context.out.write(format === 'json' ? `${JSON.stringify(current, null, 2)}\n` : `${progressLine(current)}\n`);
  return EXIT.ok;
}

function printOne(answer: ReplayResponse, format: string, context: CommandContext): void {
  if (format === 'json') {
    context.out.write(`${JSON.stringify(answer, null, 2)}\n`);
    return;
  }
  const rows = answer.runs.map((run) => [run.activity_name, run.status, run.workflow_id, run.run_id]);
  for (const filtered of answer.filtered) rows.push([filtered.activity_name, filtered.status, filtered.detail, '']);
  context.out.write(table(['ACTIVITY', 'STATUS', 'WORKFLOW ID / DETAIL', 'RUN ID'], rows, context.style));
  if (rows.length === 0) context.out.write(context.style.dim('(no activity matches this event today)\n'));
}

export async function replay(options: ReplayOptions, context: CommandContext): Promise<number> {
  const format = options.output ?? 'text';
  if (format !== 'text' && format !== 'json') throw new UsageError(`-o must be one of text, json, got ${format}`);
  const mode = options.mode === undefined ? undefined : ReplayMode.safeParse(options.mode.replaceAll('-', '_'));
  if (mode !== undefined && !mode.success)
    throw new UsageError(`--mode must be one of ${ReplayMode.options.join(', ')}, got ${options.mode}`);
  if (options.bulk !== undefined) {
    const record = await context.client.events.bulkReplayStatus(options.bulk.toLowerCase());
    return options.wait
      ? await follow(record, format, context)
      : (context.out.write(`${progressLine(record)}\n`), EXIT.ok);
  }
  if (options.args.length > 1) throw new UsageError('replay takes at most one event id');
  const eventId = options.args[0];
  if (eventId !== undefined) {
    const bulkOnly = ['from', 'to', 'eventType', 'source', 'outcome'].filter(
      (name) => options[name as keyof ReplayOptions] !== undefined,
    );
    if (bulkOnly.length > 0 || options.wait || options.dryRun)
      throw new UsageError(
        '--from, --to, --event-type, --source, --outcome, --dry-run and --wait are for a bulk replay (no event id)',
      );
    const answer = await context.client.events.replay(eventId, {
      ...(mode === undefined ? {} : { mode: mode.data }),
      ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
    });
    printOne(answer, format, context);
    return EXIT.ok;
  }
  if (options.from === undefined || options.to === undefined)
    throw new UsageError('replay needs an event id, or --from and --to for a bulk replay');
  const outcome = options.outcome === undefined ? undefined : BulkReplayOutcome.safeParse(options.outcome);
  if (outcome !== undefined && !outcome.success)
    throw new UsageError(`--outcome must be one of ${BulkReplayOutcome.options.join(', ')}, got ${options.outcome}`);
  if (options.dryRun && options.wait) throw new UsageError('--wait follows a bulk replay; a --dry-run starts none');
  const answer = await context.client.events.bulkReplay(
    {
      filter: {
        from: options.from,
        to: options.to,
        ...(options.eventType === undefined ? {} : { event_type: options.eventType }),
        ...(options.source === undefined ? {} : { source: options.source }),
        ...(outcome === undefined ? {} : { outcome: outcome.data }),
      },
      ...(mode === undefined ? {} : { mode: mode.data }),
      dry_run: options.dryRun,
    },
    options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey },
  );
  if (answer.dry_run) {
    context.out.write(
      format === 'json'
        ? `${JSON.stringify(answer, null, 2)}\n`
        : `${answer.total}${answer.over_cap ? '+' : ''} events selected (at most ${answer.cap} per bulk replay)\n`,
    );
    return EXIT.ok;
  }
  if (options.wait) return await follow(answer, format, context);
  context.out.write(format === 'json' ? `${JSON.stringify(answer, null, 2)}\n` : `${progressLine(answer)}\n`);
  return EXIT.ok;
}
