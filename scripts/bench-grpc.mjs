#!/usr/bin/env node
// gRPC unary benchmark: one grpc-js client issuing unary calls (64-byte request and response,
// Buffer serializers, no protobuf) at a fixed number of concurrent calls on one channel, straight
// to a grpc-js server and through prx (bin/prx, an h2 router with the full stack: path identifier,
// dtab, the gRPC classifier, retries, failure accrual), in interleaved rounds in the same run.
// Reports rps, p50 and p99 of both and what prx adds at p50 and p99 against issue #17's targets,
// and writes them into bench/results/latest.md (its own section, replaced on each run).
//
//   node scripts/bench-grpc.mjs [--rounds 3] [--duration 10] [--warmup 2] [--concurrency 16] [--rate 1000] [--md FILE]
//
// Each target is measured twice per round. Saturated: the calls run back to back, so the figures
// are the throughput of the slowest process and its queueing (Little's law), not what a hop adds.
// Paced: the same calls offered at --rate calls/s in all (each of the concurrent callers starts its
// next call on a fixed schedule, or at once when it is late), well below every target's capacity:
// latency there is what a call costs end to end, and prx − direct is what prx adds to it. The
// targets are judged on the paced figures; --rate 0 skips the paced runs.
//
// Pinned like the HTTP bench when taskset and 2+ cores exist: client and server on cpu0, prx on
// cpu1. Every process is a fresh child (the client too, so both targets meet the same cold JIT).
// Uses dist/ (npm run bench builds first). The options of the other suites are accepted and
// ignored; their modes that are not benchmarks (--report, --analyze, --render-config, --profile)
// skip this suite.
import { readFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CallWindow, canPin, Children, f2, f3, firstLine, freePort, int, median, relayRole, usage } from '../bench/lib/procs.mjs';
import { FULL_STACK, onPrx, requireDist, runMain, startPrx, suiteOptions, supervised, writeSection } from '../bench/lib/suite.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SELF = fileURLToPath(import.meta.url);
const PAYLOAD_BYTES = 64;
const METHOD = '/test.Echo/Say';
/** Issue #17: what prx may add to a unary call at 16 concurrent calls. */
export const GRPC_TARGETS = Object.freeze({ addedP50Ms: 0.3, addedP99Ms: 1 });
/** Each implementation's section of latest.md, between its markers. */
const markers = (impl) =>
  impl === 'grpc-js'
    ? { begin: '<!-- bench-grpc: begin (scripts/bench-grpc.mjs replaces this section) -->', end: '<!-- bench-grpc: end -->' }
    : { begin: `<!-- bench-grpc ${impl}: begin (scripts/bench-grpc.mjs --impl ${impl} replaces this section) -->`, end: `<!-- bench-grpc ${impl}: end -->` };
const { usageError, wholeNumber } = usage('bench-grpc');
/** Calls/s offered in the paced runs: a fifth to a third of what the direct target serves on this 2-core VM. */
const DEFAULT_RATE = 1000;
/**
 * The client and server: grpc-js (the default), or `prx-h2`, a unary client on prx's own HTTP/2
 * client session and prx's own gRPC server (dist/). grpc-js allocates ~35 KB a call and pauses for
 * mark-compacts every few seconds, which sets every target's p99; prx-h2's ends allocate little,
 * so what prx adds at the tail shows. The server is the same kind for every target.
 */
const IMPLS = ['grpc-js', 'prx-h2'];

function options(argv) {
  const { parsed, common } = suiteOptions(argv, { impl: { type: 'string' } }, { usageError, wholeNumber });
  const impl = parsed.impl ?? 'grpc-js';
  if (!IMPLS.includes(impl)) usageError(`--impl must be ${IMPLS.join(' or ')}, got ${JSON.stringify(impl)}`);
  return { ...common, impl, concurrency: wholeNumber('concurrency', parsed.concurrency, 1) ?? 16, rate: wholeNumber('rate', parsed.rate, 0) ?? DEFAULT_RATE };
}

