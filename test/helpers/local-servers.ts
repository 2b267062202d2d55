// Small loopback servers the process-level tests share.
import * as http from 'node:http';
import { type AddressInfo, createServer } from 'node:net';

/** A port nothing listens on right now (listen on 0, then let go). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A backend on 127.0.0.1: `/slow?ms=N` answers `slow done` after N ms, anything else `backend ok` at once. */
export async function startSlowBackend(): Promise<{ readonly port: number; close(): void }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://backend.invalid');
    if (url.pathname !== '/slow') return void res.end('backend ok');
    const timer = setTimeout(() => res.end('slow done'), Number(url.searchParams.get('ms') ?? '0'));
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
