import { readFile } from 'node:fs/promises';
import type { ServerTlsConfig } from '../../config/tls.js';
import { errorMessage } from '../../core/errors.js';
import { GrpcServer, type GrpcServerOptions } from '../../protocol/h2/grpc-server.js';
import { InterfaceTlsError } from '../errors.js';

// What the resolver's gRPC interfaces (mesh, destination) share: a server on prx's own HTTP/2
// codec with credentials from the interface's `tls`. Loaded only with them (dynamic imports).

/**
 * Server defaults: requests are a root, a name and a dtab, so 1 MiB is far beyond any real one;
 * a client that stops answering PINGs is dropped (its watches released) within 30 s + 10 s.
 */
export const GRPC_SERVER_DEFAULTS = { maxRequestBytes: 1024 * 1024, keepaliveTimeMs: 30_000, keepaliveTimeoutMs: 10_000 } as const;

/**
 * A gRPC server, plaintext or TLS from the interface's certificate and key (and client CA, which
 * then requires client certificates); a file that cannot be read is an {@link InterfaceTlsError}.
 */
export async function grpcServer(kind: string, tls: ServerTlsConfig | undefined, options: Omit<GrpcServerOptions, 'tls'>): Promise<GrpcServer> {
  if (tls === undefined) return new GrpcServer(options);
  const read = async (path: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (e) {
      throw new InterfaceTlsError(`${kind}: cannot read ${path}: ${errorMessage(e)}`, { cause: e });
    }
  };
  const [cert, key, ca] = await Promise.all([read(tls.certPath), read(tls.keyPath), tls.caCertPath === undefined ? undefined : read(tls.caCertPath)]);
  try {
    return new GrpcServer({ ...options, tls: { cert, key, ca } });
  } catch (e) {
    // A key that does not match its certificate, or PEM that does not parse.
    throw new InterfaceTlsError(`${kind}: ${errorMessage(e)}`, { cause: e });
  }
}

/** `http://127.0.0.1:4321`, `https://[::1]:8086`. */
export function grpcUrl(tls: boolean, ip: string, port: number): string {
  return `${tls ? 'https' : 'http'}://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
}
