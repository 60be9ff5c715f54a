import type { LookupAddress } from 'node:dns';
import { describe, expect, test } from 'vitest';
import { EgressDeniedError, EgressPolicy, parseEgressAllowEntry, type Resolve } from './egress';

/** A resolver answering from a table, like a DNS server the attacker controls. */
function resolverFrom(table: Record<string, string[]>): Resolve {
  return (hostname, _options, callback) => {
    const addresses = table[hostname];
    if (addresses === undefined) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
}

/** Runs the policy's lookup like net.connect does (all: true, as with autoSelectFamily). */
function connectLookup(policy: EgressPolicy, hostname: string, all = true): Promise<LookupAddress[] | string> {
  return new Promise((resolve, reject) => {
    policy.lookup(hostname, { all }, ((error: Error | null, addresses: LookupAddress[] | string) =>
      error === null ? resolve(addresses) : reject(error)) as never);
  });
}

describe('the egress policy for http tasks', () => {
  const policy = new EgressPolicy();

  test.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved or broadcast'],
    ['::1', 'unspecified, loopback or IPv4-compatible'],
    ['::', 'unspecified, loopback or IPv4-compatible'],
    ['fd12:3456::1', 'unique local (private)'],
    ['fc00::1', 'unique local (private)'],
    ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['[::1]', 'unspecified, loopback or IPv4-compatible'],
  ])('a literal %s host is denied as %s by default', (host, range) => {
    expect(() => policy.checkHost(host)).toThrow(EgressDeniedError);
    expect(() => policy.checkHost(host)).toThrow(`a ${range} address`);
    expect(() => policy.checkHost(host)).toThrow('HTTP_TASK_EGRESS_ALLOW');
  });

  test.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    'a public address %s is allowed',
    (host) => {
      expect(() => policy.checkHost(host)).not.toThrow();
    },
  );

  test.each([
    // NAT64 (DNS64 on IPv6-only clusters): the well-known prefix carries the IPv4 address in its last 32 bits.
    ['64:ff9b::a9fe:a9fe', 'link-local (169.254.169.254 via NAT64)'],
    ['64:ff9b::7f00:1', 'loopback (127.0.0.1 via NAT64)'],
    ['64:ff9b::10.0.0.1', 'private (10.0.0.1 via NAT64)'],
    // 6to4 carries it in bits 16..47.
    ['2002:7f00:1::', 'loopback (127.0.0.1 via 6to4)'],
    ['2002:a9fe:a9fe:1::5', 'link-local (169.254.169.254 via 6to4)'],
    // IPv4-translated (::ffff:0:a.b.c.d).
    ['::ffff:0:7f00:1', 'loopback (127.0.0.1 via IPv4-translated)'],
    ['::ffff:0:169.254.169.254', 'link-local (169.254.169.254 via IPv4-translated)'],
    // Teredo and local-use NAT64 are denied whatever they carry.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['64:ff9b:1::808:808', 'local-use NAT64'],
  ])('an IPv6 address %s that reaches a denied IPv4 address is denied as %s', (host, range) => {
    expect(() => policy.checkHost(host)).toThrow(EgressDeniedError);
    expect(() => policy.checkHost(host)).toThrow(`a ${range} address`);
  });

  test.each([
    ['169.254.169.254', 'link-local'], // AWS, GCP, Azure, DigitalOcean, OpenStack metadata
    ['169.254.170.2', 'link-local'], // AWS ECS task metadata
    ['fd00:ec2::254', 'unique local (private)'], // AWS metadata over IPv6
    ['fd20:ce::254', 'unique local (private)'], // GCP metadata over IPv6
    ['168.63.129.16', 'cloud platform (Azure WireServer)'],
    ['100.100.100.200', 'carrier-grade NAT'], // Alibaba Cloud metadata
    ['192.0.0.192', 'IETF protocol assignments'], // Oracle Cloud metadata
  ])('the cloud metadata or platform address %s is denied as %s', (host, range) => {
    expect(() => policy.checkHost(host)).toThrow(`a ${range} address`);
  });

  test.each(['64:ff9b::808:808', '64:ff9b::8.8.8.8', '2002:808:808::1', '::ffff:0:808:808'])(
    'an IPv6 address %s embedding a public IPv4 address is allowed',
    (host) => {
      expect(() => policy.checkHost(host)).not.toThrow();
    },
  );

  test('a name resolving to a NAT64 form of the metadata address is refused at connect time', async () => {
    const dns64 = new EgressPolicy([], resolverFrom({ 'metadata.evil.example': ['64:ff9b::a9fe:a9fe'] }));
    await expect(connectLookup(dns64, 'metadata.evil.example')).rejects.toThrow(
      /resolves to 64:ff9b::a9fe:a9fe, a link-local \(169\.254\.169\.254 via NAT64\)/,
    );
  });

  test('an embedded IPv4 address is opened by an IPv4 allow entry, and the IPv6 prefix by an IPv6 one', () => {
    expect(() => new EgressPolicy(['10.0.0.0/8']).checkHost('64:ff9b::a00:1')).not.toThrow();
    expect(() => new EgressPolicy(['64:ff9b::/96']).checkHost('64:ff9b::7f00:1')).not.toThrow();
    expect(() => new EgressPolicy(['2001::/32']).checkHost('2001:0:4136:e378:8000:63bf:3fff:fdd2')).not.toThrow();
    expect(() => new EgressPolicy(['10.0.0.0/8']).checkHost('64:ff9b::7f00:1')).toThrow(EgressDeniedError);
  });

  test('a hostname is not judged by its name: checkHost leaves it to the connect-time lookup', () => {
    expect(() => policy.checkHost('localhost')).not.toThrow();
  });

  test('a name that resolves to a denied address is refused at connect time, naming host, address and setting', async () => {
    const rebinding = new EgressPolicy([], resolverFrom({ 'metadata.evil.example': ['169.254.169.254'] }));
    const error = await connectLookup(rebinding, 'metadata.evil.example').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EgressDeniedError);
    expect((error as Error).message).toBe(
      'egress denied: metadata.evil.example resolves to 169.254.169.254, a link-local address; http tasks may not reach it unless HTTP_TASK_EGRESS_ALLOW allows it (a CIDR such as 169.254.169.254/32, or the hostname)',
    );
  });

  test('a name with any denied address among public ones is refused', async () => {
    const mixed = new EgressPolicy([], resolverFrom({ 'mixed.example': ['93.184.215.14', '10.0.0.5'] }));
    await expect(connectLookup(mixed, 'mixed.example')).rejects.toThrow(/resolves to 10\.0\.0\.5/);
  });

  test('localhost, resolved by the system, is refused', async () => {
    await expect(connectLookup(new EgressPolicy(), 'localhost')).rejects.toBeInstanceOf(EgressDeniedError);
  });

  test('a public name resolves as usual, in both lookup callback forms', async () => {
    const publicDns = new EgressPolicy([], resolverFrom({ 'api.example': ['93.184.215.14'] }));
    await expect(connectLookup(publicDns, 'api.example')).resolves.toEqual([{ address: '93.184.215.14', family: 4 }]);
    await expect(connectLookup(publicDns, 'api.example', false)).resolves.toBe('93.184.215.14');
  });

  test('DNS failures pass through unchanged, so they stay retryable network errors', async () => {
    await expect(connectLookup(new EgressPolicy([], resolverFrom({})), 'nowhere.example')).rejects.toMatchObject({
      code: 'ENOTFOUND',
    });
  });

  test('allowed CIDRs, addresses and hostnames open what the default denies, and nothing else', async () => {
    const allowing = new EgressPolicy(
      ['127.0.0.0/8', '::1', '10.20.0.0/16', 'erp.internal', '*.corp.example'],
      resolverFrom({ 'erp.internal': ['10.99.0.1'], 'a.corp.example': ['192.168.0.9'], 'b.example': ['10.99.0.1'] }),
    );
    expect(() => allowing.checkHost('127.0.0.1')).not.toThrow();
    expect(() => allowing.checkHost('::1')).not.toThrow();
    expect(() => allowing.checkHost('::ffff:127.0.0.1')).not.toThrow();
    expect(() => allowing.checkHost('10.20.3.4')).not.toThrow();
    expect(() => allowing.checkHost('10.21.0.1')).toThrow(EgressDeniedError);
    expect(() => allowing.checkHost('169.254.169.254')).toThrow(EgressDeniedError);
    await expect(connectLookup(allowing, 'erp.internal')).resolves.toEqual([{ address: '10.99.0.1', family: 4 }]);
    await expect(connectLookup(allowing, 'a.corp.example')).resolves.toHaveLength(1);
    await expect(connectLookup(allowing, 'b.example')).rejects.toBeInstanceOf(EgressDeniedError);
  });

  test('allow entries are parsed, and malformed ones rejected with what a valid one looks like', () => {
    expect(parseEgressAllowEntry('10.0.0.0/8')).toEqual({
      kind: 'cidr',
      address: '10.0.0.0',
      prefix: 8,
      family: 'ipv4',
    });
    expect(parseEgressAllowEntry('::1')).toEqual({ kind: 'cidr', address: '::1', prefix: 128, family: 'ipv6' });
    expect(parseEgressAllowEntry('ERP.Internal.')).toEqual({ kind: 'host', host: 'erp.internal' });
    expect(parseEgressAllowEntry('*.corp.example')).toEqual({ kind: 'suffix', suffix: 'corp.example' });
    for (const bad of ['10.0.0.0/33', 'fd00::/129', 'erp.internal/8', 'http://x', 'a b', '']) {
      expect(() => parseEgressAllowEntry(bad), bad).toThrow();
    }
  });
});
