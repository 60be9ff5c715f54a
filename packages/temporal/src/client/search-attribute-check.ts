import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_KEYS } from '../search-attributes';

const { temporal } = proto;

const TYPE_NAMES: Record<string, proto.temporal.api.enums.v1.IndexedValueType> = {
  KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  DATETIME: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
};

export class MissingSearchAttributesError extends Error {
  constructor(
    readonly namespace: string,
    readonly problems: string[],
  ) {
    super(
      `Temporal namespace "${namespace}" is missing search attributes activity-core needs:\n  ${problems.join('\n  ')}\n` +
        `Register them, e.g.:\n  ${SEARCH_ATTRIBUTE_KEYS.map((key) => `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${key.type === 'DATETIME' ? 'Datetime' : 'Keyword'}`).join('\n  ')}`,
    );
  }
}

/** Start-up check: says exactly which attribute is missing or has the wrong type, and how to fix it. */
export async function checkSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const response = await connection.operatorService.listSearchAttributes({ namespace });
  const registered = response.customAttributes ?? {};
  const problems: string[] = [];
  for (const key of SEARCH_ATTRIBUTE_KEYS) {
    const actual = registered[key.name];
    const expected = TYPE_NAMES[key.type];
    if (actual === undefined || actual === null) problems.push(`${key.name} (${key.type}) is not registered`);
    else if (expected !== undefined && actual !== expected)
      problems.push(`${key.name} is registered with another type (want ${key.type})`);
  }
  if (problems.length > 0) throw new MissingSearchAttributesError(namespace, problems);
}
