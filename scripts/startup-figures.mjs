#!/usr/bin/env node
// Start-up time and memory of `bin/prx` with examples/prx.yaml: from spawning the process to the
// first `pong` from /admin/ping, and its resident set size (RSS) at that moment, idle a second
// later, and after serving requests through the router. The example config is copied with free
// ports and its fs namer pointed at a demo backend this script starts, so nothing needs to be
// free beforehand. Builds dist/ first (`--no-build` skips it).
//
//   node scripts/startup-figures.mjs [--runs 5] [--requests 1000] [--no-build]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, get } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const root = fileURLToPath(new URL('../', import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const runs = option('--runs', 5);
const requests = option('--requests', 1000);

if (!args.includes('--no-build')) {
  // tsc emits even when some file has type errors; the figures only need the emitted JS.
  spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], {
    cwd: root,
    stdio: 'ignore',
  });
}

const freePort = () =>
  new Promise((resolve) => {
    const s = createTcpServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function httpGet(port, path, agent, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
  });
}

/** Resident set size of a process in MiB, from /proc (Linux). */
function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]);
  return kb / 1024;
}

// A backend for the example's `hello`, on a free port.
const backend = createServer((_req, res) => res.end('hello\n'));
await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));
const backendPort = backend.address().port;

const dir = mkdtempSync(join(tmpdir(), 'prx-figures-'));
mkdirSync(join(dir, 'disco'));
writeFileSync(join(dir, 'disco', 'hello'), `127.0.0.1 ${backendPort}\n`);
const example = parse(readFileSync(join(root, 'examples/prx.yaml'), 'utf8'));

async function oneRun(measureTraffic) {
  const adminPort = await freePort();
  const routerPort = await freePort();
  const config = structuredClone(example);
  config.admin.port = adminPort;
  config.namers[0].rootDir = join(dir, 'disco');
  config.routers[0].servers[0].port = routerPort;
  const path = join(dir, `prx-${adminPort}.yaml`);
  writeFileSync(path, stringify(config));

  const t0 = performance.now();
  // bin/prx as operators run it (its first line execs node with the proxy's V8 flags; same pid).
  const child = spawn(join(root, 'bin/prx'), [path], { cwd: root, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  let startupMs;
  for (;;) {
    try {
      const { body } = await httpGet(adminPort, '/admin/ping', false);
      if (body.trim() === 'pong') {
        startupMs = performance.now() - t0;
        break;
      }
    } catch {
      // Not listening yet.
    }
    if (child.exitCode !== null) throw new Error(`prx exited with status ${child.exitCode} before answering`);
    await sleep(2);
  }
  const rssAtPong = rssMiB(child.pid);
  // The first request through the router: binding, the namer's first answer and a new upstream connection.
  const proxied = await httpGet(routerPort, '/', false, { host: 'hello' });
  if (proxied.status !== 200) throw new Error(`first request through the proxy answered ${proxied.status}`);
  const firstProxiedMs = performance.now() - t0;
  const figures = { startupMs, firstProxiedMs, rssAtPong };
  if (measureTraffic) {
    await sleep(1000);
    figures.rssIdle = rssMiB(child.pid);
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    const t = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next++ < requests) {
          const { status } = await httpGet(routerPort, '/', agent, { host: 'hello' });
          if (status !== 200) throw new Error(`request through the proxy answered ${status}`);
        }
      }),
    );
    figures.requestsPerSec = requests / ((performance.now() - t) / 1000);
    agent.destroy();
    figures.rssAfterTraffic = rssMiB(child.pid);
  }
  const s0 = performance.now();
  child.kill('SIGTERM');
  const code = await exited;
  figures.shutdownMs = performance.now() - s0;
  if (code !== 0) throw new Error(`prx exited with status ${code} after SIGTERM`);
  return figures;
}

// Reference: a bare node process, start to exit.
const bare = [];
for (let i = 0; i < runs; i++) {
  const t = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  bare.push(performance.now() - t);
}

const results = [];
for (let i = 0; i < runs; i++) results.push(await oneRun(i === runs - 1));
backend.close();
rmSync(dir, { recursive: true, force: true });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs, unit, digits = 0) =>
  `median ${median(xs).toFixed(digits)} ${unit} (min ${Math.min(...xs).toFixed(digits)}, max ${Math.max(...xs).toFixed(digits)})`;
const last = results[results.length - 1];
console.log(`bin/prx examples/prx.yaml — Node ${process.version}, ${runs} runs`);
console.log(`| figure | value |`);
console.log(`|---|---|`);
console.log(`| start-up (spawn → first pong from /admin/ping) | ${fmt(results.map((r) => r.startupMs), 'ms')} |`);
console.log(`| spawn → first response proxied to the backend | ${fmt(results.map((r) => r.firstProxiedMs), 'ms')} |`);
console.log(`| bare \`node -e 0\` (spawn → exit), for reference | ${fmt(bare, 'ms')} |`);
console.log(`| RSS at first pong | ${fmt(results.map((r) => r.rssAtPong), 'MiB', 1)} |`);
console.log(`| RSS idle, 1 s later | ${last.rssIdle.toFixed(1)} MiB |`);
console.log(`| RSS after ${requests} requests through the router (10 concurrent) | ${last.rssAfterTraffic.toFixed(1)} MiB |`);
console.log(`| those requests | ${last.requestsPerSec.toFixed(0)} /s |`);
console.log(`| SIGTERM → exit (idle) | ${fmt(results.map((r) => r.shutdownMs), 'ms')} |`);
