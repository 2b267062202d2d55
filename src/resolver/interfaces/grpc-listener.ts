import { readFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import type { ServerTlsConfig } from '../../config/tls.js';
import { errorMessage } from '../../core/errors.js';
import { InterfaceTlsError } from '../errors.js';

// What the resolver's gRPC interfaces (mesh, destination) share: credentials from the interface's
// `tls`, binding, and a graceful stop. Loaded only with them (dynamic imports).

/**
 * Server defaults: requests are a root, a name and a dtab, so 1 MiB is far beyond any real one;
 * a client that stops answering PINGs is dropped (its watches released) within 30 s + 10 s.
 */
export const GRPC_SERVER_DEFAULTS = { maxRequestBytes: 1024 * 1024, keepaliveTimeMs: 30_000, keepaliveTimeoutMs: 10_000 } as const;

/** Plaintext, or TLS from the interface's certificate and key (and client CA, which then requires client certificates). */
export async function serverCredentials(kind: string, tls: ServerTlsConfig | undefined): Promise<grpc.ServerCredentials> {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  const read = async (path: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (e) {
      throw new InterfaceTlsError(`${kind}: cannot read ${path}: ${errorMessage(e)}`, { cause: e });
    }
  };
  const [cert, key, ca] = await Promise.all([read(tls.certPath), read(tls.keyPath), tls.caCertPath === undefined ? null : read(tls.caCertPath)]);
  return grpc.ServerCredentials.createSsl(ca, [{ cert_chain: cert, private_key: key }], ca !== null);
}

/** Binds `server` to ip:port (0 picks a port); resolves with the port bound. */
export function bindServer(server: grpc.Server, ip: string, port: number, creds: grpc.ServerCredentials): Promise<number> {
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, creds, (err, p) => (err ? reject(err) : resolve(p)));
  });
}

/** Stops accepting; calls still running after `graceMs` are dropped. */
export function shutdownServer(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    timer.unref();
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** `http://127.0.0.1:4321`, `https://[::1]:8086`. */
export function grpcUrl(tls: boolean, ip: string, port: number): string {
  return `${tls ? 'https' : 'http'}://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
}
