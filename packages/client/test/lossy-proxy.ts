/**
 * An HTTP proxy in front of the real API that loses answers on purpose: the
 * network faults a client's retries exist for, without touching the server.
 *
 * - `forward`: pass the request on and the answer back;
 * - `drop-answer`: pass the request on, wait until the API has answered (so it
 *   has done the work), then cut the client's connection without a byte;
 * - `reset`: cut the connection before the API sees anything;
 * - `{ status, headers, body }`: answer this instead (a load balancer's 503).
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ProxyAction =
  'forward' | 'drop-answer' | 'reset' | { status: number; headers?: Record<string, string>; body?: string };

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  action: ProxyAction;
}

export interface LossyProxy {
  url: string;
  /** Every request that reached the proxy, in order. */
  seen: SeenRequest[];
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
]);

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startLossyProxy(
  target: string,
  decide: (request: { method: string; url: string; index: number }) => ProxyAction,
): Promise<LossyProxy> {
  const seen: SeenRequest[] = [];
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    void (async () => {
      const method = req.method ?? 'GET';
      const url = req.url ?? '/';
      const action = decide({ method, url, index: seen.length });
      seen.push({ method, url, headers: req.headers, action });
      const body = await readAll(req);
      if (action === 'reset') {
        req.socket.destroy();
        return;
      }
      if (typeof action === 'object') {
        res.writeHead(action.status, action.headers ?? {});
        res.end(action.body ?? '');
        return;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'host'),
      );
      const answer = await new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>(
        (resolve, reject) => {
          const forwarded = httpRequest(
            {
              host: upstream.hostname,
              port: upstream.port,
              method,
              path: url,
              headers: { ...headers, 'content-length': String(body.length) },
            },
            (response) => {
              readAll(response).then(
                (content) => resolve({ status: response.statusCode ?? 502, headers: response.headers, body: content }),
                reject,
              );
            },
          );
          forwarded.on('error', reject);
          forwarded.end(body);
        },
      );
      if (action === 'drop-answer') {
        // The API has answered: the work is done, and the client will never know.
        req.socket.destroy();
        return;
      }
      const back = Object.fromEntries(
        Object.entries(answer.headers).filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'content-length'),
      ) as Record<string, string | string[]>;
      res.writeHead(answer.status, { ...back, 'content-length': String(answer.body.length) });
      res.end(answer.body);
    })().catch((error: unknown) => {
      res.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
