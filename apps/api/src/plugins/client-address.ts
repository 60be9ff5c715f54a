import { isIPv4, isIPv6 } from 'node:net';

/**
 * The bucket a client address is counted in by every per-address limit (the
 * rate limit without keys, failed bearer keys, webhook deliveries that do not
 * verify). An IPv4 address is its own bucket, and so is an IPv4-mapped IPv6
 * address (`::ffff:203.0.113.7` counts as `203.0.113.7`). Any other IPv6
 * address counts as its /64: one customer usually holds a whole /64 and can
 * pick any address in it, so a per-/128 count would be no limit at all.
 * Anything that is not an IP address is used as given.
 */
export function addressBucket(address: string): string {
  if (isIPv4(address)) return address;
  const bare = address.split('%')[0] ?? address;
  if (!isIPv6(bare)) return address;
  const groups = ipv6Groups(bare);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6);
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted quad converted). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const all =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return all.map((group) => parseInt(group, 16));
}
