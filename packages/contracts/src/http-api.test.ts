import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { AuditQuery } from './audit';
import { ActivityListQuery, FiresQuery, RunListQuery, VersionListQuery } from './http-api';

describe('list queries', () => {
  test.each([
    ['activities', ActivityListQuery],
    ['runs', RunListQuery],
    ['fires', FiresQuery],
    ['versions', VersionListQuery],
    ['audit', AuditQuery],
  ] as const)('%s: an empty cursor is no cursor (the first page), as an absent one', (_name, query) => {
    expect(query.parse({ cursor: '' }).cursor).toBeUndefined();
    expect(query.parse({}).cursor).toBeUndefined();
    expect(query.parse({ cursor: 'abc' }).cursor).toBe('abc');
  });

  test('the documented cursor is an optional string that says what an empty one means', () => {
    const schema = z.toJSONSchema(RunListQuery, { io: 'input' }) as unknown as {
      properties: { cursor: { type: string; description: string } };
      required?: string[];
    };
    expect(schema.properties.cursor).toMatchObject({ type: 'string', description: expect.stringContaining('empty') });
    expect(schema.required ?? []).not.toContain('cursor');
  });

  test('a cursor over its limit is still refused, naming the limit', () => {
    const result = VersionListQuery.safeParse({ cursor: 'x'.repeat(101) });
    expect(result.error?.issues[0]).toMatchObject({ path: ['cursor'], message: 'a cursor is at most 100 characters' });
  });
});
