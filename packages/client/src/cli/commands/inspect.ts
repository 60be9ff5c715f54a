/** Read-only commands: get, list, runs, explain. */
import {
  buildTaskGraph,
  RunStatus,
  TriggerType,
  usesTaskGraph,
  type ActivityRecord,
  type RunRecord,
  type TaskInstanceRecord,
  type Trigger,
} from '@activity-core/contracts';
import { stringify } from 'yaml';
import { collect } from '../../pagination';
import { NotFoundProblem } from '../../problem';
import type { StoredEvent } from '@activity-core/contracts';
import { type CommandContext, UsageError } from '../context';
import { EXIT } from '../help';
import { duration, forTerminal, table, terminalSafe, terminalSafeJson, terminalSafeYaml, type Style } from '../output';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// Sent by whoever posted the event or wrote the definition: never to a terminal raw.
const json = terminalSafeJson;

function outputFormat(value: string | undefined, allowed: readonly string[]): string {
  const format = value ?? allowed[0]!;
  if (!allowed.includes(format)) throw new UsageError(`-o must be one of ${allowed.join(', ')}, got ${format}`);
  return format;
}

/** The live activity with this name (or, failing that, this id). */
export async function resolveActivity(context: CommandContext, nameOrId: string): Promise<ActivityRecord> {
  const byName = await context.client.activities.findByName(nameOrId);
  if (byName !== undefined) return byName;
  if (UUID.test(nameOrId)) {
    try {
      return await context.client.activities.get(nameOrId);
    } catch (error) {
      if (!(error instanceof NotFoundProblem)) throw error;
    }
  }
  throw new NotFoundLocally(`no live activity is named ${nameOrId}`);
}

/** Not a server problem: a name the CLI looked for and did not find. */
export class NotFoundLocally extends Error {}

function triggerText(trigger: Trigger): string {
  if (trigger.type === 'cron') return `cron ${trigger.cron}${trigger.timezone === 'UTC' ? '' : ` ${trigger.timezone}`}`;
  return `event ${trigger.event_type}${trigger.source === undefined ? '' : ` from ${trigger.source}`}${trigger.filter === undefined ? '' : ' (filtered)'}`;
}

function statusText(status: string, style: Style): string {
  switch (status) {
    case 'succeeded':
      return style.green(status);
    case 'failed':
      return style.red(status);
    case 'running':
    case 'pending':
      return style.yellow(status);
    default:
      return style.dim(status);
  }
}

// --- get -------------------------------------------------------------------------------

export async function get(
  options: { name: string | undefined; output: string | undefined },
  context: CommandContext,
): Promise<number> {
  if (options.name === undefined) throw new UsageError('get needs an activity name');
  const format = outputFormat(options.output, ['yaml', 'json']);
  const fetched = await resolveActivity(context, options.name);
  if (format === 'json') {
    context.out.write(json(fetched));
    return EXIT.ok;
  }
  const record = forTerminal(fetched);
  context.out.write(
    `# activity ${record.name} · id ${record.id} · version ${record.version} · updated ${record.updated_at}\n`,
  );
  context.out.write(terminalSafeYaml(stringify(fetched.definition, { lineWidth: 0 })));
  if (usesTaskGraph(fetched.definition.tasks)) context.out.write(terminalSafe(graphText(fetched.definition.tasks)));
  return EXIT.ok;
}

/** A graph definition's tasks as comment lines: each task, what it needs, and its rule, condition and fan-out. */
export function graphText(tasks: ActivityRecord['definition']['tasks']): string {
  const graph = buildTaskGraph(tasks);
  const name = (index: number): string => tasks[index]!.key ?? `#${index}`;
  const lines = graph.nodes.map((node) => {
    const task = tasks[node.index]!;
    const needs = node.needs.length === 0 ? 'starts with the run' : `after ${node.needs.map(name).join(', ')}`;
    const extras = [
      node.rule === 'all_succeeded' ? undefined : node.rule,
      task.if === undefined ? undefined : `if ${task.if}`,
      task.for_each === undefined
        ? undefined
        : `for each of ${task.for_each}${task.max_parallel === undefined ? '' : `, ${task.max_parallel} at a time`}`,
    ].filter((extra): extra is string => extra !== undefined);
    return `#   ${name(node.index)} (${task.type}): ${needs}${extras.length === 0 ? '' : ` · ${extras.join(' · ')}`}\n`;
  });
  return `# task graph:\n${lines.join('')}`;
}

