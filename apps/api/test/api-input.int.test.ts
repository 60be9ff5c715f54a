import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from '../../../test/harness';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await stack?.close();
});

const valid = {
  name: 'input-checks',
  triggers: [{ type: 'event', event_type: 'input.check' }],
  tasks: [{ type: 'noop' }],
};

async function counts(): Promise<{ definitions: number; events: number }> {
  const result = await stack.sql.query(
    'SELECT (SELECT count(*)::int FROM activity_definitions) AS definitions, (SELECT count(*)::int FROM events) AS events',
  );
  return result.rows[0];
}

function expectProblem(
  response: { statusCode: number; headers: Record<string, unknown>; json(): any },
  status: number,
) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toContain('application/problem+json');
  const body = response.json();
  expect(body).toMatchObject({
    status,
    type: expect.stringMatching(/^urn:activity-core:problem:/),
    title: expect.any(String),
  });
  expect(body.request_id).toEqual(expect.any(String));
  return body;
}

describe('bad input gets a clear 4xx and stores nothing', () => {
  test('a body that is not JSON is a 400 invalid-json problem', async () => {
    const before = await counts();
    for (const url of ['/v1/activities', '/v1/events']) {
      const response = await stack.api.server.inject({
        method: 'POST',
        url,
        payload: '{"name": ',
        headers: { 'content-type': 'application/json' },
      });
      const body = expectProblem(response, 400);
      expect(body.type).toBe('urn:activity-core:problem:invalid-json');
    }
    expect(await counts()).toEqual(before);
  });

  test('wrong types are a 400 naming each bad field', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 42,
        triggers: [{ type: 'event', event_type: 7 }],
        tasks: [{ type: 'http', config: { url: 'https://x.test', timeout: 30 } }],
      },
    });
    const body = expectProblem(response, 400);
    const paths = body.errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(['name', 'tasks[0].config.timeout', 'triggers[0].event_type'].sort());
    expect(body.detail).toContain('name');
    expect(await counts()).toEqual({ definitions: 0, events: 0 });
  });

  test('an unknown trigger type is a 400 listing the known ones', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: { ...valid, triggers: [{ type: 'webhook' }] },
    });
    const body = expectProblem(response, 400);
    expect(body.errors).toEqual([
      expect.objectContaining({ path: 'triggers[0].type', message: 'trigger type must be one of: event, cron' }),
    ]);
  });

  test('a cron trigger whose misfire policy differs from dedupe_key_strategy is a 400 naming dedupe_key_strategy', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        ...valid,
        dedupe_key_strategy: 'skip',
        triggers: [{ type: 'cron', cron: '0 9 * * *', misfire_policy: 'compress' }],
      },
    });
    const body = expectProblem(response, 400);
    expect(body.errors[0].path).toBe('dedupe_key_strategy');
  });

  test('an event missing required fields is a 400 naming them and is not stored', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { event_id: 'evt_bad', data: {} },
    });
    const body = expectProblem(response, 400);
    expect(body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['event_type', 'occurred_at', 'source']);
    expect(await counts()).toEqual({ definitions: 0, events: 0 });
  });

  test('an occurred_at that is not RFC 3339 is refused', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: { event_id: 'evt_time', event_type: 'a.b', source: 's', occurred_at: 'yesterday', data: {} },
    });
    expect(expectProblem(response, 400).errors[0].path).toBe('occurred_at');
  });

  test('event ids that would collide with system ids are refused', async () => {
    const base = { event_type: 'a.b', source: 's', occurred_at: '2026-03-01T09:00:00Z', data: {} };
    const cronShaped = expectProblem(
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: { ...base, event_id: '2026-03-01T09:00:00+00:00' },
      }),
      400,
    );
    expect(cronShaped.errors[0]).toMatchObject({
      path: 'event_id',
      message: expect.stringContaining('reserved for scheduled runs'),
    });
    const emitted = expectProblem(
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: { ...base, event_id: 'emit-abc:0' },
      }),
      400,
    );
    expect(emitted.errors[0].message).toContain('emit_event');
    expect(await counts()).toEqual({ definitions: 0, events: 0 });
  });

  test('a NUL character in event data is a 400, not a 500, and nothing is stored', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'evt_nul',
        event_type: 'a.b',
        source: 's',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { note: 'a\u0000b' },
      },
    });
    expectProblem(response, 400);
    expect(await counts()).toEqual({ definitions: 0, events: 0 });
  });

  test('an http task whose host comes from a placeholder is refused at registration', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: { ...valid, name: 'ssrf', tasks: [{ type: 'http', config: { url: 'http://{{event.data.host}}/x' } }] },
    });
    const body = expectProblem(response, 400);
    expect(body.errors[0]).toMatchObject({
      path: 'tasks[0].config.url',
      message: expect.stringContaining('host must be fixed'),
    });
  });

  test('an oversized body is a 413 and nothing is stored', async () => {
    const big = 'x'.repeat(1024 * 1024 + 1);
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'evt_big',
        event_type: 'a.b',
        source: 's',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { big },
      },
    });
    expectProblem(response, 413);
    expect(await counts()).toEqual({ definitions: 0, events: 0 });
  });

  test('an unsupported content type is a 415', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: 'a=b',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectProblem(response, 415);
  });

  test('an unknown id is a 404 and a malformed id is a 400', async () => {
    expectProblem(
      await stack.api.server.inject({ method: 'GET', url: '/v1/activities/0b6f2b5e-1d5a-4a56-9b0a-6f7d2f0e9c11' }),
      404,
    );
    expectProblem(
      await stack.api.server.inject({ method: 'GET', url: '/v1/runs/0b6f2b5e-1d5a-4a56-9b0a-6f7d2f0e9c11' }),
      404,
    );
    const malformed = expectProblem(
      await stack.api.server.inject({ method: 'GET', url: '/v1/activities/not-a-uuid' }),
      400,
    );
    expect(malformed.errors[0].path).toBe('params.id');
    expectProblem(await stack.api.server.inject({ method: 'GET', url: '/v1/nope' }), 404);
  });

  test('a cursor the API did not issue is a 400', async () => {
    const body = expectProblem(await stack.api.server.inject({ method: 'GET', url: '/v1/runs?cursor=garbage' }), 400);
    expect(body.errors[0].path).toBe('querystring.cursor');
  });

  test('a batch over the size limit is refused whole and a batch with one bad item accepts the others', async () => {
    const item = (id: string) => ({
      event_id: id,
      event_type: 'batch.x',
      source: 's',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    });
    expectProblem(
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: Array.from({ length: 101 }, (_, i) => item(`b${i}`)),
      }),
      400,
    );
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: [item('b-ok-1'), { event_id: 'b-bad' }, item('b-ok-2')],
    });
    expect(response.statusCode).toBe(202);
    const results = response.json().results;
    expect(results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false, true]);
    expect(results[1]).toMatchObject({ index: 1, status: 400 });
    expect(results[1].errors.map((e: { path: string }) => e.path)).toContain('[1].event_type');
    const stored = await stack.sql.query('SELECT event_id FROM events ORDER BY event_id');
    expect(stored.rows.map((r) => r.event_id)).toEqual(['b-ok-1', 'b-ok-2']);
  });
});

