/**
 * The `activity-core` command line, as a function: arguments, streams and
 * environment in, exit code out (main.ts binds it to the process; tests call
 * it directly).
 */
import { parseArgs } from 'node:util';
import { ActivityCoreClient, type ClientOptions } from '../client';
import { apply } from './commands/apply';
import { audit } from './commands/audit';
import { held } from './commands/held';
import { deadLetters } from './commands/dead-letters';
import { explain, get, list, NotFoundLocally, runs } from './commands/inspect';
import { replay } from './commands/replay';
import { rerun } from './commands/rerun';
import { describeError, UsageError, type CommandContext } from './context';
import { COMMAND_HELP, EXIT, helpFor } from './help';
import { colourWanted, createProgress, createStyle, type OutputStream } from './output';

export const CLI_VERSION = '0.1.0';
export const DEFAULT_URL = 'http://127.0.0.1:3000';

export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  /** The environment: ACTIVITY_CORE_URL, ACTIVITY_CORE_API_KEY, NO_COLOR. */
  env: Readonly<Record<string, string | undefined>>;
  /** Relative -f paths are read from here. */
  cwd: string;
  /** For tests: a fetch to use, and retry settings. */
  client?: Pick<ClientOptions, 'fetch' | 'retry' | 'timeoutMs'>;
}

const OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  'no-color': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  file: { type: 'string', short: 'f', multiple: true },
  'dry-run': { type: 'boolean' },
  prune: { type: 'boolean' },
  'prune-prefix': { type: 'string' },
  output: { type: 'string', short: 'o' },
  enabled: { type: 'string' },
  activity: { type: 'string' },
  status: { type: 'string' },
  trigger: { type: 'string' },
  event: { type: 'string' },
  'event-id': { type: 'string', multiple: true },
  limit: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  'rerun-from': { type: 'string' },
  priority: { type: 'string' },
  'idempotency-key': { type: 'string' },
  bulk: { type: 'string' },
  wait: { type: 'boolean' },
  actor: { type: 'string' },
  mode: { type: 'string' },
  'event-type': { type: 'string' },
  source: { type: 'string' },
  outcome: { type: 'string' },
  action: { type: 'string' },
  reason: { type: 'string' },
  all: { type: 'boolean' },
} as const;

