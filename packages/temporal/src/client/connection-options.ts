import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { TLSConfig } from '@temporalio/client';

/**
 * Terminology
 * - PEM source: a certificate or key given either as a file path (read once,
 *   at start-up) or as the PEM text itself; `setting` is the environment
 *   variable it came from, so every error can name what to fix.
 * - secured Temporal: a frontend reached over TLS, optionally with a client
 *   certificate (mTLS) or an API key (Temporal Cloud).
 */
export type PemSource = { setting: string; path: string } | { setting: string; data: string };

/** The Temporal part of the parsed config (structurally; this package does not read config). */
export interface TemporalConnectionSettings {
  address: string;
  tls: {
    serverCa: PemSource | null;
    serverName: string | null;
    client: { cert: PemSource; key: PemSource } | null;
  } | null;
  apiKey: string | null;
}

/** A setting that cannot be used as given: unreadable file, not PEM, wrong credentials. */
export class TemporalConnectionSettingsError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`${setting}: ${message}`);
    this.name = 'TemporalConnectionSettingsError';
  }
}

function readPem(source: PemSource, kind: 'CERTIFICATE' | 'PRIVATE KEY'): Buffer {
  let text: string;
  if ('path' in source) {
    try {
      text = readFileSync(source.path, 'utf8');
    } catch (error) {
      throw new TemporalConnectionSettingsError(
        source.setting,
        `cannot read ${source.path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  } else {
    text = source.data;
  }
  // "PRIVATE KEY" also matches "RSA PRIVATE KEY" and "EC PRIVATE KEY".
  if (!text.includes('-----BEGIN ') || !text.includes(`${kind}-----`)) {
    throw new TemporalConnectionSettingsError(source.setting, `expected PEM text containing a ${kind} block`);
  }
  return Buffer.from(text, 'utf8');
}

/**
 * Connection options shared by the client `Connection` and the worker's
 * `NativeConnection` (both take `address`, `tls` and `apiKey`). Files are read
 * here, once; a missing or malformed one throws TemporalConnectionSettingsError
 * naming its setting.
 */
export function temporalConnectionOptions(settings: TemporalConnectionSettings): {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
} {
  const options: { address: string; tls?: TLSConfig; apiKey?: string } = { address: settings.address };
  if (settings.tls !== null) {
    const tls: TLSConfig = {};
    if (settings.tls.serverCa !== null) tls.serverRootCACertificate = readPem(settings.tls.serverCa, 'CERTIFICATE');
    if (settings.tls.serverName !== null) tls.serverNameOverride = settings.tls.serverName;
    if (settings.tls.client !== null) {
      tls.clientCertPair = {
        crt: readPem(settings.tls.client.cert, 'CERTIFICATE'),
        key: readPem(settings.tls.client.key, 'PRIVATE KEY'),
      };
    }
    options.tls = tls;
  }
  if (settings.apiKey !== null) options.apiKey = settings.apiKey;
  return options;
}

function messagesOf(error: unknown): string {
  const parts: string[] = [];
  for (let current: unknown = error, depth = 0; current !== null && current !== undefined && depth < 6; depth++) {
    if (current instanceof Error) parts.push(current.message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(' | ');
}

const AUTH_FAILURE = /unauthenticated|permission ?denied|invalid api key|request unauthorized/i;

/** Codes Node's TLS client gives when the server's certificate is not trusted. */
const UNTRUSTED_SERVER = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

type Handshake =
  | { kind: 'unreachable' }
  | { kind: 'not_tls'; detail: string }
  | { kind: 'server_untrusted'; detail: string }
  | { kind: 'name_mismatch'; detail: string }
  | { kind: 'client_refused'; detail: string }
  | { kind: 'ok' };

/**
 * One TLS handshake with Node's own TLS client, using the same settings the
 * SDK uses. The SDK's errors for a refused handshake are a bare "transport
 * error" or a connect deadline; this tells which side refused and why. A
 * server that refuses a client certificate completes the TLS 1.3 handshake
 * and then sends an alert, so the socket is watched briefly after it.
 */
async function probeHandshake(address: string, options: ConnectionOptions, timeoutMs: number): Promise<Handshake> {
  const separator = address.lastIndexOf(':');
  const host = address.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(separator + 1));
  return await new Promise<Handshake>((resolve) => {
    let settled = false;
    let secured = false;
    const socket = tlsConnect({
      ...options,
      host,
      port,
      ALPNProtocols: ['h2'],
      ...(isIP(host) === 0 && options.servername === undefined ? { servername: host } : {}),
    });
    const done = (result: Handshake) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(secured ? { kind: 'ok' } : { kind: 'unreachable' }), timeoutMs);
    socket.once('secureConnect', () => {
      secured = true;
      // Give the server a moment to send an alert about our certificate; HTTP/2 clients talk first, so a silent server is fine.
      setTimeout(() => done({ kind: 'ok' }), 300);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      const code = error.code ?? '';
      const detail = `${code} ${error.message}`.trim();
      if (
        code === 'ECONNREFUSED' ||
        code === 'ENOTFOUND' ||
        code === 'EAI_AGAIN' ||
        code === 'ETIMEDOUT' ||
        code === 'EHOSTUNREACH'
      )
        done({ kind: 'unreachable' });
      else if (UNTRUSTED_SERVER.has(code)) done({ kind: 'server_untrusted', detail });
      else if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') done({ kind: 'name_mismatch', detail });
      else if (secured || /alert|certificate required|unknown ca|bad certificate/i.test(error.message))
        done({ kind: 'client_refused', detail });
      else if (/wrong version number|packet length too long|unexpected eof|ECONNRESET/i.test(detail))
        done({ kind: 'not_tls', detail });
      else done({ kind: 'not_tls', detail });
    });
    socket.once('close', () =>
      done(
        secured
          ? { kind: 'client_refused', detail: 'the server closed the connection right after the handshake' }
          : { kind: 'not_tls', detail: 'the server closed the connection during the handshake' },
      ),
    );
  });
}

/**
 * Whether a failed connect is a settings problem that retrying cannot fix,
 * and if so an error naming the setting to change: the server's certificate
 * is not trusted (TEMPORAL_TLS_SERVER_CA_CERT_*), its name does not match
 * (TEMPORAL_TLS_SERVER_NAME), the server refused our client certificate or
 * wants one (TEMPORAL_TLS_CLIENT_CERT_*), TLS is on against a plain server or
 * off against a TLS one (TEMPORAL_TLS), or the credentials were refused
 * (TEMPORAL_API_KEY). Undefined for anything else — typically a server that
 * is not up yet, which is worth retrying.
 */
export async function diagnoseTemporalConnectFailure(
  error: unknown,
  settings: TemporalConnectionSettings,
  options: { timeoutMs?: number } = {},
): Promise<TemporalConnectionSettingsError | undefined> {
  const text = messagesOf(error);
  if (AUTH_FAILURE.test(text)) {
    const setting =
      settings.apiKey !== null ? 'TEMPORAL_API_KEY' : (settings.tls?.client?.cert.setting ?? 'TEMPORAL_API_KEY');
    return new TemporalConnectionSettingsError(
      setting,
      `Temporal at ${settings.address} refused the credentials (${text})`,
    );
  }
  const timeoutMs = options.timeoutMs ?? 3_000;
  const tls = settings.tls;
  if (tls === null) {
    // Does the server speak TLS? Then it is a TLS frontend and we connected in plain text.
    const result = await probeHandshake(settings.address, { rejectUnauthorized: false }, timeoutMs);
    if (result.kind === 'ok' || result.kind === 'client_refused') {
      return new TemporalConnectionSettingsError(
        'TEMPORAL_TLS',
        `Temporal at ${settings.address} expects TLS but TLS is off; set TEMPORAL_TLS=true (and TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA, TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH for mTLS)`,
      );
    }
    return undefined;
  }
  const connectOptions = temporalConnectionOptions(settings);
  const result = await probeHandshake(
    settings.address,
    {
      rejectUnauthorized: true,
      ...(connectOptions.tls?.serverRootCACertificate === undefined
        ? {}
        : { ca: Buffer.from(connectOptions.tls.serverRootCACertificate) }),
      ...(connectOptions.tls?.clientCertPair === undefined
        ? {}
        : {
            cert: Buffer.from(connectOptions.tls.clientCertPair.crt),
            key: Buffer.from(connectOptions.tls.clientCertPair.key),
          }),
      ...(tls.serverName === null ? {} : { servername: tls.serverName }),
    },
    timeoutMs,
  );
  switch (result.kind) {
    case 'unreachable':
    case 'ok':
      return undefined;
    case 'not_tls':
      return new TemporalConnectionSettingsError(
        'TEMPORAL_TLS',
        `Temporal at ${settings.address} did not complete a TLS handshake (${result.detail}); is it a plain-text endpoint? Then unset the TLS settings`,
      );
    case 'server_untrusted':
      return new TemporalConnectionSettingsError(
        tls.serverCa?.setting ?? 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
        `the certificate of Temporal at ${settings.address} is not signed by ${tls.serverCa === null ? 'a CA this system trusts; set TEMPORAL_TLS_SERVER_CA_CERT_PATH to its CA' : 'this CA'} (${result.detail})`,
      );
    case 'name_mismatch':
      return new TemporalConnectionSettingsError(
        'TEMPORAL_TLS_SERVER_NAME',
        `the certificate of Temporal at ${settings.address} is for another name (${result.detail}); set TEMPORAL_TLS_SERVER_NAME to the name it carries`,
      );
    case 'client_refused':
      return new TemporalConnectionSettingsError(
        tls.client?.cert.setting ?? 'TEMPORAL_TLS_CLIENT_CERT_PATH',
        tls.client === null
          ? `Temporal at ${settings.address} requires a client certificate (mTLS); set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (${result.detail})`
          : `Temporal at ${settings.address} refused this client certificate (${result.detail}); check that it is signed by the CA the server trusts and pairs with ${tls.client.key.setting}`,
      );
  }
}
