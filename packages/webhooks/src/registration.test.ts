import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { registrationIssues, STANDARD_WEBHOOKS_SECRET_PATTERN } from './registration';
import { WebhookSourceConfig } from './source-config';

const paths = (input: object): string[] =>
  registrationIssues(WebhookSourceConfig.parse(input)).map((issue) => issue.path);

const longSecret = 'a-secret-of-at-least-16-bytes';

describe('registration of webhook sources', () => {
  test('a GitHub source must opt in to the unsigned X-GitHub-Event header and to replays without a timestamp', () => {
    expect(paths({ scheme: 'github', name: 'gh', secret: longSecret })).toEqual([
      'event_type_from_unsigned_header',
      'allow_replay_without_timestamp',
    ]);
    expect(
      paths({
        scheme: 'github',
        name: 'gh',
        secret: longSecret,
        event_type_from_unsigned_header: true,
        allow_replay_without_timestamp: true,
      }),
    ).toEqual([]);
  });

  test('a GitHub source that types its events from the body needs no header opt-in', () => {
    expect(
      paths({
        scheme: 'github',
        name: 'gh',
        secret: longSecret,
        allow_replay_without_timestamp: true,
        event_type: { from: { body: 'action' } },
      }),
    ).toEqual([]);
  });

  test('an HMAC source without timestamp_header is refused unless it accepts replays without a timestamp', () => {
    expect(paths({ scheme: 'hmac_sha256', name: 'shop', secret: longSecret })).toEqual([
      'allow_replay_without_timestamp',
    ]);
    expect(
      paths({ scheme: 'hmac_sha256', name: 'shop', secret: longSecret, allow_replay_without_timestamp: true }),
    ).toEqual([]);
    expect(paths({ scheme: 'hmac_sha256', name: 'shop', secret: longSecret, timestamp_header: 'X-Timestamp' })).toEqual(
      [],
    );
  });

  test('the refusal says how to fix it and names the field', () => {
    const [issue] = registrationIssues(
      WebhookSourceConfig.parse({ scheme: 'hmac_sha256', name: 'shop', secret: longSecret }),
    );
    expect(issue?.message).toMatch(/set timestamp_header, or set allow_replay_without_timestamp: true/);
  });

  test('an event type read from any header, even as the suffix, needs the opt-in', () => {
    const base = { scheme: 'hmac_sha256', name: 'shop', secret: longSecret, timestamp_header: 'X-Timestamp' };
    expect(paths({ ...base, event_type: { from: { body: 'type' }, suffix: { header: 'X-Action' } } })).toEqual([
      'event_type_from_unsigned_header',
    ]);
    expect(
      paths({ ...base, event_type: { from: { header: 'X-Type' } }, event_type_from_unsigned_header: true }),
    ).toEqual([]);
  });

  test.each([
    ['github', 15],
    ['hmac_sha256', 15],
  ])('a %s secret of %i characters is refused, naming secret and the 16-character minimum', (scheme, characters) => {
    const issues = registrationIssues(
      WebhookSourceConfig.parse({
        scheme,
        name: 's',
        secret: 'x'.repeat(characters),
        allow_replay_without_timestamp: true,
        event_type_from_unsigned_header: true,
      }),
    );
    expect(issues).toEqual([
      { path: 'secret', message: `the secret must be at least 16 characters; this one has ${characters}` },
    ]);
  });

  test('a secret is measured in characters, as its JSON Schema minLength counts them, not in UTF-8 bytes', () => {
    const options = { scheme: 'hmac_sha256', name: 's', allow_replay_without_timestamp: true };
    // 15 characters, 45 bytes: refused; 16 characters: accepted.
    expect(paths({ ...options, secret: '€'.repeat(15) })).toEqual(['secret']);
    expect(paths({ ...options, secret: '€'.repeat(16) })).toEqual([]);
  });

  test('a Standard Webhooks secret must decode to at least 24 bytes', () => {
    expect(
      paths({ scheme: 'standard_webhooks', name: 's', secret: `whsec_${randomBytes(23).toString('base64')}` }),
    ).toEqual(['secret']);
    expect(
      paths({ scheme: 'standard_webhooks', name: 's', secret: `whsec_${randomBytes(24).toString('base64')}` }),
    ).toEqual([]);
  });

  test('a Standard Webhooks secret is canonical base64, as STANDARD_WEBHOOKS_SECRET_PATTERN states; odd padding the library tolerates is refused', () => {
    const secret = randomBytes(25).toString('base64'); // 36 characters, two of them padding
    expect(paths({ scheme: 'standard_webhooks', name: 's', secret: `whsec_${secret}` })).toEqual([]);
    expect(paths({ scheme: 'standard_webhooks', name: 's', secret: `whsec_${secret.replace(/=+$/, '')}` })).toEqual([]);
    expect(paths({ scheme: 'standard_webhooks', name: 's', secret: `whsec_${secret.replace(/=+$/, '=')}` })).toEqual([
      'secret',
    ]);
    expect(new RegExp(STANDARD_WEBHOOKS_SECRET_PATTERN).test(`whsec_${secret}`)).toBe(true);
  });
});