const GLOBAL = ['url', 'api-key', 'no-color', 'help', 'version'];
/** Which options each command takes, besides the global ones. */
const COMMAND_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  apply: ['file', 'dry-run', 'prune', 'prune-prefix'],
  get: ['output'],
  list: ['enabled', 'output'],
  runs: ['activity', 'status', 'trigger', 'event', 'limit', 'output'],
  explain: ['activity', 'output'],
  rerun: [
    'from',
    'to',
    'rerun-from',
    'priority',
    'activity',
    'status',
    'trigger',
    'idempotency-key',
    'bulk',
    'dry-run',
    'wait',
    'output',
  ],
  audit: ['actor', 'action', 'activity', 'from', 'to', 'limit', 'output'],
  replay: [
    'mode',
    'from',
    'to',
    'event-type',
    'source',
    'outcome',
    'idempotency-key',
    'bulk',
    'dry-run',
    'wait',
    'output',
  ],
  held: ['event-id', 'limit', 'output'],
  'dead-letters': ['activity', 'reason', 'all', 'limit', 'output'],
  help: [],
};

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const errStyle = createStyle(colourWanted(io.stderr, io.env, argv.includes('--no-color')));
  const usage = (message: string, command?: string): number => {
    io.stderr.write(
      `${errStyle.red('error')} ${message}\n${errStyle.dim(`see: activity-core ${command === undefined ? '' : `${command} `}--help`)}\n`,
    );
    return EXIT.usage;
  };

  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    return usage((error as Error).message.split('\n')[0] ?? String(error));
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;

  if (values.version === true) {
    io.stdout.write(`${CLI_VERSION}\n`);
    return EXIT.ok;
  }
  if (command === 'help') {
    io.stdout.write(helpFor(rest[0]));
    return rest[0] === undefined || COMMAND_HELP[rest[0]] !== undefined ? EXIT.ok : usage(`no command ${rest[0]}`);
  }
  if (values.help === true || command === undefined) {
    io.stdout.write(helpFor(command));
    if (command === undefined && values.help !== true) return EXIT.usage;
    return command === undefined || COMMAND_HELP[command] !== undefined ? EXIT.ok : usage(`no command ${command}`);
  }
  const allowed = COMMAND_OPTIONS[command];
  if (allowed === undefined) return usage(`unknown command ${command}`);
  const given = Object.keys(values).filter((name) => !GLOBAL.includes(name));
  const foreign = given.filter((name) => !allowed.includes(name));
  if (foreign.length > 0)
    return usage(`${command} does not take ${foreign.map((name) => `--${name}`).join(', ')}`, command);

  const baseUrl = values.url ?? io.env.ACTIVITY_CORE_URL ?? DEFAULT_URL;
  const apiKey = values['api-key'] ?? io.env.ACTIVITY_CORE_API_KEY;
  const style = createStyle(colourWanted(io.stdout, io.env, values['no-color'] === true));
  const progress = createProgress(io.stderr);
  const client = new ActivityCoreClient({
    baseUrl,
    ...(apiKey === undefined ? {} : { apiKey }),
    ...io.client,
    onRetry: (retry) =>
      progress.show(errStyle.dim(`retrying in ${Math.ceil(retry.delayMs / 100) / 10}s (${retry.reason})…`)),
  });
  const context: CommandContext = {
    client,
    baseUrl,
    cwd: io.cwd,
    out: io.stdout,
    err: io.stderr,
    style,
    errStyle,
    progress,
  };

  try {
    switch (command) {
      case 'apply':
        if (rest.length > 0) throw new UsageError(`apply reads files given with -f, not ${rest.join(' ')}`);
        return await apply(
          {
            files: values.file ?? [],
            dryRun: values['dry-run'] === true,
            prune: values.prune === true,
            prunePrefix: values['prune-prefix'],
          },
          context,
        );
      case 'get':
        if (rest.length > 1) throw new UsageError('get takes one activity name');
        return await get({ name: rest[0], output: values.output }, context);
      case 'list':
        if (rest.length > 0) throw new UsageError('list takes no arguments');
        return await list({ enabled: values.enabled, output: values.output }, context);
      case 'runs':
        if (rest.length > 1) throw new UsageError('runs takes at most one run id');
        return await runs(
          {
            runId: rest[0],
            activity: values.activity,
            status: values.status,
            trigger: values.trigger,
            event: values.event,
            limit: values.limit,
            output: values.output,
          },
          context,
        );
      case 'explain':
        return await explain(
          { what: rest[0], args: rest.slice(1), activity: values.activity, output: values.output },
          context,
        );
      case 'rerun':
        return await rerun(
          {
            args: rest,
            from: values.from,
            to: values.to,
            rerunFrom: values['rerun-from'],
            priority: values.priority,
            activity: values.activity,
            status: values.status,
            trigger: values.trigger,
            idempotencyKey: values['idempotency-key'],
            bulk: values.bulk,
            dryRun: values['dry-run'] === true,
            wait: values.wait === true,
            output: values.output,
          },
          context,
        );
      case 'replay':
        return await replay(
          {
            args: rest,
            mode: values.mode,
            from: values.from,
            to: values.to,
            eventType: values['event-type'],
            source: values.source,
            outcome: values.outcome,
            idempotencyKey: values['idempotency-key'],
            bulk: values.bulk,
            dryRun: values['dry-run'] === true,
            wait: values.wait === true,
            output: values.output,
          },
          context,
        );
      case 'held':
        return await held(
          { args: rest, events: values['event-id'] ?? [], limit: values.limit, output: values.output },
          context,
        );
      case 'audit':
        if (rest.length > 0)
          throw new UsageError('audit takes no arguments; filter with --actor, --action, --activity');
        return await audit(
          {
            actor: values.actor,
            action: values.action,
            activity: values.activity,
            from: values.from,
            to: values.to,
            limit: values.limit,
            output: values.output,
          },
          context,
        );
      case 'dead-letters':
        return await deadLetters(
          {
            args: rest,
            activity: values.activity,
            reason: values.reason,
            all: values.all === true,
            limit: values.limit,
            output: values.output,
          },
          context,
        );
      default:
        return usage(`unknown command ${command}`);
    }
  } catch (error) {
    progress.clear();
    if (error instanceof UsageError) return usage(error.message, command);
    if (error instanceof NotFoundLocally) {
      io.stderr.write(`${errStyle.red('error')} ${error.message}\n`);
      return EXIT.failed;
    }
    io.stderr.write(`${errStyle.red('error')} ${describeError(error, baseUrl)}\n`);
    return EXIT.failed;
  }
}
