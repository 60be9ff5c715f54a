/**
 * The API and worker entry points as child processes: how they are started
 * (the production build's compiled files, or the sources through tsx), how
 * their output is kept, and how they are stopped. The one place the tests,
 * the benchmarks and the scripts spawn the stack's processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** A process of the stack: `npm run start:api` or `npm run start:worker`. */
export type EntryPoint = 'api' | 'worker';

/**
 * Node's arguments to start an entry point: with `build` (a directory that
 * `npm run build` / `buildProduction` wrote) its compiled `<entry>/main.js`,
 * as production runs it; without one the TypeScript sources through tsx.
 * Paths of the sources are relative to the project root (the child's cwd).
 */
export function entryPointArgs(entry: EntryPoint, build?: string): string[] {
  return build === undefined || build === ''
    ? ['--import', 'tsx', join('apps', entry, 'src', 'main.ts')]
    : ['--enable-source-maps', join(build, entry, 'main.js')];
}

export interface StackProcess {
  name: string;
  child: ChildProcess;
  /** What the process wrote to stdout and stderr, interleaved (the last `keepOutputChars` of it). */
  output: () => string;
  /** Its exit code, or the signal that ended it, once it has exited and its output has been read to the end. */
  exited: Promise<number | string | null>;
  /** True until the process has exited. */
  alive: () => boolean;
}

export interface SpawnStackProcessOptions {
  /** Names the process in errors ("the worker exited early …"). */
  name: string;
  /** Node's arguments, e.g. flags followed by {@link entryPointArgs}. The executable is this Node. */
  args: readonly string[];
  /** The child's whole environment: nothing of this process's is passed on unless it is listed here. */
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Keep only the last this many characters of output (long-running benchmarks). @default unbounded */
  keepOutputChars?: number;
  /** `inherit` writes the child's output to this process's stdout and stderr instead of keeping it. @default 'pipe' */
  stdio?: 'pipe' | 'inherit';
}

/**
 * Starts `process.execPath` with the given arguments. The child is the Node
 * process itself (no npm or npx wrapper), so its pid is the one whose CPU and
 * memory a benchmark reads and the one a signal reaches.
 */
export function spawnStackProcess(options: SpawnStackProcessOptions): StackProcess {
  const stdio = options.stdio ?? 'pipe';
  const child = spawn(process.execPath, [...options.args], {
    cwd: options.cwd ?? process.cwd(),
    env: options.env,
    stdio: ['ignore', stdio, stdio],
  });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output += chunk.toString('utf8');
    if (options.keepOutputChars !== undefined && output.length > options.keepOutputChars)
      output = output.slice(-options.keepOutputChars);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // 'close', not 'exit': the streams are drained by then, so the output is complete.
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? signal)),
  );
  return {
    name: options.name,
    child,
    output: () => output,
    exited,
    alive: () => hasNotExited(child),
  };
}

function hasNotExited(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Resolves once the process's output satisfies `ready` (e.g. it contains
 * "worker started"); rejects with its output if it exits first.
 */
export function outputReady(proc: StackProcess, ready: (output: string) => boolean): Promise<void> {
  const promise = new Promise<void>((resolve, reject) => {
    if (ready(proc.output())) return resolve();
    const check = (): void => {
      if (ready(proc.output())) {
        stopListening();
        resolve();
      }
    };
    const stopListening = (): void => {
      proc.child.stdout?.off('data', check);
      proc.child.stderr?.off('data', check);
    };
    // After `keep` above, which was attached first: the chunk is already in the output.
    proc.child.stdout?.on('data', check);
    proc.child.stderr?.on('data', check);
    void proc.exited.then((code) => {
      stopListening();
      reject(new Error(`the ${proc.name} exited early with ${code}:\n${proc.output()}`));
    });
  });
  // A caller that never awaits it (it only wanted the process) gets no unhandled rejection.
  promise.catch(() => undefined);
  return promise;
}

/** SIGKILL, like a crashed host; resolves once the process has exited. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (!hasNotExited(child)) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await gone;
}

/**
 * SIGTERM, then SIGKILL if it has not ended within `graceMs`; resolves with
 * its exit code (or signal) once it has exited.
 */
export async function stopGracefully(child: ChildProcess, graceMs = 20_000): Promise<number | string | null> {
  if (!hasNotExited(child)) return child.exitCode ?? child.signalCode;
  const gone = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  const code = await gone;
  clearTimeout(timer);
  return code;
}