// --- list ------------------------------------------------------------------------------

export async function list(
  options: { enabled: string | undefined; output: string | undefined },
  context: CommandContext,
): Promise<number> {
  const format = outputFormat(options.output, ['table', 'json']);
  if (options.enabled !== undefined && options.enabled !== 'true' && options.enabled !== 'false')
    throw new UsageError(`--enabled must be true or false, got ${options.enabled}`);
  const fetched = await collect(
    context.client.activities.listAll({
      limit: 200,
      ...(options.enabled === undefined ? {} : { enabled: options.enabled === 'true' }),
    }),
  );
  if (format === 'json') {
    context.out.write(json(fetched));
    return EXIT.ok;
  }
  const records = forTerminal(fetched);
  const { style } = context;
  const rows = records.map((record) => [
    record.name,
    `v${record.version}`,
    record.enabled ? 'yes' : style.yellow('no'),
    record.definition.triggers.length === 0
      ? style.dim('none')
      : record.definition.triggers.map(triggerText).join('; '),
    String(record.definition.tasks.length),
    record.updated_at,
  ]);
  context.out.write(table(['NAME', 'VERSION', 'ENABLED', 'TRIGGERS', 'TASKS', 'UPDATED'], rows, style));
  if (records.length === 0) context.out.write(style.dim('(no activities)\n'));
  return EXIT.ok;
}

// --- runs ------------------------------------------------------------------------------

const RUN_STATUSES: readonly string[] = RunStatus.options;
const TRIGGER_TYPES: readonly string[] = TriggerType.options;

export interface RunsOptions {
  runId: string | undefined;
  activity: string | undefined;
  status: string | undefined;
  trigger: string | undefined;
  event: string | undefined;
  limit: string | undefined;
  output: string | undefined;
}

function runTime(run: Pick<RunRecord, 'started_at' | 'finished_at'>): string {
  if (run.finished_at === null) return '';
  return duration(Date.parse(run.finished_at) - Date.parse(run.started_at));
}

/**
 * `runs <run_id>`'s pacing line: the priority and fairness key the run was started with and, for a
 * run its throttle delayed, until when; empty for a run recorded before these were recorded.
 */
export function pacingText(run: Pick<RunRecord, 'priority' | 'fairness_key' | 'not_before'>): string {
  return [
    run.priority === null ? undefined : `priority ${run.priority}`,
    run.fairness_key === null ? undefined : `fairness key ${terminalSafe(run.fairness_key)}`,
    run.not_before === null ? undefined : `delayed by throttle until ${run.not_before}`,
  ]
    .filter((part) => part !== undefined)
    .join(' · ');
}

function runCause(run: RunRecord): string {
  return run.event_id ?? run.scheduled_for ?? '';
}

