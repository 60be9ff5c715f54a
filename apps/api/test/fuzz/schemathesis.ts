import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The schemathesis CLI: SCHEMATHESIS_PATH (set by `npm test`) or the virtualenv scripts/bootstrap.mjs installs. */
export function findSchemathesis(root = process.cwd()): string | undefined {
  const candidates = [
    process.env.SCHEMATHESIS_PATH,
    join(root, '.tools', 'venv', 'bin', 'schemathesis'),
    join(root, '.tools', 'venv', 'Scripts', 'schemathesis.exe'),
  ];
  return candidates.find((path): path is string => path !== undefined && path !== '' && existsSync(path));
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

/**
 * Runs a command without blocking the event loop: the API under test lives
 * in this very process and must keep answering while the fuzzer runs.
 */
export function runCli(
  command: string,
  args: readonly string[],
  options: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output: Buffer.concat(chunks).toString('utf8'), timedOut });
    });
  });
}

/** One request schemathesis sent and what came back (from its VCR cassette). */
export interface RecordedInteraction {
  operation: string;
  method: string;
  uri: string;
  requestBody: string | undefined;
  status: number | undefined;
  responseBody: string | undefined;
  elapsedSeconds: number | undefined;
  checks: { name: string; status: string; message?: string }[];
}

/** What one schemathesis run did, read from its NDJSON event stream. */
export interface FuzzReport {
  /** Every request sent, in the order the scenarios finished. */
  interactions: RecordedInteraction[];
  /** Requests whose checks failed (a 5xx, a response over the time limit, a timeout…). */
  failures: RecordedInteraction[];
  /** Errors that stopped an operation from being tested (schema problems, crashes in the fuzzer). */
  errors: string[];
  seed: number | undefined;
}

interface RawInteraction {
  request?: { method?: string; uri?: string; body?: { $base64?: string } | string | null };
  response?: { status_code?: number; content?: { $base64?: string } | string | null; elapsed?: number } | null;
}
interface RawCheck {
  name: string;
  status: string;
  failure_info?: { failure?: { title?: string; message?: string } } | null;
}

function text(body: { $base64?: string } | string | null | undefined): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  return body.$base64 === undefined ? undefined : Buffer.from(body.$base64, 'base64').toString('utf8');
}

/** Parses schemathesis's `--report ndjson` file. */
export async function readNdjsonReport(path: string): Promise<FuzzReport> {
  const report: FuzzReport = { interactions: [], failures: [], errors: [], seed: undefined };
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    if (line.trim() === '') continue;
    const event = JSON.parse(line) as Record<string, Record<string, unknown>>;
    const [kind] = Object.keys(event);
    const value = kind === undefined ? undefined : event[kind];
    if (kind === undefined || value === undefined) continue;
    if (kind === 'Initialize') report.seed = value.seed as number | undefined;
    if (kind === 'NonFatalError' || kind === 'FatalError') {
      const error = value.value as { type?: string; message?: string } | undefined;
      report.errors.push(
        `${String(value.label ?? 'schemathesis')}: ${error?.type ?? 'error'}: ${error?.message ?? JSON.stringify(value).slice(0, 500)}`,
      );
    }
    if (kind !== 'ScenarioFinished') continue;
    const recorder = value.recorder as {
      label: string;
      interactions?: Record<string, RawInteraction>;
      checks?: Record<string, RawCheck[]>;
    };
    for (const [caseId, raw] of Object.entries(recorder.interactions ?? {})) {
      const checks = (recorder.checks?.[caseId] ?? []).map((check) => ({
        name: check.name,
        status: check.status,
        ...(check.failure_info?.failure
          ? {
              message: [check.failure_info.failure.title, check.failure_info.failure.message]
                .filter(Boolean)
                .join(': '),
            }
          : {}),
      }));
      const interaction: RecordedInteraction = {
        operation: recorder.label,
        method: raw.request?.method ?? '?',
        uri: raw.request?.uri ?? '?',
        requestBody: text(raw.request?.body),
        status: raw.response?.status_code,
        responseBody: text(raw.response?.content),
        elapsedSeconds: raw.response?.elapsed,
        checks,
      };
      report.interactions.push(interaction);
      if (interaction.status === undefined || checks.some((check) => check.status === 'failure'))
        report.failures.push(interaction);
    }
  }
  return report;
}