// ---------------------------------------------------------------- the two grpc-js roles

const same = (b) => b;
const grpcLoaded = () => import('@grpc/grpc-js');

/** The server: Say echoes its 64-byte request. Prints {"port": N}; exits when stdin closes. */
/** The prx-h2 server: prx's own gRPC server (dist/), Say echoing its request. */
async function prxServerRole() {
  const { GrpcServer, grpcMessage } = await import(join(REPO, 'dist', 'protocol', 'h2', 'grpc-server.js'));
  const server = new GrpcServer({ maxRequestBytes: 1 << 20, keepaliveTimeMs: 0, keepaliveTimeoutMs: 0 });
  server.handle(METHOD, (call, request) => {
    call.send(grpcMessage(request));
    call.end(0);
  });
  const { port } = await server.listen('127.0.0.1', 0);
  process.stdout.write(`${JSON.stringify({ port })}\n`);
  process.stdin.resume();
  const stop = () => process.exit(0);
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
}

/**
 * A prx-h2 unary call maker on one HTTP/2 connection (prx's own client session, dist/): the
 * function makes one call and reports its error (undefined when the reply is the 64 bytes with
 * grpc-status 0).
 */
async function prxCaller(port) {
  const { H2ClientSession } = await import(join(REPO, 'dist', 'protocol', 'h2', 'wire', 'client-session.js'));
  const socket = netConnect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await new Promise((ok, fail) => socket.once('connect', ok).once('error', fail));
  const settings = { initialWindowBytes: 65_535, connectionWindowBytes: 1 << 20, maxFrameBytes: 16_384, headerTableBytes: 4096, maxHeaderListBytes: 65_536, windowUpdateRatio: 0.5 };
  const session = new H2ClientSession(socket, settings, { gone() {}, closed() {} });
  const head = [':method', 'POST', ':scheme', 'http', ':path', METHOD, ':authority', `127.0.0.1:${port}`, 'content-type', 'application/grpc', 'te', 'trailers'];
  const request = Buffer.alloc(5 + PAYLOAD_BYTES, 0x61);
  request[0] = 0;
  request.writeUInt32BE(PAYLOAD_BYTES, 1);
  const call = (done) => {
    let bytes = 0;
    let status;
    const stream = session.request(head, false, {
      onHead(_status, headers, endStream) {
        if (endStream) status = headers['grpc-status'];
      },
      onData(chunk) {
        bytes += chunk.length;
        stream.consumed(chunk.length);
      },
      onTrailers(trailers) {
        status = trailers['grpc-status'];
      },
      onEnd() {},
      onClose(error) {
        done(error !== undefined ? String(error) : status !== '0' ? `grpc-status ${status}` : bytes !== request.length ? `a reply of ${bytes} bytes` : undefined);
      },
      onDrain() {},
    });
    stream.write(request);
    stream.end();
  };
  return { call, close: () => session.destroy() };
}

async function serverRole() {
  const grpc = await grpcLoaded();
  const server = new grpc.Server();
  const Say = { path: METHOD, requestStream: false, responseStream: false, requestSerialize: same, requestDeserialize: same, responseSerialize: same, responseDeserialize: same };
  server.addService({ Say }, { Say: (call, done) => done(null, call.request) });
  const port = await new Promise((ok, fail) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? fail(e) : ok(p))));
  process.stdout.write(`${JSON.stringify({ port })}\n`);
  process.stdin.resume();
  process.stdin.once('end', () => server.forceShutdown());
  process.stdin.once('close', () => server.forceShutdown());
}

/** A grpc-js unary call maker on one channel (see prxCaller). */
async function grpcJsCaller(port) {
  const grpc = await grpcLoaded();
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const payload = Buffer.alloc(PAYLOAD_BYTES, 0x61);
  const call = (done) =>
    client.makeUnaryRequest(METHOD, same, same, payload, (e, reply) => {
      if (e) done(`${e.code} ${e.details}`);
      else done(reply.length === PAYLOAD_BYTES ? undefined : `a reply of ${reply.length} bytes`);
    });
  return { call, close: () => client.close() };
}

