import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** The setting that opens destinations the egress policy denies by default. */
const EGRESS_ALLOW_SETTING = 'HTTP_TASK_EGRESS_ALLOW';

/**
 * Address ranges an `http` task may not reach unless the operator allows them:
 * the worker's own host, its private networks and the cloud metadata service
 * are not for definitions (and so for whoever holds a management key) to reach.
 */
const DENIED_IPV4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.168.0.0', 16, 'private'],
  // Azure's platform endpoint (WireServer: VM agent, health probes, DNS) is a public-looking address.
  ['168.63.129.16', 32, 'cloud platform (Azure WireServer)'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved or broadcast'],
];
const DENIED_IPV6: Array<[string, number, string]> = [
  // `::`, `::1` and the deprecated IPv4-compatible form `::a.b.c.d`.
  ['::', 96, 'unspecified, loopback or IPv4-compatible'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
  // Teredo tunnels to an IPv4 address that is obfuscated in the address and may be any relay's choice.
  ['2001::', 32, 'Teredo'],
  // Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on the operator's prefix length.
  ['64:ff9b:1::', 48, 'local-use NAT64'],
];

/**
 * IPv6 prefixes that carry an IPv4 address the packet ends up at (or is
 * translated to): an address in one is judged as that IPv4 address. NAT64
 * matters on IPv6-only clusters with DNS64, where `64:ff9b::a9fe:a9fe` is
 * the metadata service; 6to4 carries the address in bits 16..47.
 */
const EMBEDDING_IPV6: Array<{ network: string; prefix: number; name: string; ipv4At: number }> = [
  { network: '64:ff9b::', prefix: 96, name: 'NAT64', ipv4At: 12 },
  { network: '::ffff:0:0:0', prefix: 96, name: 'IPv4-translated', ipv4At: 12 },
  { network: '2002::', prefix: 16, name: '6to4', ipv4At: 2 },
];

/** A destination the egress policy does not allow. The message names the host, the address and the setting. */
export class EgressDeniedError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
  ) {
    super(
      `egress denied: ${host}${host === address ? '' : ` resolves to ${address}`}, a ${range} address; ` +
        `http tasks may not reach it unless ${EGRESS_ALLOW_SETTING} allows it (a CIDR such as ${address}/${isIP(address) === 6 ? 128 : 32}, or the hostname)`,
    );
    this.name = 'EgressDeniedError';
  }
}

/** `[::1]` → `::1`; `Example.COM.` → `example.com`. */
function normaliseHost(host: string): string {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return bare.toLowerCase().replace(/\.$/, '');
}

/** `::ffff:127.0.0.1` (or `::ffff:7f00:1`) → `127.0.0.1`; anything else unchanged. */
function unmapIpv4(address: string): string {
  const lower = address.toLowerCase();
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted !== null) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex !== null) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return address;
}

/** The 16 bytes of an IPv6 address (zone id ignored), or undefined when `address` is not one. */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.toLowerCase().replace(/%.*$/, '');
  if (isIP(text) !== 6) return undefined;
  let ipv4: number[] = [];
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    ipv4 = dotted.slice(1, 5).map(Number);
    text = `${text.slice(0, dotted.index)}0:0`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const words = [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  const bytes = words.flatMap((word) => [word >> 8, word & 255]);
  if (ipv4.length === 4) bytes.splice(12, 4, ...ipv4);
  return bytes;
}

/** The IPv4 address an IPv6 address embeds (NAT64, IPv4-translated, 6to4) and the prefix's name; undefined for any other address. */
function embeddedIpv4(address: string): { ipv4: string; via: string } | undefined {
  const bytes = ipv6Bytes(address);
  if (bytes === undefined) return undefined;
  for (const { network, prefix, name, ipv4At } of EMBEDDING_IPV6) {
    const net = ipv6Bytes(network)!;
    let inside = true;
    for (let bit = 0; bit < prefix && inside; bit++) {
      const mask = 0x80 >> (bit % 8);
      inside = (bytes[bit >> 3]! & mask) === (net[bit >> 3]! & mask);
    }
    if (inside) return { ipv4: bytes.slice(ipv4At, ipv4At + 4).join('.'), via: name };
  }
  return undefined;
}

export type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * Where `http` tasks may connect. Denied by default: private (RFC 1918,
 * fc00::/7), loopback, link-local (cloud metadata at 169.254.169.254),
 * Azure's platform address 168.63.129.16,
 * unspecified, carrier-grade NAT, multicast, broadcast and reserved
 * addresses, and Teredo and local-use NAT64 IPv6 prefixes; IPv6 addresses
 * that embed an IPv4 one (IPv4-mapped, IPv4-translated, NAT64 `64:ff9b::/96`,
 * 6to4 `2002::/16`) are judged as that IPv4 address. `allow` (the
 * HTTP_TASK_EGRESS_ALLOW entries) opens CIDRs (`10.1.0.0/16`), single
 * addresses, hostnames (`erp.internal`, any address it resolves to) and
 * hostname suffixes (`*.corp.example`).
 *
 * The check runs on the address actually connected to: `lookup` replaces
 * DNS resolution in the connection agent, so a name that resolves to a
 * public address when checked and a private one when connecting (DNS
 * rebinding) cannot slip through; literal IP hosts never reach a lookup and
 * are checked by `checkHost`.
 */
