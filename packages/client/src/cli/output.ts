/**
 * Terminal output: colours only when stdout is a terminal and NO_COLOR is
 * unset (and `--no-color` was not given); a progress line on stderr only when
 * stderr is a terminal. Piped, the output is plain text, one record a line.
 */

export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

export interface Style {
  enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

const sgr = (open: number, close: number) => (enabled: boolean) => (text: string) =>
  enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text;
const codes = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
};

export function createStyle(enabled: boolean): Style {
  return {
    enabled,
    bold: codes.bold(enabled),
    dim: codes.dim(enabled),
    red: codes.red(enabled),
    green: codes.green(enabled),
    yellow: codes.yellow(enabled),
    cyan: codes.cyan(enabled),
  };
}

/** https://no-color.org: any non-empty NO_COLOR turns colours off. */
export function colourWanted(
  stream: OutputStream,
  env: Readonly<Record<string, string | undefined>>,
  noColorFlag: boolean,
): boolean {
  return stream.isTTY === true && !noColorFlag && (env.NO_COLOR === undefined || env.NO_COLOR === '');
}

export interface Progress {
  /** Shows `text` in place of the previous progress line; nothing when not on a terminal. */
  show(text: string): void;
  /** Removes the progress line (before printing anything else on stderr, and at the end). */
  clear(): void;
}

export function createProgress(stream: OutputStream): Progress {
  if (stream.isTTY !== true) return { show: () => undefined, clear: () => undefined };
  let shown = false;
  return {
    show(text) {
      stream.write(`\r\u001b[2K${text}`);
      shown = true;
    },
    clear() {
      if (shown) stream.write('\r\u001b[2K');
      shown = false;
    },
  };
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
const visibleLength = (text: string): number => text.replace(ANSI, '').length;

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>, style: Style): string {
  const widths = header.map((title, column) =>
    Math.max(visibleLength(title), ...rows.map((row) => visibleLength(row[column] ?? ''))),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) =>
        column === cells.length - 1 ? cell : cell + ' '.repeat((widths[column] ?? 0) - visibleLength(cell)),
      )
      .join('  ')
      .trimEnd();
  return [style.bold(line(header)), ...rows.map(line)].join('\n') + '\n';
}

/** A JSON value on one line, cut to `max` characters. */
export function brief(value: unknown, max = 80): string {
  const text = value === undefined ? 'undefined' : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `1.2s`, `340ms`, `3m 05s`, `2h 10m`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes}m ${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}