/**
 * The client: `concurrency` closed loops of unary calls on one channel to 127.0.0.1:port, `warmup`
 * s unrecorded, then `duration` s recorded. Prints one JSON line.
 */
async function clientRole(o) {
  const { call, close } = o.impl === 'prx-h2' ? await prxCaller(o.port) : await grpcJsCaller(o.port);
  const window = new CallWindow(o.warmup, o.duration);
  // Paced: caller i starts a call every `interval` ms from its own offset, at once when late.
  const interval = o.rate > 0 ? (o.concurrency * 1000) / o.rate : 0;
  const loop = async (i) => {
    let next = performance.now() + (interval * i) / o.concurrency;
    while (window.open) {
      if (interval > 0) {
        const wait = next - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        next += interval;
      }
      const start = performance.now();
      const error = await new Promise(call);
      window.record(start, performance.now(), error);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, i) => loop(i)));
  close();
  const out = window.result();
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

// ---------------------------------------------------------------- the run


/** The prx config: an h2 router with the full stack routing /test.Echo/* to the server. */
function prxConfig({ proxy, admin, upstream }) {
  return {
    admin: { ip: '127.0.0.1', port: admin },
    routers: [
      {
        protocol: 'h2',
        label: 'grpc',
        identifier: { kind: 'io.prx.header.path', segments: 1 },
        dtab: `/svc/test.Echo => /$/inet/127.0.0.1/${upstream};`,
        service: { ...FULL_STACK.service, responseClassifier: { kind: 'io.prx.h2.grpc.default' } },
        client: FULL_STACK.client,
        servers: [{ ip: '127.0.0.1', port: proxy }],
      },
    ],
  };
}

const children = new Children();

/** One client run against `port`; its JSON result. */
async function measure(o, port, seconds, warmup, rate = 0) {
  const child = children.start(0, process.execPath, [SELF, '--role', 'client', '--port', String(port), '--duration', String(seconds), '--warmup', String(warmup), '--concurrency', String(o.concurrency), '--rate', String(rate), '--impl', o.impl], ['ignore', 'pipe', 'inherit']);
  return JSON.parse(await firstLine(child, (seconds + warmup + 30) * 1000, 'the grpc-js client'));
}

