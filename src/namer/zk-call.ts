import type * as Zk from 'node-zookeeper-client';

/** A ZooKeeper request that got no answer in time (the session may still be alive). */
export class ZkTimeoutError extends Error {}

/** node-zookeeper-client's callback shape. */
export type ZkCallback<T> = (err: Error | Zk.Exception | null, value: T) => void;

/**
 * One callback-style node-zookeeper-client request as a promise, rejected with
 * {@link ZkTimeoutError} after `timeoutMs`. A ZooKeeper exception is rejected as an Error that
 * keeps its `getCode()`, so callers can tell CONNECTION_LOSS and NODE_EXISTS apart.
 */
export function zkCall<T>(timeoutMs: number, what: string, start: (cb: ZkCallback<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new ZkTimeoutError(`ZooKeeper ${what} got no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    try {
      start((err, value) => {
        clearTimeout(timer);
        if (err) reject(err instanceof Error ? err : Object.assign(new Error(err.toString()), { getCode: () => err.getCode() }));
        else resolve(value);
      });
    } catch (e) {
      clearTimeout(timer);
      reject(e instanceof Error ? e : new Error(String(e)));
    }
  });
}
