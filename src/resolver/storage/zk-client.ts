// Helpers around node-zookeeper-client for the coordination-service store.
import type * as Zk from 'node-zookeeper-client';
export { hardenConnection } from '../../namer/zk-harden.js';

type ZkError = Error & { getCode?: () => number };

export function codeOf(e: unknown): number | undefined {
  const f = (e as ZkError | undefined)?.getCode;
  return typeof f === 'function' ? f.call(e) : undefined;
}

/** Closes a session; a client that cannot reach its server is given up after a second. */
export function closeClient(client: Zk.Client): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000);
    timer.unref();
    client.once('disconnected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.close();
  });
}
