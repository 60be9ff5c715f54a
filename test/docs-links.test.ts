/**
 * The repository stands alone: its contract lives in docs/, so
 *
 * - every relative link in README.md, docs/*.md and adr/*.md resolves — to a
 *   file or folder that exists and, when it names a `#fragment` of a Markdown
 *   file, to a heading that is there;
 * - docs/README.md, the index of the docs, links every page in docs/;
 * - nothing anywhere in the tree cites a document that is not in it: no
 *   section-numbered citation of an outside specification and no "seed NNN"
 *   source-document references. State the rule, or point at the doc that does.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Folders never scanned: dependencies, tools, VCS data, local state and build output. */
const SKIPPED_DIRS = new Set(['node_modules', '.tools', '.git', '.data', 'coverage', 'dist']);

/**
 * Citations of documents that are not in the repository. Built from escapes so
 * that this file does not match itself.
 */
const FORBIDDEN_CITATIONS: { pattern: RegExp; what: string }[] = [
  { pattern: /\bspec\s*\u00a7/i, what: 'a section-numbered spec citation' },
  { pattern: /\bSPEC\.md\b/, what: 'a reference to a spec file outside the repository' },
  { pattern: /\bseeds?\s+0\d\d\b/i, what: 'a seed-document citation' },
];

function markdownFiles(): string[] {
  const inDir = (dir: string): string[] =>
    readdirSync(join(root, dir))
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => join(dir, name));
  return ['README.md', ...inDir('docs'), ...inDir('adr')];
}

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) walk(join(dir, entry.name), out);
    } else if (entry.isFile()) {
      out.push(join(dir, entry.name));
    }
  }
  return out;
}

/** The text of a file, or null for binary files (they contain a NUL byte). */
function textOf(path: string): string | null {
  const bytes = readFileSync(path);
  return bytes.includes(0) ? null : bytes.toString('utf8');
}

/** Markdown with fenced code blocks and inline code spans blanked out (line numbers kept). */
function withoutCode(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line.replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
    })
    .join('\n');
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown file offers: one per heading, numbered like GitHub's when repeated. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of markdown.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

/** Inline links and images `[text](target "title")` and reference definitions `[id]: target`. */
function linksOf(file: string): Link[] {
  const text = withoutCode(readFileSync(join(root, file), 'utf8'));
  const links: Link[] = [];
  text.split('\n').forEach((line, i) => {
    for (const match of line.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ file, line: i + 1, target: match[1]!.replace(/^<|>$/g, '') });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(line);
    if (definition) links.push({ file, line: i + 1, target: definition[1]!.replace(/^<|>$/g, '') });
  });
  return links;
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

/** Why a relative link does not resolve, or null when it does. */
function brokenReason(link: Link): string | null {
  const hash = link.target.indexOf('#');
  const pathPart = decodeURIComponent(hash === -1 ? link.target : link.target.slice(0, hash));
  const fragment = hash === -1 ? null : decodeURIComponent(link.target.slice(hash + 1));
  const targetPath = pathPart === '' ? join(root, link.file) : resolve(dirname(join(root, link.file)), pathPart);
  if (relative(root, targetPath).startsWith('..')) return 'points outside the repository';
  let isDirectory: boolean;
  try {
    isDirectory = statSync(targetPath).isDirectory();
  } catch {
    return 'no such file or folder';
  }
  if (fragment === null || fragment === '' || isDirectory || !targetPath.endsWith('.md')) return null;
  return anchorsOf(readFileSync(targetPath, 'utf8')).has(fragment) ? null : `no heading with anchor #${fragment}`;
}

describe('documentation links and citations', () => {
  test('every relative link in README.md, docs/ and adr/ resolves to a file, folder or heading that exists', () => {
    const links = markdownFiles().flatMap(linksOf);
    expect(links.length).toBeGreaterThan(50);
    const broken = links
      .filter((link) => !isExternal(link.target))
      .flatMap((link) => {
        const reason = brokenReason(link);
        return reason === null ? [] : [`${link.file}:${link.line}: ${link.target} — ${reason}`];
      });
    expect(broken).toEqual([]);
  });

  test('the docs index links every page in docs/', () => {
    const indexed = new Set(
      linksOf('docs/README.md')
        .map((link) => link.target.split('#')[0]!)
        .filter((target) => target !== '' && !isExternal(target)),
    );
    const pages = readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md') && name !== 'README.md');
    expect(pages.filter((page) => !indexed.has(page))).toEqual([]);
  });

  test('nothing in the repository cites a specification or seed document that is not in it', () => {
    const hits: string[] = [];
    for (const path of walk(root)) {
      const text = textOf(path);
      if (text === null) continue;
      text.split('\n').forEach((line, i) => {
        for (const { pattern, what } of FORBIDDEN_CITATIONS) {
          if (pattern.test(line)) hits.push(`${relative(root, path)}:${i + 1}: ${what}: ${line.trim().slice(0, 120)}`);
        }
      });
    }
    expect(hits).toEqual([]);
  });
});
