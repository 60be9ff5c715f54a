import * as contracts from '@activity-core/contracts';
import * as webhooks from '@activity-core/webhooks';
import { describe, expect, test } from 'vitest';
import type { z } from 'zod';
import { operations, type OperationSpec } from './operations';

/** Every schema the server's packages export: the one declaration of each request and answer. */
const declared = new Set<unknown>([...Object.values(contracts), ...Object.values(webhooks)]);

describe('the operation table', () => {
  test.each(Object.entries(operations) as Array<[string, OperationSpec]>)(
    '%s declares no schema of its own: body, query, headers and results are exported by contracts or webhooks',
    (name, spec) => {
      const schemas: Array<[string, z.ZodType | undefined]> = [
        ['body', spec.body],
        ['query', spec.query],
        ['headers', spec.headers],
        ...Object.entries(spec.responses).map(([status, schema]): [string, z.ZodType] => [status, schema]),
      ];
      for (const [where, schema] of schemas)
        if (schema !== undefined) expect(declared.has(schema), `${name} ${where}`).toBe(true);
    },
  );

  test('the activity bodies are the definition schema the server validates with', () => {
    expect(operations.createActivity.body).toBe(contracts.ActivityDefinition);
    expect(operations.putActivity.body).toBe(contracts.ActivityDefinition);
  });
});
