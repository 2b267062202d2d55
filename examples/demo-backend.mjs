#!/usr/bin/env node
// A tiny HTTP service for trying prx: answers every request with what it received, including the
// headers prx adds (prx-dst-service, prx-dst-client, …). Port: $PORT or 8888.
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 8888);

const server = createServer((req, res) => {
  const prxHeaders = Object.entries(req.headers)
    .filter(([name]) => name.startsWith('prx-'))
    .map(([name, value]) => `  ${name}: ${String(value)}`);
  const body = [
    `Hello from the demo backend on port ${port}!`,
    `${req.method} ${req.url} (Host: ${req.headers.host ?? '-'})`,
    ...(prxHeaders.length > 0 ? ['prx headers:', ...prxHeaders] : []),
    '',
  ].join('\n');
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
});

server.listen(port, '127.0.0.1', () => {
  console.log(`demo backend listening on http://127.0.0.1:${port} (pid ${process.pid})`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