const clip = (value: string | undefined, max = 400): string =>
  value === undefined ? '' : value.length > max ? `${value.slice(0, max)}… (${value.length} chars)` : value;

/** One failing request as a reader wants it: the operation, what was sent, what came back, and why it failed. */
export function describeFailure(failure: RecordedInteraction, thrown: ReadonlyMap<string, string> = new Map()): string {
  const requestId = /"request_id"\s*:\s*"([^"]+)"/.exec(failure.responseBody ?? '')?.[1];
  const stack = requestId === undefined ? undefined : thrown.get(requestId);
  const failed = failure.checks
    .filter((check) => check.status === 'failure')
    .map((check) => `${check.name}${check.message ? ` (${check.message.replace(/\s+/g, ' ').trim()})` : ''}`);
  return [
    `${failure.operation}: ${failure.status === undefined ? 'no response (timeout or connection error)' : `HTTP ${failure.status}`}${failure.elapsedSeconds === undefined ? '' : ` after ${failure.elapsedSeconds.toFixed(2)} s`}${failed.length > 0 ? ` — ${failed.join('; ')}` : ''}`,
    `  request:  ${failure.method} ${failure.uri}${failure.requestBody ? ` ${clip(failure.requestBody)}` : ''}`,
    `  response: ${clip(failure.responseBody) || '(none)'}`,
    ...(stack === undefined ? [] : [`  thrown:   ${stack.split('\n').slice(0, 6).join('\n            ')}`]),
  ].join('\n');
}

export interface FuzzOptions {
  cli: string;
  /** Where the served OpenAPI document is. */
  schemaUrl: string;
  /** A scratch directory: schemathesis runs there and writes its report there. */
  workDir: string;
  headers?: Record<string, string>;
  configFile?: string;
  seed: number;
  maxExamples: number;
  maxResponseSeconds: number;
  requestTimeoutSeconds: number;
  phases: readonly string[];
  timeoutMs: number;
  /** schemathesis checks to run. @default ['not_a_server_error'] */
  checks?: readonly string[];
}

/**
 * One schemathesis run: runs `checks` (by default only that no answer is a
 * 5xx) and checks that no answer takes longer than `maxResponseSeconds` (a
 * request that gets no answer within `requestTimeoutSeconds` fails too), then
 * the NDJSON report parsed.
 */
export async function fuzz(options: FuzzOptions): Promise<{ result: CliResult; report: FuzzReport; seconds: number }> {
  const reports = join(options.workDir, 'reports');
  await mkdir(reports, { recursive: true });
  const started = Date.now();
  const result = await runCli(
    options.cli,
    [
      ...(options.configFile === undefined ? [] : ['--config-file', options.configFile]),
      'run',
      options.schemaUrl,
      ...Object.entries(options.headers ?? {}).flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
      '--checks',
      (options.checks ?? ['not_a_server_error']).join(','),
      '--max-response-time',
      String(options.maxResponseSeconds),
      '--request-timeout',
      String(options.requestTimeoutSeconds),
      '--phases',
      options.phases.join(','),
      '--max-examples',
      String(options.maxExamples),
      '--seed',
      String(options.seed),
      '--no-shrink',
      '--continue-on-failure',
      // One worker: a stable request order for a given seed; and CPython 3.11's ast module, which
      // hypothesis uses to describe filters, fails intermittently across schemathesis's threads.
      '--workers',
      '1',
      '--generation-database',
      'none',
      '--suppress-health-check',
      'all',
      '--report',
      'ndjson',
      '--report-dir',
      reports,
      '--no-color',
    ],
    // Its own directory: schemathesis must not pick up or leave files in the repository.
    { cwd: options.workDir, timeoutMs: options.timeoutMs },
  );
  const seconds = (Date.now() - started) / 1000;
  const ndjson = (await readdir(reports)).find((name) => name.endsWith('.ndjson'));
  if (result.timedOut || ndjson === undefined) {
    throw new Error(
      `schemathesis ${result.timedOut ? `did not finish within ${options.timeoutMs / 1000} s` : 'wrote no report'} (seed ${options.seed}):\n${result.output.slice(-6000)}`,
    );
  }
  return { result, report: await readNdjsonReport(join(reports, ndjson)), seconds };
}
