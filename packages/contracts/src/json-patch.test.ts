import { describe, expect, test } from 'vitest';
import { canonicalJson } from './canonical-json';
import { diffJson, escapePointerToken, JsonPatchOperation } from './json-patch';

/**
 * A minimal RFC 6902 applier (add, remove, replace) written from the RFC, to
 * check that a diff really turns `from` into `to`. It ignores members an
 * operation does not define (`old_value`), as the RFC requires.
 */
function applyPatch(document: unknown, patch: readonly JsonPatchOperation[]): unknown {
  let root = structuredClone(document);
  for (const operation of patch) {
    if (operation.path === '') {
      if (operation.op === 'remove') throw new Error('cannot remove the root');
      root = structuredClone(operation.value);
      continue;
    }
    const tokens = operation.path
      .slice(1)
      .split('/')
      .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = tokens.pop()!;
    let parent: any = root;
    for (const token of tokens) {
      parent = Array.isArray(parent) ? parent[Number(token)] : parent[token];
      if (parent === null || typeof parent !== 'object') throw new Error(`no container at ${operation.path}`);
    }
    if (Array.isArray(parent)) {
      const index = Number(last);
      if (!Number.isInteger(index) || index < 0 || index > parent.length - (operation.op === 'add' ? 0 : 1))
        throw new Error(`bad index in ${operation.path}`);
      if (operation.op === 'add') parent.splice(index, 0, structuredClone(operation.value));
      else if (operation.op === 'remove') parent.splice(index, 1);
      else parent[index] = structuredClone(operation.value);
    } else {
      if (operation.op !== 'add' && !Object.hasOwn(parent, last)) throw new Error(`nothing at ${operation.path}`);
      if (operation.op === 'remove') delete parent[last];
      else parent[last] = structuredClone(operation.value);
    }
  }
  return root;
}

function expectRoundTrip(from: unknown, to: unknown, options?: { maxLcsCells?: number }): JsonPatchOperation[] {
  const patch = diffJson(from, to, options);
  expect(canonicalJson(applyPatch(from, patch))).toBe(canonicalJson(to));
  for (const operation of patch) expect(JsonPatchOperation.safeParse(operation).success).toBe(true);
  return patch;
}

