#!/usr/bin/env node
// prx's RSS while a 64 MiB request and then a 64 MiB response stream through an h2 router
// (issue #17's target: growth under 16 MiB). Starts an http2 backend and bin/prx on free
// 127.0.0.1 ports, samples prx's VmRSS every 20 ms, and prints baseline, peak and growth.
//   npm run build && node scripts/h2-large-rss.mjs [--mib 64]
import http2 from 'node:http2';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const mibArg = process.argv.indexOf('--mib');
const SIZE = (mibArg > 0 ? Number(process.argv[mibArg + 1]) : 64) * (1 << 20);
const CHUNK = Buffer.alloc(64 * 1024, 'x');
const prxBin = fileURLToPath(new URL('../bin/prx', import.meta.url));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Writes SIZE bytes to `w` with back-pressure, then ends it. */
function pump(w) {
  let sent = 0;
  const more = () => {
    while (sent < SIZE) {
      sent += CHUNK.length;
      if (!w.write(CHUNK)) return void w.once('drain', more);
    }
    w.end();
  };
  more();
}

const backend = http2.createServer();
backend.on('stream', (st, h) => {
  if (h[':path'] === '/up') {
    let n = 0;
    st.on('data', (c) => (n += c.length));
    st.on('end', () => {
      st.respond({ ':status': 200 });
      st.end(String(n));
    });
    return;
  }
  st.respond({ ':status': 200 });
  pump(st);
});
await new Promise((r) => backend.listen(0, '127.0.0.1', r));
const [port, admin] = [await freePort(), await freePort()];
const dir = mkdtempSync(join(tmpdir(), 'prx-h2-rss-'));
writeFileSync(join(dir, 'prx.yaml'), `routers:\n- protocol: h2\n  dtab: /svc/* => /$/inet/127.0.0.1/${backend.address().port};\n  servers: [{port: ${port}}]\nadmin: {port: ${admin}}\n`);
const prx = spawn(prxBin, [join(dir, 'prx.yaml')], { stdio: 'ignore' });
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${prx.pid}/status`, 'utf8'))[1]) / 1024;

const session = await new Promise((resolve, reject) => {
  const deadline = Date.now() + 10_000;
  const tryConnect = () => {
    const s = http2.connect(`http://127.0.0.1:${port}`);
    s.once('connect', () => resolve(s));
    s.once('error', () => (Date.now() > deadline ? reject(new Error('prx did not start')) : setTimeout(tryConnect, 100)));
  };
  tryConnect();
});
const call = (path, body) =>
  new Promise((resolve, reject) => {
    const q = session.request({ ':method': body ? 'POST' : 'GET', ':path': path, ':authority': 'big' });
    let n = 0;
    let text = '';
    q.on('data', (c) => {
      n += c.length;
      if (n < 64) text += c;
    });
    q.on('error', reject);
    q.on('close', () => resolve({ n, text }));
    if (body) pump(q);
    else q.end();
  });

await call('/up', false); // warm-up: the session and the route exist before the baseline
const base = rss();
let peak = base;
const timer = setInterval(() => (peak = Math.max(peak, rss())), 20);
const up = await call('/up', true);
const down = await call('/down', false);
clearInterval(timer);
session.close();
prx.kill();
backend.close();
rmSync(dir, { recursive: true, force: true });
const ok = Number(up.text) === SIZE && down.n === SIZE;
console.log(`request ${Number(up.text)} bytes, response ${down.n} bytes: ${ok ? 'complete' : 'INCOMPLETE'}`);
console.log(`prx RSS: baseline ${base.toFixed(1)} MiB, peak ${peak.toFixed(1)} MiB, growth ${(peak - base).toFixed(1)} MiB (target < 16)`);
process.exitCode = ok ? 0 : 1;
