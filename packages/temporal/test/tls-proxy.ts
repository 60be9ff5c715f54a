import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server, type TLSSocket } from 'node:tls';

/** Files of a throwaway PKI made with the openssl CLI: one CA, a server and a client certificate. */
export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA and, signed by it, a server certificate for 127.0.0.1/localhost and a client certificate. */
export function makePki(name: string, dir = mkdtempSync(join(tmpdir(), `pki-${name}-`))): TestPki {
  const file = (base: string) => join(dir, base);
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    `/CN=${name} test CA`,
  ]);
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=localhost',
  ]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  ]);
  writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
  openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'client.key',
    '-out',
    'client.csr',
    '-subj',
    `/CN=${name} worker`,
  ]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'client.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'client.pem',
    '-days',
    '2',
    '-extfile',
    'client.ext',
  ]);
  return {
    dir,
    caCert: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
  };
}

export interface TlsProxy {
  address: string;
  /** Handshakes refused so far (bad or missing client certificate). */
  refused: number;
  /** Connections that completed the handshake with a valid client certificate. */
  accepted: number;
  close(): Promise<void>;
}

/**
 * A TLS-terminating TCP proxy in front of a plaintext gRPC server: it offers
 * ALPN h2, requires a client certificate signed by `pki`'s CA, and forwards
 * the decrypted bytes (HTTP/2 frames) to `target` unchanged — what a
 * TLS-terminating load balancer in front of a Temporal frontend does.
 */
export async function startTlsProxy(pki: TestPki, target: string): Promise<TlsProxy> {
  const [targetHost, targetPort] = [
    target.slice(0, target.lastIndexOf(':')),
    Number(target.slice(target.lastIndexOf(':') + 1)),
  ];
  const sockets = new Set<Socket>();
  const state = { refused: 0, accepted: 0 };
  const server: Server = createServer(
    {
      cert: readFileSync(pki.serverCert),
      key: readFileSync(pki.serverKey),
      ca: readFileSync(pki.caCert),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (tlsSocket: TLSSocket) => {
      state.accepted += 1;
      const upstream = connect({ host: targetHost, port: targetPort });
      sockets.add(tlsSocket);
      sockets.add(upstream);
      const end = () => {
        tlsSocket.destroy();
        upstream.destroy();
        sockets.delete(tlsSocket);
        sockets.delete(upstream);
      };
      tlsSocket.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
      tlsSocket.pipe(upstream).pipe(tlsSocket);
    },
  );
  server.on('tlsClientError', () => {
    state.refused += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    get refused() {
      return state.refused;
    },
    get accepted() {
      return state.accepted;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
