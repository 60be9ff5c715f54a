import type { TestStack } from '../../../test/harness';

/** Puts the stack's API on a loopback port (the client talks real HTTP) and returns its base URL. */
export async function listen(stack: TestStack): Promise<string> {
  await stack.api.server.listen({ host: '127.0.0.1', port: 0 });
  const address = stack.api.server.server.address();
  if (address === null || typeof address === 'string') throw new Error('the API is not listening on a TCP port');
  return `http://127.0.0.1:${address.port}`;
}
