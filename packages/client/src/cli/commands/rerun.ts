/** `rerun`: re-run one run, or every run a filter selects (a bulk re-run), and follow its progress. */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BulkRerunFilter,
  RunStatus,
  TriggerType,
  type BulkRerunRecord,
  type RerunFrom,
  type RerunResponse,
} from '@activity-core/contracts';
import { ActivityCoreNetworkError, ActivityCoreProblem } from '../../problem';
import { describeError, type CommandContext, UsageError } from '../context';
import { EXIT } from '../help';
import { NotFoundLocally, resolveActivity } from './inspect';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Statuses a bulk re-run may select: runs that have ended (a run in progress cannot be re-run). */
export const BULK_STATUSES: readonly string[] = RunStatus.options.filter(
  (status) => status !== 'running' && status !== 'waiting_for_slot',
);
const TRIGGER_TYPES: readonly string[] = TriggerType.options;
/** How often `--wait` asks for a bulk re-run's progress. */
const POLL_INTERVAL_MS = 1000;

export interface RerunOptions {
  args: string[];
  from: string | undefined;
  to: string | undefined;
  rerunFrom: string | undefined;
  /** `--priority`: 1 (highest) to 5; absent: the server's default (one lower than the definition's). */
  priority?: string | undefined;
  activity: string | undefined;
  status: string | undefined;
  trigger: string | undefined;
  idempotencyKey: string | undefined;
  bulk: string | undefined;
  dryRun: boolean;
  wait: boolean;
  output: string | undefined;
}

/** What `rerun` was asked to do, once its arguments are checked. */
export type RerunPlan =
  | {
      mode: 'one';
      runId: string;
      from: RerunFrom;
      priority: number | undefined;
      key: string;
      keyGiven: boolean;
      format: 'text' | 'json';
    }
  | {
      mode: 'bulk';
      activity: string | undefined;
      status: string;
      trigger: string | undefined;
      from: string;
      to: string;
      rerunFrom: RerunFrom;
      priority: number | undefined;
      dryRun: boolean;
      wait: boolean;
      key: string;
      keyGiven: boolean;
      format: 'text' | 'json';
    }
  | { mode: 'progress'; id: string; wait: boolean; format: 'text' | 'json' };

/** `start`, or `failed-task` (the API's `failed_task` is accepted too). */
function startPoint(value: string | undefined, option: string): RerunFrom {
  if (value === undefined || value === 'start') return 'start';
  if (value === 'failed-task' || value === 'failed_task') return 'failed_task';
  throw new UsageError(`${option} must be start or failed-task, got ${value}`);
}

/** `--priority`: an integer from 1 (highest) to 5 (lowest), as the API takes it. */
function priorityOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-5]$/.test(value)) throw new UsageError(`--priority must be 1 (highest) to 5 (lowest), got ${value}`);
  return Number(value);
}

function instant(value: string | undefined, option: string): string {
  if (value === undefined)
    throw new UsageError(
      `a bulk re-run needs --from and --to (RFC 3339, e.g. 2026-03-01T09:00:00Z); ${option} is missing`,
    );
  if (value === 'start' || value === 'failed-task' || value === 'failed_task') {
    throw new UsageError(
      `in a bulk re-run ${option} is a time (RFC 3339); to choose where each re-run begins use --rerun-from ${value}`,
    );
  }
  if (!BulkRerunFilter.shape.from.safeParse(value).success)
    throw new UsageError(
      `${option} must be an RFC 3339 date-time with a timezone, e.g. 2026-03-01T09:00:00Z, got ${value}`,
    );
  return value;
}

