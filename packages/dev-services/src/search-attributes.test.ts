import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { SEARCH_ATTRIBUTE_KEYS } from '@activity-core/temporal/client';
import { REQUIRED_SEARCH_ATTRIBUTES } from './search-attributes';

describe('the search attribute list', () => {
  test('the docker-compose registration script registers exactly the attributes the service requires', async () => {
    const script = await readFile(join(process.cwd(), 'temporal-config', 'register-search-attributes.sh'), 'utf8');
    const list = /SEARCH_ATTRIBUTES:-([^}"]+)/.exec(script)?.[1]?.trim().split(/\s+/) ?? [];
    expect(list.sort()).toEqual(
      Object.entries(REQUIRED_SEARCH_ATTRIBUTES)
        .map(([name, type]) => `${name}=${type}`)
        .sort(),
    );
  });

  test('the dev server registers exactly the attributes the worker and API check for', () => {
    const checked = SEARCH_ATTRIBUTE_KEYS.map(
      (key) => `${key.name}=${key.type === 'DATETIME' ? 'Datetime' : 'Keyword'}`,
    );
    expect(checked.sort()).toEqual(
      Object.entries(REQUIRED_SEARCH_ATTRIBUTES)
        .map(([name, type]) => `${name}=${type}`)
        .sort(),
    );
  });
});