export class EgressPolicy {
  readonly #denied = new BlockList();
  readonly #ranges: Array<{ list: BlockList; range: string }> = [];
  readonly #allowedAddresses = new BlockList();
  readonly #allowedHosts = new Set<string>();
  readonly #allowedSuffixes: string[] = [];
  readonly #resolve: Resolve;

  constructor(allow: readonly string[] = [], resolve: Resolve = dnsLookup as Resolve) {
    this.#resolve = resolve;
    for (const [network, prefix, range] of DENIED_IPV4) {
      const list = new BlockList();
      list.addSubnet(network, prefix, 'ipv4');
      this.#ranges.push({ list, range });
      this.#denied.addSubnet(network, prefix, 'ipv4');
    }
    for (const [network, prefix, range] of DENIED_IPV6) {
      const list = new BlockList();
      list.addSubnet(network, prefix, 'ipv6');
      this.#ranges.push({ list, range });
      this.#denied.addSubnet(network, prefix, 'ipv6');
    }
    for (const entry of allow) {
      const parsed = parseEgressAllowEntry(entry);
      if (parsed.kind === 'cidr') this.#allowedAddresses.addSubnet(parsed.address, parsed.prefix, parsed.family);
      else if (parsed.kind === 'suffix') this.#allowedSuffixes.push(parsed.suffix);
      else this.#allowedHosts.add(parsed.host);
    }
  }

  #hostAllowed(host: string): boolean {
    return this.#allowedHosts.has(host) || this.#allowedSuffixes.some((suffix) => host.endsWith(`.${suffix}`));
  }

  /** The denied range `address` falls in, or undefined when it may be reached. */
  #deniedRange(address: string): string | undefined {
    const plain = unmapIpv4(normaliseHost(address).replace(/%.*$/, ''));
    const family = isIP(plain) === 6 ? 'ipv6' : 'ipv4';
    if (isIP(plain) === 0) return 'unparseable';
    if (this.#allowedAddresses.check(plain, family)) return undefined;
    // An IPv6 address that carries an IPv4 one is judged as that IPv4 address (an allowed IPv6 CIDR above still opens it).
    const embedded = family === 'ipv6' ? embeddedIpv4(plain) : undefined;
    if (embedded !== undefined) {
      const range = this.#deniedRange(embedded.ipv4);
      return range === undefined ? undefined : `${range} (${embedded.ipv4} via ${embedded.via})`;
    }
    if (!this.#denied.check(plain, family)) return undefined;
    return this.#ranges.find(({ list }) => list.check(plain, family))?.range ?? 'denied';
  }

  /** Throws EgressDeniedError when `address`, reached as `host`, is not allowed. */
  checkAddress(host: string, address: string): void {
    const name = normaliseHost(host);
    if (isIP(name) === 0 && this.#hostAllowed(name)) return;
    const range = this.#deniedRange(address);
    if (range !== undefined) throw new EgressDeniedError(name, normaliseHost(address), range);
  }

  /** Checks a URL's host when it is a literal IP address (those are connected to without a lookup). */
  checkHost(hostname: string): void {
    const host = normaliseHost(hostname);
    if (isIP(host) !== 0) this.checkAddress(host, host);
  }

  /**
   * A `lookup` for net/tls connect options: resolves like dns.lookup, then
   * refuses the connection when any resolved address is denied.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.#resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) {
        (callback as (e: NodeJS.ErrnoException) => void)(error);
        return;
      }
      try {
        if (addresses.length === 0)
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
        for (const { address } of addresses) this.checkAddress(hostname, address);
      } catch (denied) {
        (callback as (e: Error) => void)(denied as Error);
        return;
      }
      if (options.all === true) (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

type EgressAllowEntry =
  | { kind: 'cidr'; address: string; prefix: number; family: 'ipv4' | 'ipv6' }
  | { kind: 'host'; host: string }
  | { kind: 'suffix'; suffix: string };

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/**
 * One HTTP_TASK_EGRESS_ALLOW entry: `10.0.0.0/8`, `fd00::/8`, `127.0.0.1`
 * (a /32), `erp.internal`, or `*.corp.example`. Throws with a message
 * saying what a valid entry looks like.
 */
export function parseEgressAllowEntry(entry: string): EgressAllowEntry {
  const text = entry.trim().toLowerCase();
  const slash = text.indexOf('/');
  const address = normaliseHost(slash === -1 ? text : text.slice(0, slash));
  const version = isIP(address);
  if (version !== 0) {
    const max = version === 4 ? 32 : 128;
    const prefix = slash === -1 ? max : /^\d{1,3}$/.test(text.slice(slash + 1)) ? Number(text.slice(slash + 1)) : NaN;
    if (!(prefix >= 0 && prefix <= max)) throw new Error(`${entry}: the prefix length must be 0-${max}`);
    return { kind: 'cidr', address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
  }
  if (slash !== -1) throw new Error(`${entry}: not a CIDR (e.g. 10.0.0.0/8 or fd00::/8)`);
  if (text.startsWith('*.') && HOSTNAME.test(text.slice(2)))
    return { kind: 'suffix', suffix: text.slice(2).replace(/\.$/, '') };
  const host = text.replace(/\.$/, '');
  if (HOSTNAME.test(host)) return { kind: 'host', host };
  throw new Error(
    `${entry}: expected a CIDR (10.0.0.0/8), an address, a hostname (erp.internal) or *.suffix (*.corp.example)`,
  );
}