/** Checks the arguments before anything is sent; every mistake is a UsageError naming the option. */
export function planRerun(options: RerunOptions, newKey: () => string = randomUUID): RerunPlan {
  const format = options.output ?? 'text';
  if (format !== 'text' && format !== 'json') throw new UsageError(`-o must be one of text, json, got ${format}`);
  const keyGiven = options.idempotencyKey !== undefined;
  if (options.idempotencyKey === '') throw new UsageError('--idempotency-key must not be empty');
  const key = options.idempotencyKey ?? newKey();
  const bulkOnly = (
    [
      ['--activity', options.activity],
      ['--status', options.status],
      ['--trigger', options.trigger],
      ['--to', options.to],
      ['--rerun-from', options.rerunFrom],
      ['--dry-run', options.dryRun ? true : undefined],
    ] as const
  )
    .filter(([, value]) => value !== undefined)
    .map(([name]) => name);

  if (options.bulk !== undefined) {
    if (options.args.length > 0) throw new UsageError('rerun --bulk <id> takes no run id');
    const other = [
      ...bulkOnly,
      ...(options.from === undefined ? [] : ['--from']),
      ...(keyGiven ? ['--idempotency-key'] : []),
      ...(options.priority === undefined ? [] : ['--priority']),
    ];
    if (other.length > 0)
      throw new UsageError(`rerun --bulk <id> shows a bulk re-run's progress; it does not take ${other.join(', ')}`);
    if (!UUID.test(options.bulk)) throw new UsageError(`--bulk must be a bulk re-run id (a UUID), got ${options.bulk}`);
    return { mode: 'progress', id: options.bulk.toLowerCase(), wait: options.wait, format };
  }

  if (options.args.length > 1) throw new UsageError('rerun takes one run id');
  const [runId] = options.args;
  if (runId !== undefined) {
    if (bulkOnly.length > 0 || options.wait) {
      throw new UsageError(
        `${[...bulkOnly, ...(options.wait ? ['--wait'] : [])].join(', ')} ${bulkOnly.length + (options.wait ? 1 : 0) === 1 ? 'is' : 'are'} for a bulk re-run (no run id)`,
      );
    }
    if (!UUID.test(runId)) throw new UsageError(`rerun needs a run id (a UUID, as \`runs\` prints it), got ${runId}`);
    return {
      mode: 'one',
      runId: runId.toLowerCase(),
      from: startPoint(options.from, '--from'),
      priority: priorityOf(options.priority),
      key,
      keyGiven,
      format,
    };
  }

  if (options.from === undefined && options.to === undefined && bulkOnly.length === 0) {
    throw new UsageError('rerun needs a run id, or --from and --to (and filters) for a bulk re-run');
  }
  if (options.status !== undefined && !BULK_STATUSES.includes(options.status))
    throw new UsageError(`--status must be one of ${BULK_STATUSES.join(', ')} (a run in progress cannot be re-run)`);
  if (options.trigger !== undefined && !TRIGGER_TYPES.includes(options.trigger))
    throw new UsageError(`--trigger must be one of ${TRIGGER_TYPES.join(', ')}`);
  const from = instant(options.from, '--from');
  const to = instant(options.to, '--to');
  if (Date.parse(to) <= Date.parse(from)) throw new UsageError(`--to (${to}) must be after --from (${from})`);
  if (options.dryRun && options.wait) throw new UsageError('--wait follows a bulk re-run; a --dry-run starts none');
  if (options.dryRun && keyGiven) throw new UsageError('--dry-run records nothing, so it takes no --idempotency-key');
  return {
    mode: 'bulk',
    activity: options.activity,
    status: options.status ?? 'failed',
    trigger: options.trigger,
    from,
    to,
    rerunFrom: startPoint(options.rerunFrom, '--rerun-from'),
    priority: priorityOf(options.priority),
    dryRun: options.dryRun,
    wait: options.wait,
    key,
    keyGiven,
    format,
  };
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** True when the server may have acted on a request whose answer never arrived (or that it could not finish). */
function mayHaveBeenReceived(error: unknown): boolean {
  return error instanceof ActivityCoreNetworkError || (error instanceof ActivityCoreProblem && error.status >= 500);
}

/** Re-runs a failure, and when repeating the request could matter, says which key to repeat it with. */
async function keyed<T>(
  send: () => Promise<T>,
  key: string,
  retry: string,
  context: CommandContext,
): Promise<T | number> {
  try {
    return await send();
  } catch (error) {
    if (!mayHaveBeenReceived(error)) throw error;
    context.progress.clear();
    const { errStyle } = context;
    context.err.write(`${errStyle.red('error')} ${describeError(error, context.baseUrl)}\n`);
    context.err.write(
      `the request was sent with Idempotency-Key ${key}; repeat it with the same key, so it cannot start a second re-run:\n  ${retry} --idempotency-key ${key}\n`,
    );
    return EXIT.failed;
  }
}

export async function rerun(options: RerunOptions, context: CommandContext): Promise<number> {
  const plan = planRerun(options);
  switch (plan.mode) {
    case 'one':
      return await rerunOne(plan, context);
    case 'bulk':
      return await rerunBulk(plan, context);
    case 'progress': {
      const record = await context.client.runs.bulkRerunStatus(plan.id);
      if (!plan.wait) {
        context.out.write(plan.format === 'json' ? json(record) : bulkLines(record, context).join('\n') + '\n');
        return EXIT.ok;
      }
      return await follow(record, plan.format, context);
    }
  }
}

async function rerunOne(plan: Extract<RerunPlan, { mode: 'one' }>, context: CommandContext): Promise<number> {
  const { client, out, style } = context;
  const answer = await keyed<RerunResponse>(
    () =>
      client.runs.rerun(plan.runId, {
        from: plan.from,
        ...(plan.priority === undefined ? {} : { priority: plan.priority }),
        idempotencyKey: plan.key,
      }),
    plan.key,
    `activity-core rerun ${plan.runId}${plan.from === 'start' ? '' : ' --from failed-task'}${plan.priority === undefined ? '' : ` --priority ${plan.priority}`}`,
    context,
  );
  if (typeof answer === 'number') return answer;
  if (plan.format === 'json') {
    out.write(json(answer));
    return EXIT.ok;
  }
  const status =
    answer.status === 'started'
      ? style.green('started')
      : `${style.yellow('duplicate')} ${style.dim('(this key already named this re-run: nothing new was started)')}`;
  out.write(
    `re-run ${style.bold(answer.run_id)} of ${answer.rerun_of} · attempt ${answer.attempt} · from ${answer.from} (task ${answer.from_task_index}) · ${status}\n`,
  );
  out.write(`  workflow  ${answer.workflow_id}\n`);
  out.write(
    `  key       ${answer.key}${plan.keyGiven ? '' : style.dim(`  (to repeat this request without a second re-run: --idempotency-key ${answer.key})`)}\n`,
  );
  out.write(style.dim(`follow it with: activity-core runs ${answer.run_id}\n`));
  return EXIT.ok;
}

async function rerunBulk(plan: Extract<RerunPlan, { mode: 'bulk' }>, context: CommandContext): Promise<number> {
  const { client, out, style } = context;
  let activityId: string | undefined;
  if (plan.activity !== undefined) {
    try {
      activityId = (await resolveActivity(context, plan.activity)).id;
    } catch (error) {
      // The runs of a deleted activity can still be re-run: its id is taken as given.
      if (!(error instanceof NotFoundLocally && UUID.test(plan.activity))) throw error;
      activityId = plan.activity.toLowerCase();
    }
  }
  const request = {
    filter: {
      ...(activityId === undefined ? {} : { activity_id: activityId }),
      status: plan.status as BulkRerunFilter['status'],
      ...(plan.trigger === undefined ? {} : { trigger_type: plan.trigger as TriggerType }),
      from: plan.from,
      to: plan.to,
    },
    from: plan.rerunFrom,
    dry_run: plan.dryRun,
    ...(plan.priority === undefined ? {} : { priority: plan.priority }),
  };
  const retry = `activity-core rerun${plan.activity === undefined ? '' : ` --activity ${plan.activity}`} --status ${plan.status}${plan.trigger === undefined ? '' : ` --trigger ${plan.trigger}`} --from ${plan.from} --to ${plan.to}${plan.rerunFrom === 'start' ? '' : ' --rerun-from failed-task'}${plan.priority === undefined ? '' : ` --priority ${plan.priority}`}`;
  const answer = await keyed(
    () => client.runs.bulkRerun(request, { idempotencyKey: plan.key }),
    plan.key,
    retry,
    context,
  );
  if (typeof answer === 'number') return answer;
  if (answer.dry_run) {
    out.write(
      plan.format === 'json'
        ? json(answer)
        : `${answer.total} run${answer.total === 1 ? '' : 's'} would be re-run ${style.dim('(dry run: nothing was started)')}\n`,
    );
    return EXIT.ok;
  }
  if (plan.wait) {
    if (plan.format === 'text') {
      out.write(
        `bulk re-run ${style.bold(answer.id)} · ${answer.total} run${answer.total === 1 ? '' : 's'} selected · key ${plan.key}\n`,
      );
      context.err.write(
        context.errStyle.dim(
          `(interrupting stops the waiting, not the re-run: activity-core rerun --bulk ${answer.id} --wait follows it again)\n`,
        ),
      );
    }
    return await follow(answer, plan.format, context);
  }
  if (plan.format === 'json') {
    out.write(json(answer));
    return EXIT.ok;
  }
  out.write(`${bulkLines(answer, context).join('\n')}\n`);
  out.write(
    `  key       ${plan.key}${plan.keyGiven ? '' : style.dim(`  (to repeat this request without a second bulk re-run: --idempotency-key ${plan.key})`)}\n`,
  );
  out.write(style.dim(`follow it with: activity-core rerun --bulk ${answer.id} --wait\n`));
  return EXIT.ok;
}

function counters(record: BulkRerunRecord): string {
  const reasons = Object.entries(record.skipped_reasons)
    .map(([reason, count]) => `${reason} ${count}`)
    .join(', ');
  return `${record.processed}/${record.total} processed · ${record.started} started · ${record.skipped} skipped${reasons === '' ? '' : ` (${reasons})`}`;
}

function bulkLines(record: BulkRerunRecord, context: CommandContext): string[] {
  const { style } = context;
  const status = record.status === 'completed' ? style.green('completed') : style.yellow('running');
  const filter = [
    record.filter.activity_id === null ? undefined : `activity ${record.filter.activity_id}`,
    `status ${record.filter.status}`,
    record.filter.trigger_type === null ? undefined : `trigger ${record.filter.trigger_type}`,
    `created ${record.filter.from} … ${record.filter.to}`,
  ].filter((part) => part !== undefined);
  return [
    `bulk re-run ${style.bold(record.id)} · ${status}`,
    `  selects   ${filter.join(' · ')} · re-run from ${record.from}${record.priority === null ? '' : ` · priority ${record.priority}`}`,
    `  progress  ${counters(record)}`,
  ];
}

/**
 * Polls a bulk re-run until it has handled every selected run: a progress
 * line on stderr when it is a terminal, else one plain line there each time
 * the counters move; the final record on stdout.
 */
async function follow(initial: BulkRerunRecord, format: 'text' | 'json', context: CommandContext): Promise<number> {
  const { client, out, err, progress } = context;
  const onTerminal = err.isTTY === true;
  let record = initial;
  let shown = '';
  for (;;) {
    const line = counters(record);
    if (line !== shown) {
      if (onTerminal) progress.show(`bulk re-run ${record.id}: ${line}…`);
      else err.write(`${record.status === 'completed' ? 'completed' : 'running'}: ${line}\n`);
      shown = line;
    }
    if (record.status === 'completed') break;
    await sleep(POLL_INTERVAL_MS);
    record = await client.runs.bulkRerunStatus(record.id);
  }
  progress.clear();
  out.write(format === 'json' ? json(record) : `${bulkLines(record, context).join('\n')}\n`);
  return EXIT.ok;
}
