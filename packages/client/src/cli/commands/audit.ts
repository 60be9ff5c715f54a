/** `audit`: who changed what, and which operator actions were taken. */
import { AUDIT_ACTIONS, type AuditAction } from '@activity-core/contracts';
import { collect } from '../../pagination';
import { type CommandContext, UsageError } from '../context';
import { EXIT } from '../help';
import { table, type Style } from '../output';
import { resolveActivity } from './inspect';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AuditOptions {
  actor: string | undefined;
  action: string | undefined;
  activity: string | undefined;
  from: string | undefined;
  to: string | undefined;
  limit: string | undefined;
  output: string | undefined;
}

function outcomeText(outcome: string, style: Style): string {
  if (outcome === 'succeeded') return style.green(outcome);
  return outcome === 'failed' ? style.red(outcome) : style.yellow(outcome);
}

export async function audit(options: AuditOptions, context: CommandContext): Promise<number> {
  const format = options.output ?? 'table';
  if (format !== 'table' && format !== 'json') throw new UsageError(`-o must be one of table, json, got ${format}`);
  if (options.action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(options.action))
    throw new UsageError(`--action must be one of ${AUDIT_ACTIONS.join(', ')}`);
  const limit = options.limit === undefined ? 50 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new UsageError(`--limit must be a positive integer, got ${options.limit}`);
  const { client, out, style } = context;
  // An id is taken as given: the log keeps entries of deleted activities, which no longer resolve by name.
  const activityId =
    options.activity === undefined
      ? undefined
      : UUID.test(options.activity)
        ? options.activity.toLowerCase()
        : (await resolveActivity(context, options.activity)).id;
  const entries = await collect(
    client.audit.listAll({
      limit: Math.min(limit, 200),
      ...(options.actor === undefined ? {} : { actor: options.actor }),
      ...(options.action === undefined ? {} : { action: options.action as AuditAction }),
      ...(activityId === undefined ? {} : { activity_id: activityId }),
      ...(options.from === undefined ? {} : { from: options.from }),
      ...(options.to === undefined ? {} : { to: options.to }),
    }),
    limit,
  );
  if (format === 'json') {
    out.write(`${JSON.stringify(entries, null, 2)}\n`);
    return EXIT.ok;
  }
  const rows = entries.map((entry) => [
    entry.at,
    entry.actor,
    entry.action,
    entry.target_id === null ? style.dim(entry.target_type) : `${entry.target_type} ${entry.target_id}`,
    outcomeText(entry.outcome, style),
    String(entry.status),
    entry.request_id,
  ]);
  out.write(table(['AT', 'ACTOR', 'ACTION', 'TARGET', 'OUTCOME', 'STATUS', 'REQUEST'], rows, style));
  if (entries.length === 0) out.write(style.dim('(no entries)\n'));
  return EXIT.ok;
}
