#!/usr/bin/env node
// Watch fan-out of `bin/prx-resolver`: how many concurrent watches one resolver serves, what each
// costs in resident memory, and how long a dtab update takes to reach all of them. Starts the
// resolver (the build in dist/, in-memory storage, an fs namer over a temporary directory), opens
// N watches of one name from this process, writes a new dtab with a PUT, and times the arrival of
// the new value on every stream. Repeats for each N.
//
//   node scripts/resolver-figures.mjs [--watchers "1000 5000 10000"] [--updates 5] [--no-build]
//                                     [--interface http|mesh|destination|thrift] [--per-connection 1]
//                                     [--heap-snapshot DIR] [--settle-ms 1000]
//
// `http` (default): `watch=true` bind streams of the HTTP controller over raw sockets. `mesh`:
// gRPC StreamBoundTree calls on the `io.prx.mesh` interface; `destination`: `Get` calls on the
// `io.prx.destination` interface. Both gRPC clients are written by hand with node:http2 so the
// client side stays light, each call on its own HTTP/2 connection (as many proxies would);
// `--per-connection k` puts k calls on each connection instead (a proxy's binds and replica sets
// share its one connection to the resolver). `thrift`: long-polled `bind` calls on the
// `io.prx.thriftNameInterpreter` interface, each watcher a mux tag on its own connection (or k per
// connection), re-polling with the stamp of each answer as io.prx.resolver does; its calls are
// encoded by dist/'s codec, its mux frames by hand. `--heap-snapshot DIR` writes a heap snapshot of the
// resolver with all watchers open (for where the memory goes).
// Each connection is a socket on both sides; keep N/k below `ulimit -n`.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect as http2Connect } from 'node:http2';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const counts = String(option('--watchers', '1000 5000 10000')).split(/\s+/).filter(Boolean).map(Number);
const updates = Number(option('--updates', '5'));
const iface = String(option('--interface', 'http'));
if (!['http', 'mesh', 'destination', 'thrift'].includes(iface)) throw new Error(`--interface is http, mesh, destination or thrift, not ${iface}`);
const perConnection = Number(option('--per-connection', '1'));
const snapshotDir = option('--heap-snapshot', undefined);
// How long the watchers stay open before the resolver's RSS is read (its heap settles after the rush of connections).
const settleMs = Number(option('--settle-ms', '1000'));

if (!args.includes('--no-build')) {
  // bin/prx-resolver runs the bundle: compile, then bundle (what `npm run build` does).
  spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  spawnSync(process.execPath, [join(root, 'scripts/bundle.mjs')], { stdio: 'inherit', cwd: root });
}

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function http(port, method, path, body, headers = {}) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, body, headers });
  return { status: res.status, etag: res.headers.get('etag'), text: await res.text() };
}

/** Opens one watch; `onData` sees every chunk. */
function openWatch(port, path, onData) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: resolver\r\n\r\n`);
      resolve(socket);
    });
    socket.setEncoding('latin1');
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

/** Protobuf length-delimited field `tag` holding `bytes`. */
function ld(tag, bytes) {
  const len = [];
  for (let n = bytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      len.push(n);
      break;
    }
    len.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([(tag << 3) | 2, ...len]), bytes]);
}
const pathMsg = (...elems) => Buffer.concat(elems.map((e) => ld(1, Buffer.from(e))));
/** BindReq{root: /default, name: /svc/web} in a gRPC frame (uncompressed, 4-byte length). */
const BIND_FRAME = (() => {
  const msg = Buffer.concat([ld(1, pathMsg('default')), ld(2, pathMsg('svc', 'web'))]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
})();

/** GetDestination{scheme: k8s, path: web.default.svc.cluster.local:8080} in a gRPC frame. */
const GET_FRAME = (() => {
  const msg = Buffer.concat([ld(1, Buffer.from('k8s')), ld(2, Buffer.from('web.default.svc.cluster.local:8080'))]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
})();
const GRPC_CALLS = {
  mesh: { path: '/io.linkerd.mesh.Interpreter/StreamBoundTree', frame: BIND_FRAME },
  destination: { path: '/io.linkerd.proxy.destination.Destination/Get', frame: GET_FRAME },
};

/** Opens one server-streaming gRPC call, on `session` or a new HTTP/2 connection; `onData` sees every chunk. */
function openGrpcWatch(port, call, onData, shared) {
  return new Promise((resolve, reject) => {
    const session = shared ?? http2Connect(`http://127.0.0.1:${port}`);
    if (!shared) session.once('error', reject);
    const req = session.request({ ':method': 'POST', ':path': call.path, 'content-type': 'application/grpc', te: 'trailers' });
    req.setEncoding('latin1');
    req.on('data', onData);
    req.once('response', () => resolve({ session, destroy: () => session.destroy() }));
    req.end(call.frame);
  });
}