export async function runs(options: RunsOptions, context: CommandContext): Promise<number> {
  const format = outputFormat(options.output, ['table', 'json']);
  const { client, out, style } = context;
  if (options.runId !== undefined) return await showRun(options.runId, format, context);

  if (options.status !== undefined && !RUN_STATUSES.includes(options.status))
    throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')}`);
  if (options.trigger !== undefined && !TRIGGER_TYPES.includes(options.trigger))
    throw new UsageError(`--trigger must be one of ${TRIGGER_TYPES.join(', ')}`);
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new UsageError(`--limit must be a positive integer, got ${options.limit}`);

  const activity = options.activity === undefined ? undefined : await resolveActivity(context, options.activity);
  const fetched = await collect(
    client.runs.listAll({
      limit: Math.min(limit, 200),
      ...(activity === undefined ? {} : { activity_id: activity.id }),
      ...(options.status === undefined ? {} : { status: options.status as RunStatus }),
      ...(options.trigger === undefined ? {} : { trigger_type: options.trigger as TriggerType }),
      ...(options.event === undefined ? {} : { event_id: options.event }),
    }),
    limit,
  );
  if (format === 'json') {
    out.write(json(fetched));
    return EXIT.ok;
  }
  const found = forTerminal(fetched);
  const names = new Map(
    forTerminal(await collect(client.activities.listAll({ limit: 200 }))).map((record) => [record.id, record.name]),
  );
  const rows = found.map((run) => [
    run.run_id,
    names.get(run.activity_id) ?? style.dim(`${run.activity_id} (deleted)`),
    `v${run.activity_version}`,
    statusText(run.status, style),
    run.trigger_type,
    runCause(run),
    run.started_at,
    runTime(run),
  ]);
  out.write(
    table(['RUN', 'ACTIVITY', 'VERSION', 'STATUS', 'TRIGGER', 'EVENT / FIRE TIME', 'STARTED', 'TOOK'], rows, style),
  );
  if (found.length === 0) out.write(style.dim('(no runs)\n'));
  return EXIT.ok;
}

async function showRun(runId: string, format: string, context: CommandContext): Promise<number> {
  const { client, out, style } = context;
  const fetched = await client.runs.get(runId);
  if (format === 'json') {
    out.write(json(fetched));
    return EXIT.ok;
  }
  const run = forTerminal(fetched);
  let activityName: string = run.activity_id;
  try {
    activityName = terminalSafe((await client.activities.get(run.activity_id)).name);
  } catch (error) {
    if (!(error instanceof NotFoundProblem)) throw error;
  }
  out.write(
    `run ${style.bold(run.run_id)} · ${activityName} v${run.activity_version} · ${statusText(run.status, style)}\n`,
  );
  out.write(`  workflow  ${run.workflow_id}\n`);
  out.write(`  trigger   ${run.trigger_type}${runCause(run) === '' ? '' : ` ${runCause(run)}`}\n`);
  out.write(
    `  started   ${run.started_at}${run.finished_at === null ? '' : ` · finished ${run.finished_at} · took ${runTime(run)}`}\n`,
  );
  if (pacingText(run) !== '') out.write(`  pacing    ${pacingText(run)}\n`);
  if (run.error !== null)
    out.write(
      `  error     ${style.red(run.error.message)}${run.error.type === undefined ? '' : ` (${run.error.type})`}\n`,
    );
  if (run.parent_run_id !== undefined) out.write(`  called by run ${run.parent_run_id}\n`);
  out.write(`  temporal  ${run.temporal_ui_url}\n\n`);
  const rows = run.tasks.map((task) => [
    `${task.task_index}${task.item_index === undefined ? '' : `[${task.item_index}]`}${task.task_key === undefined ? '' : ` ${task.task_key}`}`,
    task.task_type,
    statusText(task.status, style),
    String(task.attempt_count),
    task.started_at === null || task.finished_at === null
      ? ''
      : duration(Date.parse(task.finished_at) - Date.parse(task.started_at)),
    task.error !== null
      ? `${task.error.type ?? 'error'}: ${task.error.message}`
      : task.skipped === undefined
        ? ''
        : skippedText(task.skipped),
  ]);
  out.write(table(['TASK', 'TYPE', 'STATUS', 'ATTEMPTS', 'TOOK', 'ERROR / WHY SKIPPED'], rows, style));
  if (run.tasks.length === 0) out.write(style.dim('(no task has started yet)\n'));
  return EXIT.ok;
}

/** Why a task of a graph run did not run, in one line. */
export function skippedText(skipped: NonNullable<TaskInstanceRecord['skipped']>): string {
  switch (skipped.reason) {
    case 'condition_false':
      return `if ${skipped.expression ?? ''} was ${JSON.stringify(skipped.value)}`;
    case 'need_failed':
      return `a task it needs failed (${(skipped.needs ?? []).map((index) => `#${index}`).join(', ')})`;
    case 'no_need_failed':
      return 'any_failed: no task it needs failed';
  }
}

// --- explain ---------------------------------------------------------------------------