/** A small deterministic generator (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomJson(next: () => number, depth: number): unknown {
  const pick = Math.floor(next() * (depth > 3 ? 4 : 6));
  const keys = ['a', 'b', 'c', 'd/e', 'f~g', ''];
  switch (pick) {
    case 0:
      return null;
    case 1:
      return Math.floor(next() * 4);
    case 2:
      return ['x', 'y', 'z'][Math.floor(next() * 3)];
    case 3:
      return next() < 0.5;
    case 4:
      return Array.from({ length: Math.floor(next() * 5) }, () => randomJson(next, depth + 1));
    default:
      return Object.fromEntries(keys.filter(() => next() < 0.4).map((key) => [key, randomJson(next, depth + 1)]));
  }
}

describe('JSON diff as RFC 6902 JSON Patch', () => {
  test('equal documents give an empty patch, whatever their key order', () => {
    expect(diffJson({ a: 1, b: [1, { c: 2, d: 3 }] }, { b: [1, { d: 3, c: 2 }], a: 1 })).toEqual([]);
    expect(diffJson(null, null)).toEqual([]);
  });

  test('a changed field is one replace naming its path with the old and new values', () => {
    const from = { name: 'sync', tasks: [{ type: 'http', config: { url: 'https://a.example', timeout: '30s' } }] };
    const to = { name: 'sync', tasks: [{ type: 'http', config: { url: 'https://b.example', timeout: '30s' } }] };
    expect(expectRoundTrip(from, to)).toEqual([
      { op: 'replace', path: '/tasks/0/config/url', value: 'https://b.example', old_value: 'https://a.example' },
    ]);
  });

  test('added and removed members are add and remove operations, in key order', () => {
    expect(expectRoundTrip({ a: 1, b: 2 }, { b: 2, c: { d: [1] } })).toEqual([
      { op: 'remove', path: '/a', old_value: 1 },
      { op: 'add', path: '/c', value: { d: [1] } },
    ]);
  });

  test('a member holding undefined counts as absent, as in JSON', () => {
    expect(diffJson({ a: 1, b: undefined }, { a: 1 })).toEqual([]);
    expect(diffJson({ a: 1 }, { a: 1, b: undefined })).toEqual([]);
  });

  test('keys with / and ~ are escaped as RFC 6901 says', () => {
    expect(escapePointerToken('a/b~c')).toBe('a~1b~0c');
    expect(expectRoundTrip({ headers: { 'x/y': '1', 'a~b': '2' } }, { headers: { 'x/y': '2', 'a~b': '2' } })).toEqual([
      { op: 'replace', path: '/headers/x~1y', value: '2', old_value: '1' },
    ]);
  });

  test('a task inserted in the middle is one add, not a change of every later task', () => {
    const tasks = [
      { type: 'noop' },
      { type: 'delay', config: { duration: '1s' } },
      { type: 'http', config: { url: 'https://x.example' } },
    ];
    const inserted = { type: 'emit_event', config: { event_type: 'x.done' } };
    expect(expectRoundTrip({ tasks }, { tasks: [tasks[0], inserted, tasks[1], tasks[2]] })).toEqual([
      { op: 'add', path: '/tasks/1', value: inserted },
    ]);
  });

  test('a task removed from the middle is one remove carrying the removed task', () => {
    const tasks = [{ type: 'noop' }, { type: 'delay', config: { duration: '1s' } }, { type: 'noop', name: 'last' }];
    expect(expectRoundTrip({ tasks }, { tasks: [tasks[0], tasks[2]] })).toEqual([
      { op: 'remove', path: '/tasks/1', old_value: tasks[1] },
    ]);
  });

  test('removals, changes and additions in one array use the indexes the earlier operations leave', () => {
    const from = [1, 2, 3, 4, 5, 6];
    const to = [0, 2, 'three', 5, 6, 7, 8];
    const patch = expectRoundTrip(from, to);
    expect(patch).toEqual([
      { op: 'replace', path: '/0', value: 0, old_value: 1 },
      { op: 'replace', path: '/2', value: 'three', old_value: 3 },
      { op: 'remove', path: '/3', old_value: 4 },
      { op: 'add', path: '/5', value: 7 },
      { op: 'add', path: '/6', value: 8 },
    ]);
  });

  test('a value that changes kind (object, array, scalar) is replaced whole', () => {
    expect(expectRoundTrip({ body: { a: 1 } }, { body: [1] })).toEqual([
      { op: 'replace', path: '/body', value: [1], old_value: { a: 1 } },
    ]);
    expect(expectRoundTrip({ body: null }, { body: {} })).toEqual([
      { op: 'replace', path: '/body', value: {}, old_value: null },
    ]);
    expect(expectRoundTrip([1], { a: 1 })).toEqual([{ op: 'replace', path: '', value: { a: 1 }, old_value: [1] }]);
  });

  test('arrays too large for the alignment table are compared position by position and still round-trip', () => {
    const from = Array.from({ length: 50 }, (_, i) => i);
    const to = [-1, ...from.slice(0, 25), ...from.slice(26)];
    const aligned = expectRoundTrip(from, to);
    expect(aligned).toEqual([
      { op: 'add', path: '/0', value: -1 },
      { op: 'remove', path: '/26', old_value: 25 },
    ]);
    const positional = expectRoundTrip(from, to, { maxLcsCells: 10 });
    expect(positional.length).toBeGreaterThan(aligned.length);
  });

  test('nesting far deeper than the call stack allows is diffed without overflowing', () => {
    let from: unknown = 'old';
    let to: unknown = 'new';
    for (let i = 0; i < 20_000; i++) {
      from = i % 2 === 0 ? [from] : { k: from };
      to = i % 2 === 0 ? [to] : { k: to };
    }
    const patch = diffJson(from, to);
    expect(patch).toHaveLength(1);
    expect(patch[0]).toMatchObject({ op: 'replace', value: 'new', old_value: 'old' });
    expect(patch[0]!.path.split('/')).toHaveLength(20_001);
  });

  test('for many generated pairs of documents, applying the diff to the first gives the second', () => {
    const next = random(20261124);
    for (let n = 0; n < 2_000; n++) {
      const from = randomJson(next, 0);
      const to = next() < 0.3 ? structuredClone(from) : randomJson(next, 0);
      expectRoundTrip(from, to);
      if (canonicalJson(from) === canonicalJson(to)) expect(diffJson(from, to)).toEqual([]);
    }
  });
});
