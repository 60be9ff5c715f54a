/**
 * Definition files: YAML (`.yaml`, `.yml`; several documents per file with
 * `---`, each one definition or a list of them) and JSON (`.json`; one
 * definition or an array). Every definition is validated with the same zod
 * model the API uses, and its expressions compiled as the API compiles them
 * (`definitionExpressionIssues`), so a bad file is refused before anything is sent, with
 * the file, the line and column where YAML or JSON tells them, the field
 * path and the message.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, relative, resolve } from 'node:path';
import { ActivityDefinition, type ActivityDefinitionInput } from '@activity-core/contracts';
import { definitionExpressionIssues } from '@activity-core/filters';
import { isMap, isScalar, isSeq, LineCounter, parseAllDocuments, parseDocument, type Document } from 'yaml';

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

export interface SourcePosition {
  line: number;
  column: number;
}

/** One definition found in a file, valid against the definition schema. */
export interface LoadedDefinition {
  name: string;
  /** The file as the user named it (relative to the working directory when inside it). */
  file: string;
  /** Where the definition starts in the file. */
  position: SourcePosition | undefined;
  /** The definition as written: what `apply` sends. */
  source: ActivityDefinitionInput;
  /** As the server stores it: defaults filled in, derived fields set. */
  definition: ActivityDefinition;
  /** Where a field of this definition is written (the nearest enclosing node when the field is absent; its key with `key`). */
  locate(path: ReadonlyArray<string | number>, options?: { key?: boolean }): SourcePosition | undefined;
}

export interface DefinitionIssue {
  file: string;
  position?: SourcePosition | undefined;
  /** Field path inside the definition (`tasks[0].config.url`); empty for a problem with the file itself. */
  path: string;
  message: string;
}

export interface LoadResult {
  definitions: LoadedDefinition[];
  issues: DefinitionIssue[];
  /** Every file read, in order. */
  files: string[];
}

/** `['tasks', 0, 'config']` → `tasks[0].config`, the form the API's problems use. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>((out, segment) => {
    if (typeof segment === 'number') return `${out}[${segment}]`;
    const text = String(segment);
    return out === '' ? text : `${out}.${text}`;
  }, '');
}

/** `tasks[0].config.url` → `['tasks', 0, 'config', 'url']` (for server-side issues). */
export function parsePath(path: string): Array<string | number> {
  const out: Array<string | number> = [];
  for (const match of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (match[2] !== undefined) out.push(Number(match[2]));
    else if (match[1] !== undefined) out.push(match[1]);
  }
  return out;
}

/** `file:line:column: path: message`, the shape editors and CI annotate. */
export function formatIssue(issue: DefinitionIssue): string {
  const where =
    issue.position === undefined ? issue.file : `${issue.file}:${issue.position.line}:${issue.position.column}`;
  return issue.path === '' ? `${where}: ${issue.message}` : `${where}: ${issue.path}: ${issue.message}`;
}

/** Files to read for `-f` arguments: files as given, directories searched recursively for .yaml/.yml/.json (hidden entries skipped), sorted. */
export async function expandInputs(
  inputs: readonly string[],
  cwd: string,
): Promise<{ files: string[]; issues: DefinitionIssue[] }> {
  const files: string[] = [];
  const issues: DefinitionIssue[] = [];
  const display = (absolute: string): string => {
    const rel = relative(cwd, absolute);
    return rel === '' || rel.startsWith('..') ? absolute : rel;
  };
  const walk = async (directory: string): Promise<string[]> => {
    const entries = await readdir(directory, { withFileTypes: true });
    const found: string[] = [];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (entry.name.startsWith('.')) continue;
      const path = join(directory, entry.name);
      if (entry.isDirectory()) found.push(...(await walk(path)));
      else if (entry.isFile() && EXTENSIONS.has(extname(entry.name).toLowerCase())) found.push(path);
    }
    return found;
  };
  for (const input of inputs) {
    const absolute = resolve(cwd, input);
    let info;
    try {
      info = await stat(absolute);
    } catch {
      issues.push({ file: input, path: '', message: 'no such file or directory' });
      continue;
    }
    if (info.isDirectory()) {
      const inside = await walk(absolute);
      if (inside.length === 0)
        issues.push({ file: input, path: '', message: 'the directory holds no .yaml, .yml or .json files' });
      files.push(...inside.map(display));
    } else {
      files.push(display(absolute));
    }
  }
  return { files: [...new Set(files)], issues };
}

type Locator = (path: ReadonlyArray<string | number>, options?: { key?: boolean }) => SourcePosition | undefined;

/**
 * A function from a path inside a YAML document to the position of the
 * nearest node that exists; with `key`, of the last segment's key rather
 * than its value (where an unknown key is written).
 */
function yamlLocator(document: Document, lines: LineCounter, prefix: ReadonlyArray<string | number>): Locator {
  return (path, options) => {
    const full = [...prefix, ...path];
    const last = full[full.length - 1];
    if (options?.key === true && typeof last === 'string') {
      const parent = full.length === 1 ? document.contents : document.getIn(full.slice(0, -1), true);
      if (isMap(parent)) {
        const pair = parent.items.find((item) => isScalar(item.key) && item.key.value === last);
        const range = isScalar(pair?.key) ? pair.key.range : undefined;
        if (range !== undefined && range !== null) {
          const { line, col } = lines.linePos(range[0]);
          return { line, column: col };
        }
      }
    }
    for (let length = full.length; length >= 0; length--) {
      const node = length === 0 ? document.contents : document.getIn(full.slice(0, length), true);
      const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
      if (range !== undefined) {
        const { line, col } = lines.linePos(range[0]);
        return { line, column: col };
      }
    }
    return undefined;
  };
}

