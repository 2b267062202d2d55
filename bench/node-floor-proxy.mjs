// The smallest useful Node HTTP/1.1 reverse proxy: node:http on both sides, a keep-alive agent, no
// dependencies, no routing. scripts/rss-floor.mjs runs it next to prx as the memory floor that
// any proxy on this Node version starts from.
//
//   node bench/node-floor-proxy.mjs <listen port> <upstream port>
import http from 'node:http';

const [port, upstream] = process.argv.slice(2).map(Number);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
http
  .createServer((req, res) => {
    const out = http.request({ host: '127.0.0.1', port: upstream, method: req.method, path: req.url, headers: req.headers, agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    req.pipe(out);
  })
  .listen(port, '127.0.0.1');
