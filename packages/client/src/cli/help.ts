import {
  AUDIT_ACTIONS,
  MAX_DEAD_LETTERS_PER_REQUEST,
  MAX_BULK_RERUN_RANGE_DAYS,
  MAX_BULK_RERUN_RUNS,
  RunStatus,
  TriggerType,
} from '@activity-core/contracts';

export const EXIT = {
  /** Done; for `apply --dry-run`: nothing would change. */
  ok: 0,
  /** Invalid definition files, an API error, or the API could not be reached. */
  failed: 1,
  /** `apply --dry-run` only: applying would change something. */
  changes: 2,
  /** Unknown command or option, missing argument. */
  usage: 64,
} as const;

const GLOBAL_OPTIONS = `Global options:
  --url <url>          API base URL (env ACTIVITY_CORE_URL; default http://127.0.0.1:3000)
  --api-key <key>      management key, sent as a bearer token (env ACTIVITY_CORE_API_KEY;
                       prefer the environment: arguments show up in process lists)
  --no-color           plain output even on a terminal (so does NO_COLOR=1)
  -h, --help           help for the command
  --version            print the version`;

export const MAIN_HELP = `activity-core — definitions as code for activity-core

Usage: activity-core <command> [options]

Commands:
  apply -f <file|dir>   create, update (and with --prune delete) activities so the
                        server matches the definition files; --dry-run shows the diff
  get <name>            print one activity's definition (YAML, or JSON with -o json)
  list                  list the live activities
  runs [run_id]         list runs (filter by activity, status, trigger, event), or show one
                        run with its tasks
  explain event <id>    why an event did or did not start each activity's run
  explain fire <activity> <time>
                        why a cron fire time did or did not run
  rerun <run_id>        re-run a run that ended, from the start or from its failed task
  rerun --from <t> --to <t> [--activity <name>] [--status <s>] …
                        re-run every run a filter selects (--dry-run counts them)
  replay <event_id>     replay a stored event against today's definitions (--mode if_no_runs|force)
  replay --from <t> --to <t> [--event-type <t>] [--outcome <o>] …
                        replay every stored event a filter selects (--dry-run counts them)
  held list|release|discard <activity>
                        the events a disabled activity held: list them, release them (each
                        starts its run) or discard them (--event-id <id> for some)
  dead-letters list|retry|discard
                        the events whose runs could not be started, retried after a fix or discarded
  audit                 who changed what, and which operator actions were taken
  help [command]        help for a command

Definitions are keyed by name: the name in a file is the activity it describes, so a
git repository of definition files can be the source of truth (docs/definitions-as-code.md).

${GLOBAL_OPTIONS}

Exit codes:
  0   done (apply --dry-run: nothing would change)
  1   invalid definition files, an API error, or the API could not be reached
  2   apply --dry-run: applying would change something
  64  usage error (unknown command or option, missing argument)

Output is coloured, with progress, on a terminal (unless NO_COLOR is set); plain when piped.
`;

