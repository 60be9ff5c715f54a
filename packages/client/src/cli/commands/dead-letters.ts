/** `dead-letters`: list, retry or discard the routes whose run could not be started (docs/recovery.md, "Dead letters"). */
import { DeadLetterReason, MAX_DEAD_LETTERS_PER_REQUEST, type DeadLetter } from '@activity-core/contracts';
import { collect } from '../../pagination';
import { type CommandContext, UsageError } from '../context';
import { EXIT } from '../help';
import { table } from '../output';
import { resolveActivity } from './inspect';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface DeadLettersOptions {
  args: readonly string[];
  activity: string | undefined;
  reason: string | undefined;
  all: boolean;
  limit: string | undefined;
  output: string | undefined;
}

export async function deadLetters(options: DeadLettersOptions, context: CommandContext): Promise<number> {
  const [action, ...rest] = options.args;
  const format = options.output ?? (action === 'list' ? 'table' : 'text');
  const formats = action === 'list' ? ['table', 'json'] : ['text', 'json'];
  if (!formats.includes(format)) throw new UsageError(`-o must be one of ${formats.join(', ')}, got ${format}`);
  const reason = options.reason === undefined ? undefined : DeadLetterReason.safeParse(options.reason);
  if (reason !== undefined && !reason.success)
    throw new UsageError(`--reason must be one of ${DeadLetterReason.options.join(', ')}, got ${options.reason}`);
  // An id is taken as given: a deleted activity's dead letters no longer resolve by name.
  const activityId =
    options.activity === undefined
      ? undefined
      : UUID.test(options.activity)
        ? options.activity.toLowerCase()
        : (await resolveActivity(context, options.activity)).id;
  const { client, out, style } = context;

  switch (action) {
    case 'list': {
      if (rest.length > 0 || options.all) throw new UsageError('dead-letters list takes no event id and no --all');
      const limit = options.limit === undefined ? 50 : Number(options.limit);
      if (!Number.isInteger(limit) || limit < 1)
        throw new UsageError(`--limit must be a positive integer, got ${options.limit}`);
      const pages = async function* (): AsyncGenerator<DeadLetter> {
        let cursor: string | undefined;
        do {
          const page = await client.deadLetters.list({
            limit: Math.min(limit, 200),
            ...(cursor === undefined ? {} : { cursor }),
            ...(activityId === undefined ? {} : { activityId }),
            ...(reason === undefined ? {} : { reason: reason.data }),
          });
          yield* page.items;
          cursor = page.next_cursor ?? undefined;
        } while (cursor !== undefined);
      };
      const items = await collect(pages(), limit);
      if (format === 'json') {
        out.write(`${JSON.stringify(items, null, 2)}\n`);
        return EXIT.ok;
      }
      const rows = items.map((item) => [
        item.dead_lettered_at,
        item.event_id,
        item.activity_name,
        item.reason,
        String(item.attempts),
        (item.detail ?? '').slice(0, 80),
      ]);
      out.write(table(['SINCE', 'EVENT', 'ACTIVITY', 'REASON', 'ATTEMPTS', 'DETAIL'], rows, style));
      if (items.length === 0) out.write(style.dim('(no dead letters)\n'));
      return EXIT.ok;
    }
    case 'retry':
    case 'discard': {
      if (options.limit !== undefined) throw new UsageError(`dead-letters ${action} does not take --limit`);
      const eventId = rest[0];
      if (rest.length > 1) throw new UsageError(`dead-letters ${action} takes at most one event id`);
      if (eventId !== undefined && (options.all || reason !== undefined))
        throw new UsageError('give an event id (with --activity), or --all with --activity/--reason, not both');
      if (eventId !== undefined && activityId === undefined)
        throw new UsageError(
          `dead-letters ${action} <event_id> needs --activity: one dead letter is an event and an activity`,
        );
      if (eventId === undefined && !options.all)
        throw new UsageError(
          `dead-letters ${action} needs an event id and --activity, or --all (at most ${MAX_DEAD_LETTERS_PER_REQUEST} per call, narrowed by --activity/--reason)`,
        );
      const selection =
        eventId !== undefined
          ? { event_id: eventId, activity_id: activityId }
          : {
              filter: {
                ...(activityId === undefined ? {} : { activity_id: activityId }),
                ...(reason === undefined ? {} : { reason: reason.data }),
              },
            };
      if (action === 'retry') {
        const answer = await client.deadLetters.retry(selection);
        if (format === 'json') out.write(`${JSON.stringify(answer, null, 2)}\n`);
        else {
          const rows = answer.retried.map((item) => [
            item.event_id,
            item.activity_name,
            item.outcome === 'dead_letter' ? `${item.outcome} (${item.reason ?? ''})` : item.outcome,
            item.workflow_id,
          ]);
          out.write(table(['EVENT', 'ACTIVITY', 'NOW', 'WORKFLOW ID'], rows, style));
          if (answer.more)
            out.write(style.dim(`(more match: run it again for the next ${MAX_DEAD_LETTERS_PER_REQUEST})\n`));
        }
        return answer.retried.some((item) => item.outcome === 'dead_letter') ? EXIT.failed : EXIT.ok;
      }
      const answer = await client.deadLetters.discard(selection);
      if (format === 'json') out.write(`${JSON.stringify(answer, null, 2)}\n`);
      else {
        out.write(`${answer.discarded.length} dead letter${answer.discarded.length === 1 ? '' : 's'} discarded\n`);
        if (answer.more)
          out.write(style.dim(`(more match: run it again for the next ${MAX_DEAD_LETTERS_PER_REQUEST})\n`));
      }
      return EXIT.ok;
    }
    default:
      throw new UsageError(`dead-letters takes list, retry or discard${action === undefined ? '' : `, not ${action}`}`);
  }
}
