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

/**
 * Characters a terminal may act on instead of showing: C0 controls (ESC
 * starts colour, cursor, title and clipboard sequences; CR and BS overwrite
 * what was printed), DEL, C1 controls (U+009B is a one-character CSI) and the
 * bidirectional overrides and isolates that reorder a line.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const escaped = (char: string): string => {
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
};

/** `text` with every character a terminal could act on shown as an escape (`\x1b`, `\u202e`), for human output. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escaped);
}

/**
 * A copy of an API answer with every string (and object key) made
 * terminalSafe: for the human formats, where names, sources, error messages
 * and details that a sender or a definition's author chose are printed.
 */
export function forTerminal<T>(value: T): T {
  if (typeof value === 'string') return terminalSafe(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => forTerminal(item)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [terminalSafe(key), forTerminal(item as unknown)]),
    ) as T;
  }
  return value;
}

/**
 * JSON with the characters JSON.stringify leaves raw that a terminal acts on
 * (C1 controls, bidirectional controls) written as `\uXXXX` escapes: the same
 * value to a parser, inert on a terminal. (It escapes C0 controls itself.)
 */
export function terminalSafeJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2).replace(UNSAFE_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

/**
 * YAML from the `yaml` package escapes C0 controls but leaves C1 and
 * bidirectional controls raw: they are written as `\uXXXX` text. (A value
 * holding one reads back differently; such characters have no use in a
 * definition.)
 */
export function terminalSafeYaml(text: string): string {
  return text.replace(UNSAFE_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
