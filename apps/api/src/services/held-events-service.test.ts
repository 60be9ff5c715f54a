import { describe, expect, test } from 'vitest';
import { notHeld } from './held-events-service';

describe('the event ids a release or discard did not find held', () => {
  test('are those asked for and not done, once each, in the order asked', () => {
    expect(notHeld(['e3', 'e1', 'e3', 'e2'], new Set(['e1']))).toEqual(['e3', 'e2']);
  });

  test('are none when no ids were asked for (all held events)', () => {
    expect(notHeld(undefined, new Set())).toEqual([]);
  });
});
