// Start-up cost: node:tls, node:https, node:crypto, node:zlib and node:inspector are loaded only
// by the features that need them (TLS, forwarded client certificates, compression, profiles),
// not by the built proxy starting and serving plain HTTP. Each costs heap and start-up time.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BUNDLE = join(REPO, 'dist', 'bundle', 'prx.js');
const WATCHED = ['tls', 'https', 'crypto', 'zlib', 'inspector'];

// Runs in a child: a backend, the bundled proxy in front of it, one request through the proxy,
// then the watched modules that were loaded, as the last stderr line.
const CHILD = `
import { createServer, get } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const listen = (s) => new Promise((r) => s.listen(0, '127.0.0.1', () => r(s.address().port)));
const free = async () => { const s = createServer(); const p = await listen(s); await new Promise((r) => s.close(r)); return p; };
const backend = createServer((req, res) => res.end('backend ok'));
const backendPort = await listen(backend);
const [adminPort, routerPort] = [await free(), await free()];
const file = join(mkdtempSync(join(tmpdir(), 'prx-lazy-')), 'prx.json');
writeFileSync(file, JSON.stringify({ admin: { port: adminPort },
  routers: [{ protocol: 'http', dtab: '/svc=>/$/inet/127.0.0.1/' + backendPort, servers: [{ port: routerPort }] }] }));
const { main } = await import(process.env.BUNDLE_URL);
void main([file]); // resolves only when the proxy stops
const body = await new Promise((resolve, reject) => {
  const attempt = (n) => get({ port: routerPort, host: '127.0.0.1', path: '/', headers: { host: 'web' } }, (res) => {
    let b = ''; res.on('data', (c) => (b += c)); res.on('end', () => resolve(res.statusCode + ' ' + b));
  }).on('error', (e) => (n > 0 ? setTimeout(() => attempt(n - 1), 50) : reject(e)));
  attempt(100);
});
const loaded = JSON.parse(process.env.WATCHED).filter((m) => process.moduleLoadList.includes('NativeModule ' + m));
process.stderr.write('\\n' + JSON.stringify({ body, loaded }) + '\\n');
process.exit(0);
`;

test('the built proxy starts and serves plain HTTP without loading tls, https, crypto, zlib or inspector', async () => {
  assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: npm test builds it (npm run build)`);
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
    cwd: REPO,
    env: { ...process.env, BUNDLE_URL: new URL(`file://${BUNDLE}`).href, WATCHED: JSON.stringify(WATCHED) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(killer);
  assert.equal(code, 0, err);
  const last = err.trim().split('\n').at(-1) ?? '';
  const report = JSON.parse(last) as { body: string; loaded: string[] };
  assert.equal(report.body, '200 backend ok');
  assert.deepEqual(report.loaded, []);
});
