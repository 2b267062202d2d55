import type * as Zk from 'node-zookeeper-client';
import { z } from 'zod';
import { ip, port, lazySchema } from '../config/index.js';

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

/** A ZooKeeper ensemble as the serversets announcer and namer take it: `[{host, port}]`, port 2181 by default. */
export const zkAddrsSchema = lazySchema(() => z
  .array(z.strictObject({ host: ip, port: port.default(2181) }))
  .min(1, { error: 'expected at least one address' }));

/** The client's connect string, `host:port,host:port`. */
export function zkConnectString(addrs: readonly { readonly host: string; readonly port: number }[]): string {
  return addrs.map((a) => `${a.host}:${a.port}`).join(',');
}

/** The ZooKeeper exception code of a rejected {@link zkCall} (undefined for timeouts and other errors). */
export function zkCodeOf(e: unknown): number | undefined {
  const f = (e as { getCode?: unknown } | undefined)?.getCode;
  return typeof f === 'function' ? (f.call(e) as number) : undefined;
}

/** Ends a session (its ephemeral nodes go with it); a client that cannot reach ZooKeeper is given up after a second. */
export function closeZkClient(client: Zk.Client): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1000).unref();
    client.once('disconnected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.close();
  });
}
