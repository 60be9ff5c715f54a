import { describe, expect, test } from 'vitest';
import { addressBucket } from './client-address';

describe('per-address limit buckets', () => {
  test('IPv6 addresses in the same /64 share one bucket, however they are written', () => {
    const bucket = addressBucket('2001:db8:1:2::1');
    expect(bucket).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:0db8:0001:0002:ffff:ffff:ffff:fffe')).toBe(bucket);
    expect(addressBucket('2001:DB8:1:2:a:b:c:d')).toBe(bucket);
    expect(addressBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });

  test('IPv6 addresses in different /64s are different buckets', () => {
    expect(addressBucket('2001:db8:1:3::1')).not.toBe(addressBucket('2001:db8:1:2::1'));
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
  });

  test('an IPv4 address is its own bucket, also when written IPv4-mapped in IPv6', () => {
    expect(addressBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('::FFFF:cb00:7107')).toBe('203.0.113.7');
    expect(addressBucket('203.0.113.8')).not.toBe(addressBucket('203.0.113.7'));
  });

  test('anything that is not an IP address is used as given', () => {
    expect(addressBucket('unknown')).toBe('unknown');
  });
});
