// The soak's backends, in their own process so their CPU is not charged to the proxy or the load
// generator. Prints one JSON line of their ports on stdout once all listen (127.0.0.1, port 0):
//   good     two node:http servers answering 200 with 64 bytes (the legitimate routes)
//   upgrade  node:http answering `Upgrade` requests with 403 (path /403) or 200, never 101
//   silent   accepts and reads, never answers (abandoned requests)
//   bareLf   answers every request head with a bare-LF response head, then stays open
//   badChunk answers `Transfer-Encoding: chunked` with the chunk size `zz`, then stays open
import * as http from 'node:http';
import * as net from 'node:net';

const HOLD_MS = 120_000;
const BODY = Buffer.from('a'.repeat(64));

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
}

function good(): http.Server {
  const s = http.createServer((req, res) => {
    req.resume();
    req.once('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': BODY.length });
      res.end(BODY);
    });
  });
  s.keepAliveTimeout = 75_000;
  return s;
}

function upgradeRefuser(): http.Server {
  const s = http.createServer((req, res) => {
    req.resume();
    const status = req.url === '/403' ? 403 : 200;
    res.writeHead(status, { 'content-type': 'text/plain', 'content-length': 2 });
    res.end('no');
  });
  s.keepAliveTimeout = 75_000;
  return s;
}

/** A raw server that answers each request head with `answer` and keeps the connection open. */
function raw(answer: string | null): net.Server {
  return net.createServer((socket) => {
    socket.setTimeout(HOLD_MS, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    let seen = '';
    socket.on('data', (chunk: Buffer) => {
      if (answer === null) return;
      seen += chunk.toString('latin1');
      while (seen.includes('\r\n\r\n')) {
        seen = seen.slice(seen.indexOf('\r\n\r\n') + 4);
        socket.write(answer);
      }
    });
  });
}

const servers = {
  good: [good(), good()],
  upgrade: upgradeRefuser(),
  silent: raw(null),
  bareLf: raw('HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 2\n\nok'),
  badChunk: raw('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n'),
};
const ports = {
  good: await Promise.all(servers.good.map(listen)),
  upgrade: await listen(servers.upgrade),
  silent: await listen(servers.silent),
  bareLf: await listen(servers.bareLf),
  badChunk: await listen(servers.badChunk),
};
process.stdout.write(`${JSON.stringify(ports)}\n`);
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
// The soak owns this process: when it goes, so do the backends.
process.stdin.resume();
process.stdin.once('end', () => process.exit(0));
