import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What `/echo` answers: the request it received, as JSON. */
export interface EchoAnswer {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** The body parsed as JSON when it is JSON, else the text; null without a body. */
  body: unknown;
  received_at: string;
}

export interface EchoServer {
  /** `http://{host}:{port}/echo` */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** The port `npm start` serves the echo endpoint on unless DEV_ECHO_PORT says otherwise (the README's walkthrough uses it). */
export const DEFAULT_ECHO_PORT = 3001;

/** Largest body /echo reads; more is a 413. */
export const ECHO_BODY_LIMIT_BYTES = 1024 * 1024;

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * A tiny HTTP endpoint for trying activities on one machine: `npm start`
 * serves it so an `http` task has something to call without the internet.
 * Any method on `/echo` answers 200 with the request as JSON; other paths
 * are 404. Listens on loopback only by default.
 */
export async function startEchoServer(options: { port: number; host?: string }): Promise<EchoServer> {
  const host = options.host ?? '127.0.0.1';
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://echo.invalid');
    if (url.pathname !== '/echo') {
      answer(res, 404, { error: `no such path ${url.pathname.slice(0, 200)}; the echo endpoint is /echo` });
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on('data', (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > ECHO_BODY_LIMIT_BYTES) {
        refused = true;
        answer(res, 413, { error: `the body is over ${ECHO_BODY_LIMIT_BYTES} bytes` });
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (refused) return;
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      if (text !== '') {
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      }
      const echoed: EchoAnswer = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
        received_at: new Date().toISOString(),
      };
      answer(res, 200, echoed);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/echo`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
