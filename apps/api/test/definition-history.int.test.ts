import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from '../../../test/harness';

/**
 * Definition history on the real API and Postgres: every version of an
 * activity with the credential that wrote it and when, one version in full,
 * and an RFC 6902 diff between two versions — deleted activities included.
 */

const ALICE = 'history-alice-key-0123456789abcdefghij';
const BOB = 'history-bob-key-0123456789abcdefghijklm';
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 12);
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ worker: false, env: { API_KEYS: `${ALICE},${BOB}` } });
});
afterAll(async () => {
  await stack?.close();
});

const definition = (name: string, url = 'https://erp.example/orders') => ({
  name,
  triggers: [{ type: 'event', event_type: 'order.paid' }],
  tasks: [{ type: 'http', config: { url } }],
});

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, key = ALICE, payload?: object) {
  return await stack.api.server.inject({
    method,
    url,
    headers: bearer(key),
    ...(payload === undefined ? {} : { payload }),
  });
}

async function ok(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, key = ALICE, payload?: object): Promise<any> {
  const response = await call(method, url, key, payload);
  expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
  return response.body === '' ? undefined : response.json();
}

function expectProblem(
  response: { statusCode: number; headers: Record<string, unknown>; json(): any },
  status: number,
) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toContain('application/problem+json');
  return response.json();
}

/** Created by ALICE, its url changed by BOB, disabled by ALICE: versions 1, 2 and 3. */
async function activityWithThreeVersions(name: string): Promise<string> {
  const created = await ok('POST', '/v1/activities', ALICE, definition(name));
  await ok('PUT', `/v1/activities/${created.id}`, BOB, definition(name, 'https://erp.example/v2/orders'));
  await ok('POST', `/v1/activities/${created.id}/disable`, ALICE);
  return created.id as string;
}

