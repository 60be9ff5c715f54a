import { ForbiddenError } from '@activity-core/contracts';
import type { FastifyInstance } from 'fastify';

/**
 * With authentication off the API listens on loopback only, but a listening
 * address alone does not keep a browser out: a web page the developer visits
 * can point its own host name at 127.0.0.1 (DNS rebinding) and then call the
 * API as a same-origin page, reaching every route and, through `http` tasks,
 * the worker's secrets. Such a request still carries the page's host name in
 * `Host`, so while no keys are configured only loopback names are answered:
 * `localhost` and its subdomains (which resolvers and browsers keep on
 * loopback), 127.0.0.0/8 and `[::1]`, with or without a port. Anything else,
 * or no `Host` at all, is refused before routing, authentication or any work.
 */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const value = host.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0) return false;
    const rest = value.slice(end + 1);
    return value.slice(1, end) === '::1' && (rest === '' || /^:\d{1,5}$/.test(rest));
  }
  const match = /^([^:]+)(?::\d{1,5})?$/.exec(value);
  if (match === null) return false;
  const name = match[1]!.replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  return octets !== null && octets.slice(1).every((octet) => Number(octet) <= 255);
}

/** Refuses non-loopback `Host` names while authentication is off (`API_KEYS` empty). */
export function registerLoopbackHostCheck(app: FastifyInstance, options: { authenticationEnabled: boolean }): void {
  if (options.authenticationEnabled) return;
  app.addHook('onRequest', async (request) => {
    const host = request.headers.host;
    if (isLoopbackHost(host)) return;
    throw new ForbiddenError(
      'authentication is off (API_KEYS is empty), so only loopback host names are answered: use localhost, 127.0.0.1 or [::1], or set API_KEYS',
      [{ path: 'headers.host', message: 'must be localhost, a 127.0.0.0/8 address or [::1] while API_KEYS is empty' }],
    );
  });
}