describe('definitions', () => {
  test('PUT by id creates, and repeating it is a no-op that keeps the version', async () => {
    const id = '3f1c1b9e-8f43-4c1a-9e1b-1f0c2d3e4f50';
    const first = await stack.api.server.inject({
      method: 'PUT',
      url: `/v1/activities/${id}`,
      payload: { ...valid, name: 'put-me' },
    });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({ id, version: 1 });
    const again = await stack.api.server.inject({
      method: 'PUT',
      url: `/v1/activities/${id}`,
      payload: { ...valid, name: 'put-me' },
    });
    expect(again.statusCode).toBe(200);
    expect(again.json().version).toBe(1);
    const changed = await stack.api.server.inject({
      method: 'PUT',
      url: `/v1/activities/${id}`,
      payload: { ...valid, name: 'put-me', description: 'now described' },
    });
    expect(changed.json().version).toBe(2);
    const versions = await stack.sql.query(
      'SELECT version FROM activity_definition_versions WHERE activity_id = $1 ORDER BY version',
      [id],
    );
    expect(versions.rows.map((r) => r.version)).toEqual([1, 2]);
  });

  test('identical PUTs racing to create one id both succeed, with one version', async () => {
    const id = '9c2d1b9e-8f43-4c1a-9e1b-1f0c2d3e4f52';
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        stack.api.server.inject({ method: 'PUT', url: `/v1/activities/${id}`, payload: { ...valid, name: 'raced' } }),
      ),
    );
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(responses.map((r) => r.json().version))).toEqual(new Set([1]));
  });

  test('a second activity with a taken name is a 409 naming the field', async () => {
    await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload: { ...valid, name: 'taken' } });
    const body = expectProblem(
      await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload: { ...valid, name: 'taken' } }),
      409,
    );
    expect(body.errors[0].path).toBe('name');
  });

  test('a deleted activity is gone from the API, frees its name, and keeps its history', async () => {
    const created = (
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: { ...valid, name: 'deleted-one' },
      })
    ).json();
    expect((await stack.api.server.inject({ method: 'DELETE', url: `/v1/activities/${created.id}` })).statusCode).toBe(
      204,
    );
    expectProblem(await stack.api.server.inject({ method: 'GET', url: `/v1/activities/${created.id}` }), 404);
    expectProblem(await stack.api.server.inject({ method: 'DELETE', url: `/v1/activities/${created.id}` }), 404);
    expect(
      (
        await stack.api.server.inject({
          method: 'POST',
          url: '/v1/activities',
          payload: { ...valid, name: 'deleted-one' },
        })
      ).statusCode,
    ).toBe(201);
    const kept = await stack.sql.query(
      'SELECT count(*)::int AS n FROM activity_definition_versions WHERE activity_id = $1',
      [created.id],
    );
    expect(kept.rows[0].n).toBe(1);
  });

  test('a PUT on the id of a deleted activity is a 409, not a resurrection', async () => {
    const created = (
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: { ...valid, name: 'gone-for-good' },
      })
    ).json();
    await stack.api.server.inject({ method: 'DELETE', url: `/v1/activities/${created.id}` });
    const body = expectProblem(
      await stack.api.server.inject({
        method: 'PUT',
        url: `/v1/activities/${created.id}`,
        payload: { ...valid, name: 'gone-for-good' },
      }),
      409,
    );
    expect(body.detail).toContain('was deleted');
  });

  test('listing pages through activities with a cursor', async () => {
    for (const n of [1, 2, 3])
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: { ...valid, name: `page-${n}` },
      });
    const seen: string[] = [];
    let url = '/v1/activities?limit=2';
    for (let i = 0; i < 10; i++) {
      const page = (await stack.api.server.inject({ method: 'GET', url })).json();
      seen.push(...page.items.map((a: { name: string }) => a.name));
      if (page.next_cursor === null) break;
      url = `/v1/activities?limit=2&cursor=${page.next_cursor}`;
    }
    expect(seen.filter((n) => n.startsWith('page-'))).toEqual(['page-3', 'page-2', 'page-1']);
    expect(new Set(seen).size).toBe(seen.length);
  });
});

