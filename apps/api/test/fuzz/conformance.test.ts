import { describe, expect, test } from 'vitest';
import { findingsOf, unexplainedFailures, unstatedRulesBehind } from './conformance';
import type { RecordedInteraction } from './schemathesis';

const refused = (
  operation: string,
  status: number,
  body: object,
  checks: RecordedInteraction['checks'],
): RecordedInteraction => ({
  operation,
  method: operation.split(' ')[0]!,
  uri: `http://127.0.0.1${operation.split(' ')[1]!}`,
  requestBody: undefined,
  status,
  responseBody: JSON.stringify(body),
  elapsedSeconds: 0.01,
  checks,
});
const rejected = [
  {
    name: 'positive_data_acceptance',
    status: 'failure',
    message: 'Schema-valid request rejected: Valid data should have been accepted',
  },
];
const problem = (errors: Array<{ path: string; message: string }>) => ({
  type: 'urn:activity-core:problem:validation-error',
  title: 'Invalid request',
  status: 400,
  detail: 'x',
  errors,
});

describe('the conformance exceptions', () => {
  test('a schema-valid request refused only for rules the document states in words is excused', () => {
    const interaction = refused(
      'POST /v1/activities',
      400,
      problem([
        { path: 'triggers[0].cron', message: 'cron must have 5 or 6 fields, got 1' },
        { path: 'triggers[1].filter', message: 'the expression is empty' },
      ]),
      rejected,
    );
    expect(unstatedRulesBehind(interaction)?.length).toBe(2);
    expect(unexplainedFailures(interaction)).toEqual([]);
  });

  test('one field error the schema could have stated makes the whole refusal a finding', () => {
    const interaction = refused(
      'POST /v1/activities',
      400,
      problem([
        { path: 'triggers[0].cron', message: 'cron must have 5 or 6 fields, got 1' },
        { path: 'run_timeout', message: 'must be at most 365d' },
      ]),
      rejected,
    );
    expect(unstatedRulesBehind(interaction)).toBeUndefined();
    expect(unexplainedFailures(interaction).map((check) => check.name)).toEqual(['positive_data_acceptance']);
    expect(findingsOf([interaction])).toEqual([
      'POST /v1/activities — positive_data_acceptance: Schema-valid request rejected',
    ]);
  });

  test('a rule excuses a refusal only on the operations it names, and never another check', () => {
    const cursor = problem([{ path: 'querystring.cursor', message: 'invalid cursor' }]);
    expect(unstatedRulesBehind(refused('GET /v1/runs', 400, cursor, rejected))).toBeDefined();
    expect(unstatedRulesBehind(refused('GET /v1/webhook-sources', 400, cursor, rejected))).toBeUndefined();
    const undocumented = [
      { name: 'status_code_conformance', status: 'failure', message: 'Undocumented status code: Received: 400' },
    ];
    expect(unexplainedFailures(refused('GET /v1/runs', 400, cursor, undocumented))).toEqual(undocumented);
  });

  test('a 5xx or an answer that is not a problem is never excused', () => {
    expect(
      unstatedRulesBehind(
        refused('POST /v1/events', 503, { type: 'urn:activity-core:problem:event-id-reused' }, rejected),
      ),
    ).toBeUndefined();
    expect(
      unstatedRulesBehind({ ...refused('POST /v1/events', 400, {}, rejected), responseBody: 'not json' }),
    ).toBeUndefined();
  });
});