/** The Markdown section from the rounds' results. Exported for the tests. */
export function renderGrpcSection(run) {
  const { rounds, rate, date, concurrency, duration, warmup, pinning, node, grpcJs, impl = 'grpc-js' } = run;
  const { begin, end } = markers(impl);
  const paced = rate > 0;
  const of = (mode) => rounds.map((r) => (mode === 'paced' ? r.paced : r));
  const med = (mode, target, k) => median(of(mode).map((r) => r[target]?.[k]));
  const diff = (mode, a, b, k) => median(of(mode).map((r) => (r[a] && r[b] ? r[a][k] - r[b][k] : null)));
  const judged = paced ? 'paced' : 'saturated';
  const table = (mode) => {
    const rows = ['| target | rps | p50 ms | p99 ms | p99.9 ms | errors | prx CPU µs/call | prx RSS MiB |', '|---|---:|---:|---:|---:|---:|---:|---:|'];
    for (const t of ['direct', 'relay', 'prx']) {
      const errs = of(mode).reduce((a, r) => a + (r[t]?.errors ?? 0), 0);
      const own = (k, f) => (t === 'prx' ? f(med(mode, t, k)) : '–');
      rows.push(`| ${t === 'prx' ? '**prx**' : t} | ${int(med(mode, t, 'rps'))} | ${f2(med(mode, t, 'p50'))} | ${f2(med(mode, t, 'p99'))} | ${f2(med(mode, t, 'p999'))} | ${errs} | ${own('cpuUsPerCall', int)} | ${own('rssMiB', f2)} |`);
    }
    return rows;
  };
  const hop = (mode) => `relay − direct (one more hop, whatever the proxy): p50 ${f3(diff(mode, 'relay', 'direct', 'p50'))} ms, p99 ${f3(diff(mode, 'relay', 'direct', 'p99'))} ms; prx − relay: p50 ${f3(diff(mode, 'prx', 'relay', 'p50'))} ms, p99 ${f3(diff(mode, 'prx', 'relay', 'p99'))} ms.`;
  const a50 = diff(judged, 'prx', 'direct', 'p50');
  const a99 = diff(judged, 'prx', 'direct', 'p99');
  const met = (v, max) => (v === null ? '?' : v <= max ? 'yes' : 'no');
  const perRound = (r, t) => `${int(r[t]?.rps)} rps, ${f2(r[t]?.p50)} / ${f2(r[t]?.p99)}`;
  const lines = [
    begin,
    `## gRPC unary${impl === 'grpc-js' ? '' : ` (${impl} client and server)`} — ${date}`,
    '',
    impl === 'grpc-js'
      ? `- grpc-js ${grpcJs} client and server (Buffer serializers, ${PAYLOAD_BYTES}-byte request and response), ${concurrency} concurrent unary calls on one channel, node ${node}`
      : `- ${impl}: a unary client on prx's own HTTP/2 client session and prx's own gRPC server (${PAYLOAD_BYTES}-byte request and response), ${concurrency} concurrent unary calls on one connection, node ${node}`,
    `- ${rounds.length} interleaved round(s) of ${duration} s per target and mode after ${warmup} s warm-up (each client a fresh process), order alternating; medians over rounds`,
    `- Pinning: ${pinning ? 'client and server on cpu0, prx (and the relay) on cpu1' : 'none'}; prx: \`bin/prx\`, an h2 router (path identifier, dtab, io.prx.h2.grpc.default, retries, failure accrual)`,
    '- relay: a bare TCP byte relay (node `net`, no parsing) in prx\'s place: what one more hop costs on this machine, whatever the proxy',
    '',
    `### Saturated: calls back to back (throughput; latency here is queueing behind the slowest process)`,
    '',
    ...table('saturated'),
    '',
    `Throughput ×direct: prx ${f2(median(rounds.map((r) => (r.prx && r.direct ? r.prx.rps / r.direct.rps : null))))}, relay ${f2(median(rounds.map((r) => (r.relay && r.direct ? r.relay.rps / r.direct.rps : null))))}; ${hop('saturated')}`,
  ];
  if (paced) {
    lines.push('', `### Paced: ${int(rate)} calls/s offered (latency: what a call costs, and what prx adds to it)`, '', ...table('paced'), '', hop('paced'));
  }
  lines.push(
    '',
    `prx − direct, ${judged}, median of the per-round differences:`,
    '',
    '| target | measured | met |',
    '|---|---:|:---:|',
    `| added latency at p50 ≤ ${GRPC_TARGETS.addedP50Ms} ms | ${f3(a50)} ms | ${met(a50, GRPC_TARGETS.addedP50Ms)} |`,
    `| added latency at p99 ≤ ${GRPC_TARGETS.addedP99Ms} ms | ${f3(a99)} ms | ${met(a99, GRPC_TARGETS.addedP99Ms)} |`,
    '',
    `| round | mode | direct rps, p50 / p99 ms | relay | prx |`,
    '|---:|---|---:|---:|---:|',
    ...rounds.flatMap((r, i) => [
      `| ${i + 1} | saturated | ${perRound(r, 'direct')} | ${perRound(r, 'relay')} | ${perRound(r, 'prx')} |`,
      ...(paced ? [`| ${i + 1} | paced | ${perRound(r.paced, 'direct')} | ${perRound(r.paced, 'relay')} | ${perRound(r.paced, 'prx')} |`] : []),
    ]),
    end,
  );
  return `${lines.join('\n')}\n`;
}