describe('definition history', () => {
  test('lists every version newest first with the credential that wrote it and when', async () => {
    const id = await activityWithThreeVersions('history-listed');
    // An identical PUT and a repeated disable change nothing, so they write no version.
    await ok('PUT', `/v1/activities/${id}`, BOB, {
      ...definition('history-listed', 'https://erp.example/v2/orders'),
      enabled: false,
    });
    await ok('POST', `/v1/activities/${id}/disable`, BOB);

    const page = await ok('GET', `/v1/activities/${id}/versions`);
    expect(page).toMatchObject({
      activity_id: id,
      current_version: 3,
      deleted_at: null,
      deleted_by: null,
      next_cursor: null,
    });
    expect(page.items.map((item: any) => [item.version, item.changed_by, item.enabled])).toEqual([
      [3, `api_key:${idOf(ALICE)}`, false],
      [2, `api_key:${idOf(BOB)}`, true],
      [1, `api_key:${idOf(ALICE)}`, true],
    ]);
    const times = page.items.map((item: any) => Date.parse(item.changed_at));
    for (const time of times) expect(Number.isNaN(time)).toBe(false);
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    // The list is a summary; the definition of each version is one request away.
    expect(page.items[0].definition).toBeUndefined();
  });

  test('pages through versions with a cursor, newest first, none skipped or repeated', async () => {
    const id = await activityWithThreeVersions('history-paged');
    const first = await ok('GET', `/v1/activities/${id}/versions?limit=2`);
    expect(first.items.map((item: any) => item.version)).toEqual([3, 2]);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await ok('GET', `/v1/activities/${id}/versions?limit=2&cursor=${first.next_cursor}`);
    expect(second.items.map((item: any) => item.version)).toEqual([1]);
    expect(second.next_cursor).toBeNull();
  });

  test('one version carries its definition as it was stored, who wrote it and when', async () => {
    const id = await activityWithThreeVersions('history-one');
    const version = await ok('GET', `/v1/activities/${id}/versions/2`);
    expect(version).toMatchObject({
      activity_id: id,
      version: 2,
      name: 'history-one',
      enabled: true,
      changed_by: `api_key:${idOf(BOB)}`,
    });
    expect(version.definition.tasks[0].config.url).toBe('https://erp.example/v2/orders');
    // Defaults were filled in when it was stored.
    expect(version.definition.tasks[0].config.method).toBe('POST');
    const listed = await ok('GET', `/v1/activities/${id}/versions`);
    expect(version.changed_at).toBe(listed.items.find((item: any) => item.version === 2).changed_at);
  });

  test('the diff between two versions is an RFC 6902 patch with the old and new values', async () => {
    const id = await activityWithThreeVersions('history-diffed');
    const diff = await ok('GET', `/v1/activities/${id}/diff?from=1&to=2`);
    expect(diff.activity_id).toBe(id);
    expect(diff.from).toMatchObject({ version: 1, changed_by: `api_key:${idOf(ALICE)}` });
    expect(diff.to).toMatchObject({ version: 2, changed_by: `api_key:${idOf(BOB)}` });
    expect(diff.patch).toEqual([
      {
        op: 'replace',
        path: '/tasks/0/config/url',
        value: 'https://erp.example/v2/orders',
        old_value: 'https://erp.example/orders',
      },
    ]);

    // Without from and to: the last change (version 2 to 3, the disable).
    const last = await ok('GET', `/v1/activities/${id}/diff`);
    expect([last.from.version, last.to.version]).toEqual([2, 3]);
    expect(last.patch).toEqual([{ op: 'replace', path: '/enabled', value: false, old_value: true }]);

    // Backwards and across several versions; a version against itself is empty.
    const back = await ok('GET', `/v1/activities/${id}/diff?from=3&to=1`);
    expect(back.patch).toEqual([
      { op: 'replace', path: '/enabled', value: true, old_value: false },
      {
        op: 'replace',
        path: '/tasks/0/config/url',
        value: 'https://erp.example/orders',
        old_value: 'https://erp.example/v2/orders',
      },
    ]);
    expect((await ok('GET', `/v1/activities/${id}/diff?from=2&to=2`)).patch).toEqual([]);
  });

  test('a task added, a field added and a field removed show as add and remove operations', async () => {
    const created = await ok('POST', '/v1/activities', ALICE, {
      ...definition('history-shapes'),
      description: 'first',
    });
    await ok('PUT', `/v1/activities/${created.id}`, BOB, {
      name: 'history-shapes',
      triggers: [{ type: 'event', event_type: 'order.paid', source: 'shop' }],
      tasks: [{ type: 'noop' }, { type: 'http', config: { url: 'https://erp.example/orders' } }],
    });
    const diff = await ok('GET', `/v1/activities/${created.id}/diff`);
    expect(diff.patch).toEqual([
      { op: 'remove', path: '/description', old_value: 'first' },
      { op: 'add', path: '/tasks/0', value: { type: 'noop', config: {}, continue_on_failure: false } },
      { op: 'add', path: '/triggers/0/source', value: 'shop' },
    ]);
  });

  test('an unknown version or activity is a 404 problem', async () => {
    const id = await activityWithThreeVersions('history-missing');
    const unknownVersion = expectProblem(await call('GET', `/v1/activities/${id}/versions/4`), 404);
    expect(unknownVersion.type).toBe('urn:activity-core:problem:not-found');
    expect(unknownVersion.detail).toContain('version 4');
    expect(expectProblem(await call('GET', `/v1/activities/${id}/diff?from=1&to=9`), 404).detail).toContain('9 (to)');
    expect(expectProblem(await call('GET', `/v1/activities/${id}/diff?from=7`), 404).detail).toContain('7 (from)');
    const nobody = '0b6f2b5e-1d5a-4a56-9b0a-6f7d2f0e9c11';
    for (const url of [
      `/v1/activities/${nobody}/versions`,
      `/v1/activities/${nobody}/versions/1`,
      `/v1/activities/${nobody}/diff?from=1&to=2`,
    ]) {
      expect(expectProblem(await call('GET', url), 404).detail, url).toContain(`activity ${nobody} does not exist`);
    }
  });

  test('a deleted activity keeps its history readable, with who deleted it and when', async () => {
    const id = await activityWithThreeVersions('history-deleted');
    expect((await call('DELETE', `/v1/activities/${id}`, BOB)).statusCode).toBe(204);
    expectProblem(await call('GET', `/v1/activities/${id}`), 404);

    const page = await ok('GET', `/v1/activities/${id}/versions`);
    expect(page).toMatchObject({ current_version: 3, deleted_by: `api_key:${idOf(BOB)}` });
    expect(Date.parse(page.deleted_at)).toBeGreaterThanOrEqual(Date.parse(page.items[0].changed_at));
    expect(page.items.map((item: any) => item.version)).toEqual([3, 2, 1]);
    expect((await ok('GET', `/v1/activities/${id}/versions/1`)).definition.tasks[0].config.url).toBe(
      'https://erp.example/orders',
    );
    expect((await ok('GET', `/v1/activities/${id}/diff?from=1&to=2`)).patch).toHaveLength(1);
  });

  test('versions written before changes were attributed report changed_by null', async () => {
    const id = await activityWithThreeVersions('history-legacy');
    // What migration 0007 leaves on rows it finds: no credential.
    await stack.sql.query(
      'UPDATE activity_definition_versions SET changed_by = NULL WHERE activity_id = $1 AND version = 1',
      [id],
    );
    const page = await ok('GET', `/v1/activities/${id}/versions`);
    expect(page.items.map((item: any) => item.changed_by)).toEqual([
      `api_key:${idOf(ALICE)}`,
      `api_key:${idOf(BOB)}`,
      null,
    ]);
    expect((await ok('GET', `/v1/activities/${id}/versions/1`)).changed_by).toBeNull();
  });
});

