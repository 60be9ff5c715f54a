import { ForbiddenError } from '@activity-core/contracts';
import type { FastifyInstance } from 'fastify';

/** The Host names a keyless (loopback-only) server answers: `localhost`, 127.0.0.0/8 and `[::1]`, with any port. */
export function isLoopbackHost(header: string | undefined): boolean {
  if (header === undefined) return false;
  const host = header.trim().toLowerCase();
  let name: string;
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end < 0) return false;
    const rest = host.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return false;
    name = host.slice(1, end);
    return name === '::1' || name === '0:0:0:0:0:0:0:1';
  }
  const colon = host.indexOf(':');
  if (colon >= 0 && !/^:\d{1,5}$/.test(host.slice(colon))) return false;
  name = colon < 0 ? host : host.slice(0, colon);
  // A fully qualified name may end in a dot.
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === 'localhost') return true;
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  return octets !== null && octets.slice(1).every((octet) => Number(octet) <= 255);
}

/**
 * With authentication off the server listens on loopback only, but a web page
 * the developer visits can still reach it through DNS rebinding: the browser
 * connects to 127.0.0.1 under the attacker's name. The Host header is what
 * gives that away, so every route (webhooks and health included: nothing is
 * served to other names) refuses a Host that is not a loopback name, before
 * anything else runs. With keys configured the keys protect the API and any
 * Host is answered (proxies and load balancers send their own).
 */
export function registerLoopbackHostCheck(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    // The header itself: fastify's request.host may come from X-Forwarded-Host, which the page can set.
    const host = request.headers.host;
    if (isLoopbackHost(host)) return;
    throw new ForbiddenError('authentication is off (API_KEYS is empty), so only loopback Host names are answered', [
      {
        path: 'headers.host',
        message: `${JSON.stringify((host ?? '').slice(0, 100))} is not localhost, 127.0.0.0/8 or [::1]; set API_KEYS to serve other names`,
      },
    ]);
  });
}