interface RawDefinition {
  value: unknown;
  /** `[2]` when the definition is item 2 of a list, `''` otherwise; prefixes issue paths. */
  label: string;
  locate: Locator;
}

function parseYamlFile(file: string, text: string, issues: DefinitionIssue[]): RawDefinition[] {
  const lines = new LineCounter();
  const documents = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false });
  const found: RawDefinition[] = [];
  for (const document of Array.isArray(documents) ? documents : [documents]) {
    if (document.errors.length > 0) {
      for (const error of document.errors) {
        const { line, col } = lines.linePos(error.pos[0]);
        issues.push({
          file,
          position: { line, column: col },
          path: '',
          message: error.message.split('\n')[0] ?? error.message,
        });
      }
      continue;
    }
    const value: unknown = document.toJS();
    if (value === null || value === undefined) continue; // an empty document, e.g. after a trailing ---
    const where = yamlLocator(document, lines, []);
    if (isSeq(document.contents)) {
      (value as unknown[]).forEach((item, index) =>
        found.push({ value: item, label: `[${index}]`, locate: yamlLocator(document, lines, [index]) }),
      );
    } else if (isMap(document.contents)) {
      found.push({ value, label: '', locate: where });
    } else {
      issues.push({
        file,
        position: where([]),
        path: '',
        message: 'expected a definition (a mapping) or a list of definitions',
      });
    }
  }
  return found;
}

function parseJsonFile(file: string, text: string, issues: DefinitionIssue[]): RawDefinition[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    issues.push({ file, path: '', message: `not valid JSON: ${(error as Error).message}` });
    return [];
  }
  // JSON is YAML 1.2 too: its parser gives positions. When it cannot (e.g. tab indentation), issues have no line.
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines });
  const locator = (prefix: ReadonlyArray<string | number>): Locator =>
    document.errors.length > 0 ? () => undefined : yamlLocator(document, lines, prefix);
  if (Array.isArray(value))
    return value.map((item, index) => ({ value: item, label: `[${index}]`, locate: locator([index]) }));
  if (typeof value === 'object' && value !== null) return [{ value, label: '', locate: locator([]) }];
  issues.push({ file, path: '', message: 'expected a definition (an object) or an array of definitions' });
  return [];
}

/** Reads, parses and validates every definition under `inputs`; names must be unique across all of them. */
export async function loadDefinitions(inputs: readonly string[], cwd: string): Promise<LoadResult> {
  const { files, issues } = await expandInputs(inputs, cwd);
  const definitions: LoadedDefinition[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(resolve(cwd, file), 'utf8');
    } catch (error) {
      issues.push({ file, path: '', message: `cannot be read: ${(error as Error).message}` });
      continue;
    }
    const raws =
      extname(file).toLowerCase() === '.json' ? parseJsonFile(file, text, issues) : parseYamlFile(file, text, issues);
    for (const raw of raws) {
      const position = raw.locate([]);
      if (typeof raw.value !== 'object' || raw.value === null || Array.isArray(raw.value)) {
        issues.push({
          file,
          position,
          path: raw.label,
          message: 'expected a definition (a mapping of name, triggers, tasks, …)',
        });
        continue;
      }
      const parsed = ActivityDefinition.safeParse(raw.value);
      if (!parsed.success) {
        for (const issue of parsed.error.issues) {
          const path = issue.path.filter((segment): segment is string | number => typeof segment !== 'symbol');
          // An unknown key is reported on its object; point at the key itself.
          const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
          issues.push({
            file,
            position: keys.length > 0 ? raw.locate([...path, keys[0]!], { key: true }) : raw.locate(path),
            path: formatPath([...(raw.label ? [raw.label] : []), ...path]),
            message: issue.message,
          });
        }
        continue;
      }
      // The server compiles every expression of a definition it stores; so does apply, before it sends.
      const expressions = definitionExpressionIssues(parsed.data);
      if (expressions.length > 0) {
        for (const issue of expressions) {
          const path = parsePath(issue.path);
          issues.push({
            file,
            position: raw.locate(path),
            path: formatPath([...(raw.label ? [raw.label] : []), ...path]),
            message: issue.message,
          });
        }
        continue;
      }
      definitions.push({
        name: parsed.data.name,
        file,
        position,
        source: raw.value as ActivityDefinitionInput,
        definition: parsed.data,
        locate: raw.locate,
      });
    }
  }
  const seen = new Map<string, LoadedDefinition>();
  for (const definition of definitions) {
    const first = seen.get(definition.name);
    if (first === undefined) {
      seen.set(definition.name, definition);
      continue;
    }
    const at = first.position === undefined ? first.file : `${first.file}:${first.position.line}`;
    issues.push({
      file: definition.file,
      position: definition.locate(['name']),
      path: 'name',
      message: `"${definition.name}" is defined twice; first at ${at} (names are the key: one definition per name)`,
    });
  }
  return { definitions, issues, files };
}
