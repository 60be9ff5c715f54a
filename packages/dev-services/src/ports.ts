import { createServer } from 'node:net';

/** Asks the kernel for a free loopback port. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the port the kernel assigned'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on host:port. */
export async function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listened on ${host}:${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
