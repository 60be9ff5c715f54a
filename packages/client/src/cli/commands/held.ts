/** `held`: the events a disabled activity holds (docs/recovery.md, "Held events"): list, release or discard them. */
import type { HeldEventPage } from '@activity-core/contracts';
import { type CommandContext, UsageError } from '../context';
import { EXIT } from '../help';
import { table } from '../output';
import { resolveActivity } from './inspect';

export interface HeldOptions {
  args: readonly string[];
  /** Event ids to release or discard (repeatable `--event-id`); none: every held event. */
  events: readonly string[];
  limit: string | undefined;
  output: string | undefined;
}

const ACTIONS = ['list', 'release', 'discard'] as const;
type HeldAction = (typeof ACTIONS)[number];

function parseLimit(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200)
    throw new UsageError('--limit must be a whole number from 1 to 200');
  return limit;
}

function printList(page: HeldEventPage, context: CommandContext): void {
  const rows = page.items.map((item) => [item.event_id, item.event_type, item.received_at, item.expires_at]);
  context.out.write(table(['EVENT ID', 'TYPE', 'RECEIVED', 'EXPIRES'], rows, context.style));
  context.out.write(
    context.style.dim(
      `${page.total} held${page.next_cursor === null ? '' : ` (first ${page.items.length} shown; --limit up to 200)`}\n`,
    ),
  );
}

export async function held(options: HeldOptions, context: CommandContext): Promise<number> {
  const format = options.output ?? 'text';
  if (format !== 'text' && format !== 'json') throw new UsageError(`-o must be one of text, json, got ${format}`);
  const [action, name, ...extra] = options.args;
  if (action === undefined || !ACTIONS.includes(action as HeldAction))
    throw new UsageError(`held needs one of ${ACTIONS.join(', ')}, then an activity name or id`);
  if (name === undefined) throw new UsageError(`held ${action} needs an activity name or id`);
  if (extra.length > 0) throw new UsageError(`held ${action} takes one activity; name events with --event-id <id>`);
  const activity = await resolveActivity(context, name);
  const json = (value: unknown) => context.out.write(`${JSON.stringify(value, null, 2)}\n`);

  switch (action as HeldAction) {
    case 'list': {
      if (options.events.length > 0) throw new UsageError('held list takes no --event-id');
      const limit = parseLimit(options.limit);
      const page = await context.client.activities.heldEvents(activity.id, limit === undefined ? {} : { limit });
      if (format === 'json') json(page);
      else printList(page, context);
      return EXIT.ok;
    }
    case 'release': {
      if (options.limit !== undefined) throw new UsageError('--limit is for held list');
      const eventIds = options.events.length > 0 ? [...options.events] : undefined;
      // All: one request carries out a bounded part (oldest first); repeat until none is left.
      let answer = await context.client.activities.releaseHeld(activity.id, eventIds === undefined ? {} : { eventIds });
      const total = { ...answer, other: { ...answer.other } };
      while (eventIds === undefined && answer.remaining > 0 && answer.released > 0) {
        context.progress.show(`released ${total.released}, ${answer.remaining} still held`);
        answer = await context.client.activities.releaseHeld(activity.id);
        total.released += answer.released;
        total.started += answer.started;
        total.duplicate += answer.duplicate;
        total.pending += answer.pending;
        for (const [outcome, n] of Object.entries(answer.other)) total.other[outcome] = (total.other[outcome] ?? 0) + n;
        total.remaining = answer.remaining;
      }
      context.progress.clear();
      if (format === 'json') json(total);
      else
        context.out.write(
          `${activity.name}: released ${total.released} (${total.started} runs started, ${total.duplicate} already there, ${total.pending} pending` +
            `${Object.entries(total.other)
              .map(([outcome, n]) => `, ${n} ${outcome}`)
              .join('')}); ${total.remaining} still held` +
            `${total.not_held.length > 0 ? `; not held: ${total.not_held.join(', ')}` : ''}\n`,
        );
      return EXIT.ok;
    }
    case 'discard': {
      if (options.limit !== undefined) throw new UsageError('--limit is for held list');
      const answer = await context.client.activities.discardHeld(
        activity.id,
        options.events.length > 0 ? { eventIds: [...options.events] } : {},
      );
      if (format === 'json') json(answer);
      else
        context.out.write(
          `${activity.name}: discarded ${answer.discarded}; ${answer.remaining} still held` +
            `${answer.not_held.length > 0 ? `; not held: ${answer.not_held.join(', ')}` : ''}\n`,
        );
      return EXIT.ok;
    }
  }
}