/**
 * One long-polled bind watch on the thrift name interface: a mux tag on `shared`'s connection or a
 * new one. Each answer goes to `onData` (as latin1 text: the bound id's segments show in it) and
 * is followed by the next poll, carrying the answer's stamp.
 */
async function openThriftWatch(port, onData, shared) {
  const codec = await thriftCodec();
  const conn = shared ?? (await muxConnection(port));
  const tag = conn.nextTag++;
  const poll = (stamp) => {
    const call = codec.encodeNamerCall('bind', tag, { dtab: '', name: { stamp, name: [Buffer.from('svc'), Buffer.from('web')], ns: 'default' }, clientId: [] });
    // Tdispatch: no contexts, no destination, no delegations, then the thrift call.
    const body = Buffer.concat([Buffer.alloc(6), call]);
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length + 4, 0);
    head.writeUInt32BE((2 << 24) | tag, 4);
    conn.socket.write(Buffer.concat([head, body]));
  };
  conn.replies.set(tag, (body) => {
    // Rdispatch: status, contexts (none from prx), then the thrift reply.
    const reply = body.subarray(3);
    onData(reply.toString('latin1'));
    queueRepoll(() => {
      const r = codec.decodeNamerReply('bind', reply);
      if (!('ok' in r.result)) throw new Error(`bind failed: ${JSON.stringify(r.result)}`);
      poll(r.result.ok.stamp);
    });
  });
  poll(Buffer.alloc(0));
  return { session: conn, destroy: () => conn.socket.destroy() };
}

/**
 * The thrift watchers' next polls. Each watcher stands for a proxy with a CPU of its own, which
 * polls again as soon as it has its answer; this one process cannot make ten thousand proxies'
 * polls in parallel. Made as answers arrived, they took this process a quarter of a second (a
 * socket write each) while later answers waited to be read, and those were seen late. The
 * resolver writes an update to every waiting poll in one turn of its loop, before it reads any
 * new poll, so holding the polls until every watcher has the update moves when the next polls
 * arrive, not when this update left. Outside a timed update they go out on the next turn.
 */
const repolls = { holding: false, queue: [] };
function queueRepoll(poll) {
  repolls.queue.push(poll);
  if (!repolls.holding && repolls.queue.length === 1) setImmediate(sendRepolls);
}
function sendRepolls() {
  const queue = repolls.queue;
  repolls.queue = [];
  for (const poll of queue) poll();
}

let codecModule;
function thriftCodec() {
  codecModule ??= import(join(root, 'dist/protocol/thrift/name-interface/messages.js'));
  return codecModule;
}

/** A mux connection (no handshake: prx's server takes Tdispatch from a session of the first version). */
function muxConnection(port) {
  return new Promise((resolve, reject) => {
    const conn = { socket: undefined, nextTag: 1, replies: new Map() };
    let buf = Buffer.alloc(0);
    const socket = connect(port, '127.0.0.1', () => resolve(conn));
    conn.socket = socket;
    socket.once('error', reject);
    socket.on('data', (d) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const size = buf.readUInt32BE(0);
        const word = buf.readUInt32BE(4);
        const type = word >>> 24;
        if (type === 0xfe) conn.replies.get(word & 0xffffff)?.(buf.subarray(8, 4 + size));
        buf = buf.subarray(4 + size);
      }
    });
  });
}

/** The endpoint of each fs name, and how its arrival shows in a destination `add`: TcpAddress.port (field 2) = port. */
const PORTS = { blue: 8081, green: 8082 };
const portField = (port) => String.fromCharCode(0x10, (port & 0x7f) | 0x80, port >> 7);

/**
 * Whether a chunk of a destination stream holds an `add` (Update field 1) of `port`. Each gRPC
 * message is checked on its own: the `remove` of the previous name, which trails its update's
 * `add`, carries the other port and must not count as the arrival of the next update.
 */
function destinationAdds(chunk, port) {
  const field = portField(port);
  for (let at = 0; at + 5 <= chunk.length; ) {
    const len = (chunk.charCodeAt(at + 1) << 24) | (chunk.charCodeAt(at + 2) << 16) | (chunk.charCodeAt(at + 3) << 8) | chunk.charCodeAt(at + 4);
    const message = chunk.slice(at + 5, at + 5 + len);
    if (message.charCodeAt(0) === 0x0a && message.includes(field)) return true;
    at += 5 + len;
  }
  return false;
}