export const COMMAND_HELP: Readonly<Record<string, string>> = {
  held: `Usage: activity-core held list <activity> [--limit <n>] [-o text|json]
       activity-core held release <activity> [--event-id <id> …] [-o text|json]
       activity-core held discard <activity> [--event-id <id> …] [-o text|json]

The events an activity disabled with when_disabled: {action: hold} held (docs/recovery.md).
list shows them oldest first, with when each hold expires. release makes each pending and
starts its run under its own id (activity-<activity id>:<event id>), in arrival order, through
the dispatcher (concurrency and pacing apply); the activity must be enabled first. Without
--event-id every held event is released: the command repeats the request until none is left.
Releasing twice starts nothing new. discard records each as discarded, with who and when.
`,
  'dead-letters': `Usage: activity-core dead-letters list [--activity <name|id>] [--reason <r>] [--limit <n>] [-o table|json]
       activity-core dead-letters retry <event_id> --activity <name|id> [-o text|json]
       activity-core dead-letters retry --all [--activity <name|id>] [--reason <r>] [-o text|json]
       activity-core dead-letters discard <event_id> --activity <name|id> | --all [--activity …] [--reason <r>]

A dead letter is an accepted event's route whose run could not be started and is not
retried on its own (docs/recovery.md, "Dead letters"), or a filter that failed on the event.
--reason: definition_deleted, start_refused, retry_budget_exhausted, not_matched, filter_error.

retry plans the event again against today's definition (fix it first): a run that can start
now starts under the event's own id (activity-<activity id>:<event id>), so a retry never runs
anything twice; one that fails again is a dead letter again, its attempts counted (exit 1).
discard records who discarded it; it is no longer listed or counted. --all acts on the oldest
${MAX_DEAD_LETTERS_PER_REQUEST} matching per call.
`,
  replay: `Usage: activity-core replay <event_id> [--mode if_no_runs|force] [--idempotency-key <key>] [-o text|json]
       activity-core replay --from <time> --to <time> [--event-type <type|prefix.*>] [--source <s>]
                            [--outcome any|unmatched|filtered|pending] [--mode …] [--dry-run | --wait] [-o text|json]
       activity-core replay --bulk <id> [--wait] [-o text|json]

Plans a stored event again against today's definitions (docs/recovery.md).
--mode if_no_runs (default) starts only the runs the event never had, under their own ids
(activity-<activity id>:<event id>): an activity that already ran it is already_ran, and
replaying twice starts nothing. --mode force starts a new run replay-<run id>:<n> for each
matching activity; the same --idempotency-key names the same replay.

Bulk (no event id): replays, in arrival order, every stored event received in [--from, --to)
that matches the filter (at most 31 days, at most 10,000 events). --outcome unmatched selects
events no run came of (e.g. the activity was registered later), filtered those a filter left
out. The server carries it out in the background; the command prints its id, or follows its
progress with --wait. The same request twice is the same bulk replay.
`,
  apply: `Usage: activity-core apply -f <file|dir> [-f <file|dir> …] [--dry-run] [--prune [--prune-prefix <p>]]

Makes the server's activities match the definition files. Each definition is matched
to a live activity by its name:
  + create     no live activity has the name: registered (PUT with a new id)
  ~ update     the live definition differs: replaced, version bumped (field diff shown)
  = unchanged  equal after defaults are applied: nothing sent, version kept
  - delete     with --prune: a live activity no file names: deleted (its runs stay)

Files: .yaml/.yml (several documents per file with ---, each a definition or a list of
them) and .json (a definition or an array). Directories are searched recursively; hidden
files and directories are skipped. Every file is validated first, with the same rules as
the API; if any is invalid, each problem is printed as file:line:column: path: message and
nothing is applied.

Creates and updates run first, deletions last, one at a time; a failure is printed
with the file and field the server named, the others still apply, and the exit code is 1.

Options:
  -f, --file <path>        a definition file or directory (repeatable; required)
  --dry-run                print the plan and change nothing; exit 2 if something would change
  --prune                  also delete live activities that no file defines (refused when
                           the files define nothing)
  --prune-prefix <prefix>  with --prune: only delete activities whose name starts with
                           <prefix> (for a repository that owns part of the names)

${GLOBAL_OPTIONS}

Examples:
  activity-core apply -f activities/ --dry-run      # CI on a pull request: show the diff
  activity-core apply -f activities/ --prune        # CD on main: make the server match
`,
  get: `Usage: activity-core get <name> [-o yaml|json]

Prints one live activity. With -o yaml (the default) it prints the stored definition,
defaults filled in, ready to save as a definition file, under a comment with its id and
version. With -o json it prints the whole record (id, version, schedules, timestamps).
<name> may also be the activity's id.

Options:
  -o, --output <format>    yaml (default) or json

${GLOBAL_OPTIONS}
`,
  list: `Usage: activity-core list [--enabled true|false] [-o table|json]

Lists the live activities, newest first: name, version, enabled, triggers, task count,
last change.

Options:
  --enabled <true|false>   only enabled (or only disabled) activities
  -o, --output <format>    table (default) or json (an array of activity records)

${GLOBAL_OPTIONS}
`,
  runs: `Usage: activity-core runs [--activity <name>] [--status <s>] [--trigger <t>] [--event <id>] [--limit <n>] [-o table|json]
       activity-core runs <run_id> [-o table|json]

Without a run id: lists runs, newest first. With one: the run and each of its tasks
(status, attempts, duration, error) and the Temporal UI link.

Options:
  --activity <name>        only runs of this activity (by name, or id)
  --status <status>        ${RunStatus.options.join(', ')}
  --trigger <type>         ${TriggerType.options.join(', ')}
  --event <event_id>       only runs of this event
  --limit <n>              at most n runs (default 20)
  -o, --output <format>    table (default) or json

${GLOBAL_OPTIONS}
`,
  explain: `Usage: activity-core explain event <event_id> [--activity <name>] [-o text|json]
       activity-core explain fire <activity> <scheduled_for> [-o text|json]

explain event: the event's routing decisions, one line per activity whose trigger matched
its type and source when it was accepted — ran (with the run's status), filtered out
(and by what), or pending (Temporal has not confirmed the start yet). With --activity,
also why an activity without a decision did not run (no trigger matches, registered
after the event, disabled).

explain fire: why a cron fire time of an activity did or did not run (<scheduled_for> is
an RFC 3339 instant, e.g. 2026-03-01T09:00:00Z), and every decision recorded for it.

Options:
  --activity <name>        explain event: also explain this activity
  -o, --output <format>    text (default) or json (the API's answer)

${GLOBAL_OPTIONS}
`,
  rerun: `Usage: activity-core rerun <run_id> [--from start|failed-task] [--priority <1-5>] [--idempotency-key <key>] [-o text|json]
       activity-core rerun --from <time> --to <time> [--activity <name>] [--status <s>] [--trigger <t>]
                           [--rerun-from start|failed-task] [--priority <1-5>] [--dry-run | --wait]
                           [--idempotency-key <key>] [-o text|json]
       activity-core rerun --bulk <id> [--wait] [-o text|json]

A run is never started twice under its own id, so a run that ended (failed, usually) is
done again as a re-run: a new run rerun-<original run id>:<n>, with the original's
trigger and definition version, linked to it (runs <run_id> shows the chain).

rerun <run_id>: re-runs one run and prints the re-run's run id, workflow id and status:
started, or duplicate when its Idempotency-Key already named this re-run (nothing new
started). --from failed-task begins at the task that failed the run; the tasks before it
are not executed again and their recorded results are reused.

Idempotency-Key: one is generated per invocation and printed. It is not derived from the
run id because running the command again on purpose (the re-run failed too) must be a new
re-run; but a command that failed without an answer (exit 1 after a timeout or a 5xx) may
have started one, so repeat that command with the printed --idempotency-key: it answers
duplicate instead of starting a second re-run. The error message prints the command.

Bulk (no run id): re-runs every original run created in [--from, --to) that matches the
filter (at most ${MAX_BULK_RERUN_RANGE_DAYS} days apart, at most ${MAX_BULK_RERUN_RUNS} runs). Re-runs are never selected, and an
original whose re-run is pending, running or succeeded is skipped. The server carries it
out in the background; the command prints the bulk re-run's id and returns, or with
--wait follows its progress until every selected run has been re-run or skipped (a
progress line on a terminal, one line per change on stderr when piped). --wait does not
wait for the re-runs themselves to finish: list them with runs --activity <name>.
Interrupting --wait stops the waiting, not the bulk re-run. --bulk <id> shows one.

Options:
  --from <start|failed-task>   rerun <run_id>: where the re-run begins (default start)
  --from <time>, --to <time>   bulk: originals created in [from, to), RFC 3339 (required)
  --rerun-from <start|failed-task>
                               bulk: where each re-run begins (default start)
  --priority <1-5>             the re-runs' Temporal priority, 1 highest (default: one lower than the
                               definition's, so re-runs never slow live runs); shown on each run record
  --activity <name>            bulk: only runs of this activity (by name, or id)
  --status <status>            bulk: ${RunStatus.options.filter((status) => status !== 'running' && status !== 'waiting_for_slot').join(', ')} (default failed)
  --trigger <type>             bulk: ${TriggerType.options.join(', ')}
  --dry-run                    bulk: print how many runs would be re-run; start nothing
  --wait                       bulk: follow the progress until the bulk re-run has completed
  --bulk <id>                  the progress of a bulk re-run
  --idempotency-key <key>      repeat an earlier request (default: a new key, printed)
  -o, --output <format>        text (default) or json (the API's answer)

${GLOBAL_OPTIONS}

Examples:
  activity-core rerun 0b8f2a52-5bfc-500d-b265-f0bb62f7b33a --from failed-task
  activity-core rerun --activity order-paid-sync --from 2026-11-03T00:00:00Z --to 2026-11-04T00:00:00Z --dry-run
  activity-core rerun --activity order-paid-sync --from 2026-11-03T00:00:00Z --to 2026-11-04T00:00:00Z --wait
`,
  audit: `Usage: activity-core audit [--actor <label>] [--action <action>] [--activity <name>] [--from <t>] [--to <t>] [--limit <n>] [-o table|json]

The audit log, newest first: each change and operator action taken through the API
(definitions, enable/disable, schedules, re-runs, cancels, webhook sources), who took it
(the key's id, as api_key:<key id>), what it acted on, its outcome and HTTP status, and
the request id. Refused attempts of a known key are listed too.

Options:
  --actor <label>          only this credential, e.g. api_key:3f9a0c1b2d4e
  --action <action>        ${AUDIT_ACTIONS.join(', ')}
  --activity <name>        only entries about this activity (by name, or id: a deleted one too)
  --from <t>               only entries at or after this RFC 3339 instant
  --to <t>                 only entries at or before this RFC 3339 instant
  --limit <n>              at most n entries (default 50)
  -o, --output <format>    table (default) or json

${GLOBAL_OPTIONS}
`,
};

export function helpFor(command: string | undefined): string {
  return (command !== undefined ? COMMAND_HELP[command] : undefined) ?? MAIN_HELP;
}