/** The router's rule: exact type, `*`, or `prefix.*` (which matches below the prefix, not the prefix itself). */
export function eventTypeMatches(pattern: string, eventType: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return eventType.startsWith(pattern.slice(0, -1));
  return pattern === eventType;
}

/**
 * Why an activity that has no routing decision for an event did not run:
 * the decisions were taken when the event was first accepted, so this
 * compares the activity as it is now with the event.
 */
export function whyNoRoute(activity: ActivityRecord, event: Pick<StoredEvent, 'received_at' | 'envelope'>): string {
  const { event_type: type, source } = event.envelope;
  const triggers = activity.definition.triggers.filter((trigger) => trigger.type === 'event');
  const matching = triggers.filter(
    (trigger) =>
      eventTypeMatches(trigger.event_type, type) && (trigger.source === undefined || trigger.source === source),
  );
  if (triggers.length === 0)
    return `it has no event triggers (only ${activity.definition.triggers.length === 0 ? 'manual runs' : 'cron'})`;
  if (matching.length === 0) {
    return `none of its event triggers (${triggers.map(triggerText).join('; ')}) matches event type ${type} from source ${source}`;
  }
  if (Date.parse(activity.created_at) > Date.parse(event.received_at)) {
    return `it was registered (${activity.created_at}) after the event was accepted (${event.received_at}); routes are decided when an event is first accepted`;
  }
  if (!activity.enabled) return 'it is disabled; a disabled activity matches no events';
  return `its trigger matches now, but did not when the event was accepted (${event.received_at}): it was disabled, or its triggers were different then (version ${activity.version} now, last changed ${activity.updated_at})`;
}

export interface ExplainOptions {
  what: string | undefined;
  args: string[];
  activity: string | undefined;
  output: string | undefined;
}

export async function explain(options: ExplainOptions, context: CommandContext): Promise<number> {
  const format = outputFormat(options.output, ['text', 'json']);
  if (options.what === 'event') {
    const [eventId] = options.args;
    if (eventId === undefined || options.args.length !== 1) throw new UsageError('explain event needs one event id');
    return await explainEvent(eventId, options.activity, format, context);
  }
  if (options.what === 'fire') {
    const [activity, scheduledFor] = options.args;
    if (activity === undefined || scheduledFor === undefined || options.args.length !== 2)
      throw new UsageError('explain fire needs an activity and a fire time (RFC 3339)');
    if (options.activity !== undefined)
      throw new UsageError('--activity is for explain event; explain fire names the activity as its first argument');
    return await explainFire(activity, scheduledFor, format, context);
  }
  throw new UsageError(
    options.what === undefined
      ? 'explain needs what to explain: event or fire'
      : `explain event or explain fire, not explain ${options.what}`,
  );
}

