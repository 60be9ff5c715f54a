/**
 * What the benchmarks read about processes and their own command line: /proc figures (Linux) and
 * repeatable `--flag KEY=VALUE` arguments. One place, so every benchmark reads them the same way.
 */
import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: the unit of the CPU times in /proc/<pid>/stat. */
export const CLOCK_TICKS = 100;

/** One process's /proc/<pid>/stat: its parent, its own CPU and its reaped children's, in ticks. */
export interface ProcStat {
  ppid: number;
  /** utime + stime */
  ownTicks: number;
  /** cutime + cstime: children that exited and were reaped */
  childTicks: number;
}

/** Undefined when the process is gone. */
export function procStat(pid: number | string): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name, which is in parentheses and may contain spaces: state is the
  // first (field 3 of proc(5)), so utime (14), stime (15), cutime (16), cstime (17) are 11–14 here.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    ppid: Number(fields[1]),
    ownTicks: Number(fields[11]) + Number(fields[12]),
    childTicks: Number(fields[13]) + Number(fields[14]),
  };
}

/** VmRSS and VmHWM (peak) in MB, from /proc/<pid>/status; NaN when the process is gone. */
export function memoryMb(pid: number | undefined): { rss: number; hwm: number } {
  let status = '';
  try {
    if (pid !== undefined) status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    // gone: NaN below
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** Every `--<name> KEY=VALUE` on the command line, in order; refuses a value without `KEY=`. */
export function keyValueArgs(name: string, argv: readonly string[] = process.argv): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  argv.forEach((arg, index) => {
    if (arg !== `--${name}`) return;
    const pair = argv[index + 1] ?? '';
    const eq = pair.indexOf('=');
    if (eq < 1) throw new Error(`--${name} needs KEY=VALUE, got ${pair}`);
    pairs.push([pair.slice(0, eq), pair.slice(eq + 1)]);
  });
  return pairs;
}