describe('run listing', () => {
  test('runs created within the same millisecond are all paged through, none skipped or repeated', async () => {
    const activityId = '7a1c1b9e-8f43-4c1a-9e1b-1f0c2d3e4f51';
    for (const [i, at] of [
      '2026-01-01T00:00:00.1231Z',
      '2026-01-01T00:00:00.1234Z',
      '2026-01-01T00:00:00.1236Z',
      '2026-01-01T00:00:00.1239Z',
    ].entries()) {
      await stack.sql.query(
        `INSERT INTO activity_runs (run_id, workflow_id, activity_id, activity_version, trigger_type, event_id, status, created_at)
         VALUES (gen_random_uuid(), $1, $2, 1, 'event', $1, 'succeeded', $3)`,
        [`same-ms-${i}`, activityId, at],
      );
    }
    const seen: string[] = [];
    let url = `/v1/runs?activity_id=${activityId}&limit=1`;
    for (let i = 0; i < 10; i++) {
      const page = (await stack.api.server.inject({ method: 'GET', url })).json();
      seen.push(...page.items.map((r: { event_id: string }) => r.event_id));
      if (page.next_cursor === null) break;
      url = `/v1/runs?activity_id=${activityId}&limit=1&cursor=${page.next_cursor}`;
    }
    expect(seen.sort()).toEqual(['same-ms-0', 'same-ms-1', 'same-ms-2', 'same-ms-3']);
  });
});

describe('service endpoints', () => {
  test('healthz answers while readyz checks Postgres and Temporal', async () => {
    expect((await stack.api.server.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await stack.api.server.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({
      status: 'ready',
      checks: { postgres: { status: 'ok' }, temporal: { status: 'ok' } },
    });
  });

  test('the OpenAPI document is served and describes every /v1 route', async () => {
    const doc = (await stack.api.server.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.openapi).toBe('3.1.0');
    for (const path of [
      '/v1/activities',
      '/v1/activities/{id}',
      '/v1/events',
      '/v1/events/{event_id}',
      '/v1/runs',
      '/v1/runs/{run_id}',
    ]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    const body = JSON.stringify(doc.paths['/v1/activities'].post.requestBody);
    const ref = /#\/components\/schemas\/([A-Za-z]+)/.exec(body)?.[1];
    const schema = JSON.stringify(ref === undefined ? body : doc.components.schemas[ref]);
    expect(schema).toContain('triggers');
    expect(schema).toContain('dedupe_key_strategy');
  });
});