async function benchRun(o) {
  requireDist(usageError);
  return supervised(children, 'bench-grpc', async (scratch) => {
    const server = children.start(0, process.execPath, [SELF, '--role', 'server', '--impl', o.impl], ['pipe', 'pipe', 'inherit']);
    const upstream = JSON.parse(await firstLine(server, 15000, 'the grpc-js server')).port;
    const proxy = await freePort();
    const admin = await freePort();
    const { child: prx, output } = startPrx(children, scratch, 1, prxConfig({ proxy, admin, upstream }));
    const relay = children.start(1, process.execPath, [SELF, '--role', 'relay', '--port', String(upstream)], ['pipe', 'pipe', 'inherit']);
    const relayPort = JSON.parse(await firstLine(relay, 15000, 'the tcp relay')).port;
    // prx is ready when a call through it succeeds (a 1 s client run, repeated up to 15 s)
    const until = Date.now() + 15000;
    for (;;) {
      if (prx.exitCode !== null) throw new Error(`prx exited (${prx.exitCode}):\n${output()}`);
      const probe = await measure(o, proxy, 1, 0).catch(() => null);
      if (probe !== null && probe.calls > 0 && probe.errors === 0) break;
      if (Date.now() > until) throw new Error(`no unary call succeeds through prx (${probe?.firstError ?? 'client failed'}); prx output:\n${output()}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    process.stdout.write(`gRPC unary benchmark: ${o.rounds} round(s) × ${o.duration} s per target, ${o.concurrency} concurrent calls${canPin ? '; client and server on cpu0, prx on cpu1' : ''}\n`);
    const rounds = [];
    for (let i = 0; i < o.rounds; i++) {
      const round = { paced: {} };
      for (const target of i % 2 === 0 ? ['direct', 'relay', 'prx'] : ['prx', 'relay', 'direct']) {
        for (const rate of o.rate > 0 ? [0, o.rate] : [0]) {
          const load = () => measure(o, target === 'prx' ? proxy : target === 'relay' ? relayPort : upstream, o.duration, o.warmup, rate);
          const r = target === 'prx' ? await onPrx(prx.pid, load) : await load();
          (rate === 0 ? round : round.paced)[target] = r;
          const mode = rate === 0 ? '' : ` paced at ${rate}/s`;
          process.stdout.write(`  r${i + 1} ${target}${mode}: ${int(r.rps)} rps, p50 ${f3(r.p50)} ms, p99 ${f3(r.p99)} ms, errors ${r.errors}${r.firstError ? ` (${r.firstError})` : ''}\n`);
        }
      }
      rounds.push(round);
    }
    const grpcJs = JSON.parse(readFileSync(join(REPO, 'node_modules', '@grpc', 'grpc-js', 'package.json'), 'utf8')).version;
    const section = renderGrpcSection({
      rounds, rate: o.rate, date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), concurrency: o.concurrency, duration: o.duration,
      warmup: o.warmup, pinning: canPin, node: process.version, grpcJs, impl: o.impl,
    });
    const { begin, end } = markers(o.impl);
    writeSection(o.md, section, begin, end);
    process.stdout.write(`\n${section}\nwritten: ${o.md}\n`);
    return rounds.some((r) => r.prx.calls === 0 || (o.rate > 0 && r.paced.prx.calls === 0)) ? 1 : 0;
  });
}

async function main() {
  const o = options(process.argv.slice(2));
  if (o.role === 'server') return (o.impl === 'prx-h2' ? prxServerRole() : serverRole()).then(() => undefined);
  if (o.role === 'relay') {
    if (o.port === undefined) usageError('--role relay needs --port (the server behind it)');
    return relayRole(o.port).then(() => undefined);
  }
  if (o.role === 'client') {
    if (o.port === undefined) usageError('--role client needs --port');
    await clientRole(o);
    return 0;
  }
  if (o.role !== undefined) usageError(`--role must be server, client or relay, got ${JSON.stringify(o.role)}`);
  if (o.otherMode !== undefined) {
    process.stdout.write(`gRPC unary benchmark: skipped (${o.otherMode} is another suite's mode)\n`);
    return 0;
  }
  return benchRun(o);
}

runMain(SELF, 'bench-grpc', main);