describe('hostile input to the history routes', () => {
  test('a version that is not a whole number from 1 to 2147483647 is a 400 naming params.version', async () => {
    const id = await activityWithThreeVersions('history-bad-version');
    for (const version of ['0', '-1', '01', '1e3', '0x10', '1.0', 'abc', '2147483648', '99999999999999999999']) {
      const body = expectProblem(
        await call('GET', `/v1/activities/${id}/versions/${encodeURIComponent(version)}`),
        400,
      );
      expect(body.errors, version).toEqual([
        expect.objectContaining({ path: 'params.version', message: expect.stringContaining('2147483647') }),
      ]);
    }
    // The largest version number is well-formed: a 404 (no such version), not a 400.
    expectProblem(await call('GET', `/v1/activities/${id}/versions/2147483647`), 404);
  });

  test('bad from and to are a 400 naming the query field', async () => {
    const id = await activityWithThreeVersions('history-bad-range');
    for (const [query, path] of [
      ['from=0&to=2', 'querystring.from'],
      ['from=1&to=abc', 'querystring.to'],
      ['from=2147483648', 'querystring.from'],
      ['to=-3', 'querystring.to'],
    ] as const) {
      const body = expectProblem(await call('GET', `/v1/activities/${id}/diff?${query}`), 400);
      expect(
        body.errors.map((error: any) => error.path),
        query,
      ).toEqual([path]);
    }
    // Version 1 has no version before it: from must be named.
    const single = await ok('POST', '/v1/activities', ALICE, definition('history-single'));
    for (const query of ['', '?to=1']) {
      const body = expectProblem(await call('GET', `/v1/activities/${single.id}/diff${query}`), 400);
      expect(body.errors[0].path).toBe('querystring.from');
    }
    expect((await ok('GET', `/v1/activities/${single.id}/diff?from=1&to=1`)).patch).toEqual([]);
  });

  test('a page size outside 1–200 and a cursor the API did not issue are 400s naming the field', async () => {
    const id = await activityWithThreeVersions('history-bad-page');
    for (const limit of ['0', '201', 'ten', '-5']) {
      const body = expectProblem(await call('GET', `/v1/activities/${id}/versions?limit=${limit}`), 400);
      expect(body.errors[0].path, limit).toBe('querystring.limit');
    }
    for (const cursor of ['garbage', Buffer.from('version:0').toString('base64url'), 'x'.repeat(101)]) {
      const body = expectProblem(await call('GET', `/v1/activities/${id}/versions?cursor=${cursor}`), 400);
      expect(body.errors[0].path).toBe('querystring.cursor');
    }
    expect(expectProblem(await call('GET', '/v1/activities/not-a-uuid/versions'), 400).errors[0].path).toBe(
      'params.id',
    );
  });

  test('the history routes need a management key', async () => {
    const id = await activityWithThreeVersions('history-keyed');
    for (const url of [
      `/v1/activities/${id}/versions`,
      `/v1/activities/${id}/versions/1`,
      `/v1/activities/${id}/diff`,
    ]) {
      expect((await stack.api.server.inject({ method: 'GET', url })).statusCode, url).toBe(401);
    }
  });

  test('the OpenAPI document describes the history routes with their 400 and 404 problems', async () => {
    const doc = (await stack.api.server.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of [
      '/v1/activities/{id}/versions',
      '/v1/activities/{id}/versions/{version}',
      '/v1/activities/{id}/diff',
    ]) {
      const responses = doc.paths[path]?.get?.responses;
      expect(responses, path).toBeDefined();
      for (const status of ['200', '400', '404']) expect(Object.keys(responses), `${path} ${status}`).toContain(status);
      expect(JSON.stringify(responses['404'])).toContain('Problem');
    }
    expect(doc.paths['/v1/activities/{id}/diff'].get.parameters.map((p: any) => `${p.in}.${p.name}`).sort()).toEqual([
      'path.id',
      'query.from',
      'query.to',
    ]);
  });
});

describe('definition history with authentication off', () => {
  let open: TestStack;
  beforeAll(async () => {
    open = await startStack({ worker: false });
  });
  afterAll(async () => {
    await open?.close();
  });

  test('changes and deletions are attributed to anonymous', async () => {
    const created = (
      await open.api.server.inject({ method: 'POST', url: '/v1/activities', payload: definition('history-anonymous') })
    ).json();
    expect((await open.api.server.inject({ method: 'DELETE', url: `/v1/activities/${created.id}` })).statusCode).toBe(
      204,
    );
    const page = (await open.api.server.inject({ method: 'GET', url: `/v1/activities/${created.id}/versions` })).json();
    expect(page.items.map((item: any) => item.changed_by)).toEqual(['anonymous']);
    expect(page.deleted_by).toBe('anonymous');
  });
});