async function explainEvent(
  eventId: string,
  activityName: string | undefined,
  format: string,
  context: CommandContext,
): Promise<number> {
  const { client, out, style } = context;
  let event: StoredEvent;
  try {
    event = await client.events.get(eventId);
  } catch (error) {
    if (error instanceof NotFoundProblem) {
      throw new NotFoundLocally(
        `event ${eventId} was never accepted (or, when EVENT_RETENTION_DAYS is set, was accepted longer ago than that and has been forgotten)`,
      );
    }
    throw error;
  }
  const resolved = activityName === undefined ? undefined : await resolveActivity(context, activityName);
  if (format === 'json') {
    out.write(json(event));
    return EXIT.ok;
  }
  event = forTerminal(event);
  const focus = forTerminal(resolved);
  const { envelope } = event;
  out.write(
    `event ${style.bold(event.event_id)} · ${envelope.event_type} from ${envelope.source} · accepted ${event.received_at} · ${event.routing_state}\n`,
  );
  if (event.last_error !== null) out.write(`  ${style.yellow('routing')}: ${event.last_error}\n`);
  if (event.routes.length === 0) {
    out.write(
      `  no activity's trigger matched event type ${envelope.event_type} from source ${envelope.source} when it was accepted: nothing ran\n`,
    );
  }
  for (const route of event.routes) {
    const who = `${style.bold(route.activity_name)} (v${route.activity_version})`;
    switch (route.outcome) {
      case 'started':
      case 'duplicate': {
        let status = '';
        try {
          const run = await client.runs.get(route.run_id);
          status = ` · run ${statusText(run.status, style)}`;
        } catch (error) {
          if (!(error instanceof NotFoundProblem)) throw error;
          status =
            route.not_before === null || route.not_before === undefined
              ? ' · no worker has begun it yet'
              : ` · ${route.detail ?? `delayed until ${route.not_before}`}`;
        }
        const how = route.outcome === 'started' ? 'ran' : 'ran (its run already existed when the start was repeated)';
        out.write(`  ${style.green('✓')} ${who}: ${how} — run ${route.run_id}${status}\n`);
        break;
      }
      case 'pending':
        out.write(
          `  ${style.yellow('…')} ${who}: will run — Temporal has not confirmed the start yet; the dispatcher keeps trying (run ${route.run_id})\n`,
        );
        break;
      case 'coalescing':
        out.write(
          route.detail?.startsWith('in batch ') === true
            ? `  ${style.yellow('…')} ${who}: waiting in a batch — the batch's run starts once it is full or its timeout passed: ${route.detail}\n`
            : `  ${style.yellow('…')} ${who}: waiting in a debounce window — the window's run starts once the key is quiet for the period: ${route.detail ?? ''}\n`,
        );
        break;
      case 'batched':
        out.write(
          `  ${style.green('✓')} ${who}: ran in a batch — run ${route.run_id} (${route.workflow_id}) received it with the batch's other events: ${route.detail ?? ''}\n`,
        );
        break;
      case 'merged':
        out.write(
          `  ${style.green('✓')} ${who}: merged into another event's run — run ${route.run_id} (${route.workflow_id}): ${route.detail ?? ''}\n`,
        );
        break;
      case 'filtered':
      case 'filter_error':
        out.write(
          `  ${style.red('✗')} ${who}: did not run — ${route.outcome === 'filtered' ? 'its filter said no' : 'its filter failed on this event'}: ${route.detail ?? ''}\n`,
        );
        break;
      case 'dropped':
        out.write(`  ${style.red('✗')} ${who}: did not run — ${route.detail ?? 'dropped by its rate limit'}\n`);
        break;
      case 'dead_letter':
        out.write(
          `  ${style.red('✗')} ${who}: did not run — a dead letter (${route.reason_code ?? 'unknown'}${route.discarded_at === null ? '' : ', discarded'}): ${route.detail ?? ''}; see \`activity-core dead-letters list\`\n`,
        );
        break;
    }
  }
  if (focus !== undefined && !event.routes.some((route) => route.activity_id === focus.id)) {
    out.write(`  ${style.red('✗')} ${style.bold(focus.name)}: did not run — ${whyNoRoute(focus, event)}\n`);
  }
  return EXIT.ok;
}

async function explainFire(
  activityName: string,
  scheduledFor: string,
  format: string,
  context: CommandContext,
): Promise<number> {
  const { client, out, style } = context;
  const resolved = await resolveActivity(context, activityName);
  const fetched = await client.schedules.explain(resolved.id, scheduledFor);
  if (format === 'json') {
    out.write(json(fetched));
    return EXIT.ok;
  }
  const activity = forTerminal(resolved);
  const answer = forTerminal(fetched);
  out.write(`${style.bold(activity.name)} at ${answer.scheduled_for}: ${answer.explanation}\n`);
  if (answer.fires.length > 0) {
    out.write('\n');
    const rows = answer.fires.map((fire) => [
      String(fire.trigger_index),
      fire.range_end === null ? fire.scheduled_for : `${fire.scheduled_for} … ${fire.range_end}`,
      fire.status === 'skipped'
        ? style.dim('skipped')
        : fire.status === 'pending'
          ? style.yellow('pending')
          : style.green(fire.status),
      fire.reason,
      fire.run_id ?? '',
      fire.detail ?? '',
    ]);
    out.write(table(['TRIGGER', 'FIRE TIME', 'DECISION', 'REASON', 'RUN', 'DETAIL'], rows, style));
  }
  return EXIT.ok;
}
