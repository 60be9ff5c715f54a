import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { DEFAULT_ECHO_PORT } from '@activity-core/dev-services';
import { describe, expect, test } from 'vitest';

/**
 * The README's walkthrough is run by hand against `npm start`; these checks
 * keep what it states in step with the code: the ids it prints in advance,
 * and the echo endpoint it calls.
 */
const readme = readFileSync(join(process.cwd(), 'README.md'), 'utf8');
const walkthrough = readme.slice(
  readme.indexOf('## Five minutes with it'),
  readme.indexOf('## Running against your own servers'),
);

describe('the README', () => {
  test('opens with exactly two commands: npm start and npm test', () => {
    const first = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(
      first
        .trim()
        .split('\n')
        .map((line) => line.split('#')[0]!.trim()),
    ).toEqual(['npm start', 'npm test']);
  });

  test('the walkthrough names the run id that its activity id and event id produce', () => {
    const activityId = /\/v1\/activities\/([0-9a-f-]{36})/.exec(walkthrough)?.[1];
    const eventId = /"event_id": "([^"]+)"/.exec(walkthrough)?.[1];
    const runId = /\/v1\/runs\/([0-9a-f-]{36})/.exec(walkthrough)?.[1];
    expect(activityId).toBeDefined();
    expect(eventId).toBe('evt_1');
    expect(runId).toBe(runIdFor(eventRunWorkflowId(activityId!, eventId!)));
    expect(walkthrough).toContain(eventRunWorkflowId(activityId!, eventId!));
    expect(walkthrough).toContain(`ActivityId = "${activityId}"`);
  });

  test('the walkthrough calls the echo endpoint npm start serves, not the internet', () => {
    const urls = [...walkthrough.matchAll(/"url": "([^"]+)"/g)].map((match) => match[1]);
    expect(urls).toEqual([`http://127.0.0.1:${DEFAULT_ECHO_PORT}/echo`]);
    expect(walkthrough).toContain(`http://127.0.0.1:${DEFAULT_ECHO_PORT}/echo`);
  });
});