/** The resolver's memory as its admin reports it (V8 heap used and total, external, array buffers), in MiB. */
async function adminMemory(adminPort) {
  const r = await http(adminPort, 'GET', '/admin/metrics.json');
  const m = JSON.parse(r.text);
  const mib = (k) => (m[k] ?? NaN) / (1024 * 1024);
  return { heapUsed: mib('process/mem/heap/used'), heapTotal: mib('process/mem/heap/total'), external: mib('process/mem/external'), arrayBuffers: mib('process/mem/array_buffers') };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(n) {
  const dir = mkdtempSync(join(tmpdir(), 'prx-resolver-figures-'));
  const disco = join(dir, 'disco');
  mkdirSync(disco);
  writeFileSync(join(disco, 'blue'), `127.0.0.1 ${PORTS.blue}\n`);
  writeFileSync(join(disco, 'green'), `127.0.0.1 ${PORTS.green}\n`);
  const [ctlPort, adminPort, grpcPort] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'resolver.json');
  writeFileSync(
    config,
    JSON.stringify({
      admin: { port: adminPort },
      interfaces: [
        { kind: 'io.prx.httpController', ip: '127.0.0.1', port: ctlPort },
        ...(iface === 'mesh' ? [{ kind: 'io.prx.mesh', ip: '127.0.0.1', port: grpcPort }] : []),
        ...(iface === 'destination' ? [{ kind: 'io.prx.destination', ip: '127.0.0.1', port: grpcPort, prefix: '/svc', namespace: 'default' }] : []),
        ...(iface === 'thrift' ? [{ kind: 'io.prx.thriftNameInterpreter', ip: '127.0.0.1', port: grpcPort }] : []),
      ],
      storage: { kind: 'io.prx.inMemory', namespaces: { default: '/svc/web => /#/io.prx.fs/blue' } },
      namers: [{ kind: 'io.prx.fs', rootDir: disco }],
    }),
  );
  // bin/prx-resolver as an operator runs it: its shell line sets node's flags and one malloc arena.
  const nodeOptions = [process.env.NODE_OPTIONS, snapshotDir ? '--heapsnapshot-signal=SIGUSR2' : undefined].filter(Boolean).join(' ');
  const child = spawn(join(root, 'bin/prx-resolver'), [config], {
    stdio: ['ignore', 'ignore', 'inherit'],
    cwd: dir,
    env: { ...process.env, ...(nodeOptions === '' ? {} : { NODE_OPTIONS: nodeOptions }) },
  });
  try {
    for (let i = 0; ; i++) {
      const ok = await http(adminPort, 'GET', '/admin/ping').then((r) => r.status === 200, () => false);
      if (ok) break;
      if (i > 200) throw new Error('the resolver did not start');
      await sleep(25);
    }
    // A few warm-up requests, so the baseline includes a JIT-warm controller (and, for mesh, a
    // loaded gRPC stack: a few watches opened and closed).
    for (let i = 0; i < 50; i++) await http(ctlPort, 'GET', '/api/1/bind/default?path=/svc/web');
    if (iface === 'mesh' || iface === 'destination') for (let i = 0; i < 20; i++) (await openGrpcWatch(grpcPort, GRPC_CALLS[iface], () => {})).destroy();
    if (iface === 'thrift') for (let i = 0; i < 20; i++) (await openThriftWatch(grpcPort, () => {})).destroy();
    await sleep(500);
    const rssBefore = rssMiB(child.pid);
    const memBefore = await adminMemory(adminPort);

    let want = 'blue';
    let seenAt = new Float64Array(n);
    let updateStarted = 0;
    let received = 0;
    const sockets = [];
    for (let i = 0; i < n; i++) {
      const index = i;
      // The HTTP view shows the id as JSON text; the mesh message carries it as the path segment's
      // bytes; a destination `add` carries the name's endpoint port.
      const onData = (chunk) => {
        const seen = iface === 'http' ? chunk.includes(`/${want}"`) : iface === 'mesh' || iface === 'thrift' ? chunk.includes(want) : destinationAdds(chunk, PORTS[want]);
        if (seen && seenAt[index] === 0) {
          seenAt[index] = performance.now();
          received++;
        }
      };
      const shared = i % perConnection === 0 ? undefined : sockets[sockets.length - 1].session;
      const s =
        iface === 'http'
          ? await openWatch(ctlPort, '/api/1/bind/default?path=/svc/web&watch=true', onData)
          : iface === 'thrift'
            ? await openThriftWatch(grpcPort, onData, shared)
            : await openGrpcWatch(grpcPort, GRPC_CALLS[iface], onData, shared);
      sockets.push(s);
    }
    while (received < n) await sleep(20);
    await sleep(settleMs);
    const rssWith = rssMiB(child.pid);
    const memWith = await adminMemory(adminPort);
    if (snapshotDir) {
      child.kill('SIGUSR2');
      // The snapshot is written on the resolver's main thread: once the admin answers again, it is complete.
      // (A request that waited through it may be dropped by the admin's timeouts: ask again.)
      await sleep(500);
      for (let i = 0; !(await http(adminPort, 'GET', '/admin/ping').then((r) => r.status === 200, () => false)); i++) {
        if (i > 100) throw new Error('the resolver did not come back from the heap snapshot');
        await sleep(200);
      }
      const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot'));
      if (file === undefined || statSync(join(dir, file)).size === 0) throw new Error('the resolver wrote no heap snapshot');
      mkdirSync(snapshotDir, { recursive: true });
      copyFileSync(join(dir, file), join(snapshotDir, `resolver-${iface}-${perConnection}-${n}.heapsnapshot`));
    }

    const latencies = [];
    for (let u = 0; u < updates; u++) {
      want = want === 'blue' ? 'green' : 'blue';
      seenAt = new Float64Array(n);
      received = 0;
      const current = await http(ctlPort, 'GET', '/api/1/dtabs/default');
      repolls.holding = true;
      updateStarted = performance.now();
      const put = await http(ctlPort, 'PUT', '/api/1/dtabs/default', `/svc/web => /#/io.prx.fs/${want}`, {
        'content-type': 'application/dtab',
        'if-match': current.etag,
      });
      if (put.status !== 204) throw new Error(`PUT answered ${put.status}: ${put.text}`);
      const deadline = performance.now() + 30_000;
      while (received < n) {
        if (performance.now() > deadline) throw new Error(`only ${received} of ${n} watchers saw update ${u + 1}`);
        await sleep(2);
      }
      repolls.holding = false;
      sendRepolls();
      const sorted = [...seenAt].map((t) => t - updateStarted).sort((a, b) => a - b);
      latencies.push({ p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] });
      await sleep(300);
    }
    for (const s of sockets) s.destroy();
    const med = (key) => latencies.map((l) => l[key]).sort((a, b) => a - b)[Math.floor(latencies.length / 2)];
    const perWatch = (a, b) => ((b - a) * 1024) / n;
    return {
      watchers: n,
      rssBeforeMiB: rssBefore,
      rssWithMiB: rssWith,
      perWatcherKiB: perWatch(rssBefore, rssWith),
      heapKiB: perWatch(memBefore.heapUsed, memWith.heapUsed),
      heapTotalKiB: perWatch(memBefore.heapTotal, memWith.heapTotal),
      p50Ms: med('p50'),
      p99Ms: med('p99'),
      maxMs: med('max'),
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [];
for (const n of counts) {
  const r = await measure(n);
  rows.push(r);
  process.stderr.write(`${n} watchers: done\n`);
}
console.log(`# prx-resolver watch fan-out — ${new Date().toISOString()}\n`);
const how = {
  http: 'HTTP controller bind watches over raw TCP',
  mesh: `io.prx.mesh StreamBoundTree calls, ${perConnection} per HTTP/2 connection`,
  destination: `io.prx.destination Get calls, ${perConnection} per HTTP/2 connection`,
  thrift: `io.prx.thriftNameInterpreter bind long polls, ${perConnection} per mux connection`,
}[iface];
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`node ${process.version}; in-memory storage; ${how} from one client process; ${updates} updates per row, medians; load average at the end ${load}.\n`);
console.log('| watchers | resolver RSS idle MiB | RSS with watchers MiB | per watcher KiB | V8 heap used KiB | V8 heap committed KiB | update → all watchers p50 ms | p99 ms | last ms |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.watchers} | ${r.rssBeforeMiB.toFixed(1)} | ${r.rssWithMiB.toFixed(1)} | ${r.perWatcherKiB.toFixed(1)} | ${r.heapKiB.toFixed(1)} | ${r.heapTotalKiB.toFixed(1)} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${r.maxMs.toFixed(1)} |`,
  );
}
