import { describe, expect, test } from 'vitest';
import { decideBatchJoin } from './batch-decision';

const bounds = { maxSize: 3, maxBytes: 1000 };

describe('adding an event to its key’s batch', () => {
  test('the first event of a key opens a batch at position 1', () => {
    expect(decideBatchJoin(undefined, 100, bounds)).toEqual({
      closeOpen: false,
      into: 'new',
      position: 1,
      closeAfter: undefined,
    });
  });

  test('a later event joins the open batch at the next position', () => {
    expect(decideBatchJoin({ count: 1, bytes: 100 }, 100, bounds)).toEqual({
      closeOpen: false,
      into: 'open',
      position: 2,
      closeAfter: undefined,
    });
  });

  test('the event that makes the batch hold max_size events closes it with itself in it', () => {
    expect(decideBatchJoin({ count: 2, bytes: 200 }, 100, bounds)).toEqual({
      closeOpen: false,
      into: 'open',
      position: 3,
      closeAfter: 'max_size',
    });
  });

  test('with max_size 1 every event is a batch of its own, closed as it opens', () => {
    expect(decideBatchJoin(undefined, 100, { maxSize: 1, maxBytes: 1000 })).toMatchObject({
      into: 'new',
      position: 1,
      closeAfter: 'max_size',
    });
  });

  test('an event that would take the batch past max_bytes closes it without itself and opens the next', () => {
    expect(decideBatchJoin({ count: 2, bytes: 900 }, 101, bounds)).toEqual({
      closeOpen: true,
      into: 'new',
      position: 1,
      closeAfter: undefined,
    });
  });

  test('an event that brings the batch exactly to max_bytes joins it and closes it', () => {
    expect(decideBatchJoin({ count: 1, bytes: 900 }, 100, bounds)).toEqual({
      closeOpen: false,
      into: 'open',
      position: 2,
      closeAfter: 'max_bytes',
    });
  });

  test('an event larger than max_bytes on its own is a batch of one, closed at once', () => {
    expect(decideBatchJoin(undefined, 5000, bounds)).toEqual({
      closeOpen: false,
      into: 'new',
      position: 1,
      closeAfter: 'max_bytes',
    });
    // After an open batch: that batch closes first, then the large event is a batch of its own.
    expect(decideBatchJoin({ count: 1, bytes: 10 }, 5000, bounds)).toEqual({
      closeOpen: true,
      into: 'new',
      position: 1,
      closeAfter: 'max_bytes',
    });
  });

  test('a batch opened under a larger max_size closes with its next event once the definition lowered it', () => {
    expect(decideBatchJoin({ count: 5, bytes: 500 }, 10, bounds)).toMatchObject({
      into: 'open',
      position: 6,
      closeAfter: 'max_size',
    });
  });
});
