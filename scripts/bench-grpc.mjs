#!/usr/bin/env node
// gRPC unary benchmark: one grpc-js client issuing unary calls (64-byte request and response,
// Buffer serializers, no protobuf) at a fixed number of concurrent calls on one channel, straight
// to a grpc-js server and through prx (bin/prx, an h2 router with the full stack: path identifier,
// dtab, the gRPC classifier, retries, failure accrual), in interleaved rounds in the same run.
// Reports rps, p50 and p99 of both and what prx adds at p50 and p99 against issue #17's targets,
// and writes them into bench/results/latest.md (its own section, replaced on each run).
//
//   node scripts/bench-grpc.mjs [--rounds 3] [--duration 10] [--warmup 2] [--concurrency 16] [--md FILE]
//
// Pinned like the HTTP bench when taskset and 2+ cores exist: client and server on cpu0, prx on
// cpu1. Every process is a fresh child (the client too, so both targets meet the same cold JIT).
// Uses dist/ (npm run bench builds first). The options of the other suites are accepted and
// ignored; their modes that are not benchmarks (--report, --analyze, --render-config, --profile)
// skip this suite.
import { readFileSync } from 'node:fs';
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
const MARK_BEGIN = '<!-- bench-grpc: begin (scripts/bench-grpc.mjs replaces this section) -->';
const MARK_END = '<!-- bench-grpc: end -->';
const { usageError, wholeNumber } = usage('bench-grpc');

function options(argv) {
  const { parsed, common } = suiteOptions(argv, {}, { usageError, wholeNumber });
  return { ...common, concurrency: wholeNumber('concurrency', parsed.concurrency, 1) ?? 16 };
}

// ---------------------------------------------------------------- the two grpc-js roles

const same = (b) => b;
const grpcLoaded = () => import('@grpc/grpc-js');

/** The server: Say echoes its 64-byte request. Prints {"port": N}; exits when stdin closes. */
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

/**
 * The client: `concurrency` closed loops of unary calls on one channel to 127.0.0.1:port, `warmup`
 * s unrecorded, then `duration` s recorded. Prints one JSON line.
 */
async function clientRole(o) {
  const grpc = await grpcLoaded();
  const client = new grpc.Client(`127.0.0.1:${o.port}`, grpc.credentials.createInsecure());
  const payload = Buffer.alloc(PAYLOAD_BYTES, 0x61);
  const window = new CallWindow(o.warmup, o.duration);
  const loop = async () => {
    while (window.open) {
      const start = performance.now();
      const error = await new Promise((done) =>
        client.makeUnaryRequest(METHOD, same, same, payload, (e, reply) => {
          if (e) done(`${e.code} ${e.details}`);
          else done(reply.length === PAYLOAD_BYTES ? undefined : `a reply of ${reply.length} bytes`);
        }),
      );
      window.record(start, performance.now(), error);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, loop));
  client.close();
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
async function measure(o, port, seconds, warmup) {
  const child = children.start(0, process.execPath, [SELF, '--role', 'client', '--port', String(port), '--duration', String(seconds), '--warmup', String(warmup), '--concurrency', String(o.concurrency)], ['ignore', 'pipe', 'inherit']);
  return JSON.parse(await firstLine(child, (seconds + warmup + 30) * 1000, 'the grpc-js client'));
}

/** The Markdown section from the rounds' results. Exported for the tests. */
export function renderGrpcSection(run) {
  const { rounds, date, concurrency, duration, warmup, pinning, node, grpcJs } = run;
  const med = (target, k) => median(rounds.map((r) => r[target]?.[k]));
  const addedOver = (base, k) => median(rounds.map((r) => (r.prx && r[base] ? r.prx[k] - r[base][k] : null)));
  const added = (k) => addedOver('direct', k);
  const lines = [
    MARK_BEGIN,
    `## gRPC unary — ${date}`,
    '',
    `- grpc-js ${grpcJs} client and server (Buffer serializers, ${PAYLOAD_BYTES}-byte request and response), ${concurrency} concurrent unary calls on one channel, node ${node}`,
    `- ${rounds.length} interleaved round(s) of ${duration} s per target after ${warmup} s warm-up (each client a fresh process), order alternating; medians over rounds`,
    `- Pinning: ${pinning ? 'client and server on cpu0, prx (and the relay) on cpu1' : 'none'}; prx: \`bin/prx\`, an h2 router (path identifier, dtab, io.prx.h2.grpc.default, retries, failure accrual)`,
    '- relay: a bare TCP byte relay (node `net`, no parsing) in prx\'s place: what one more hop costs on this machine, whatever the proxy',
    '',
    '| target | rps | p50 ms | p99 ms | p99.9 ms | errors | prx CPU µs/call | prx RSS MiB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const t of ['direct', 'relay', 'prx']) {
    const errs = rounds.reduce((a, r) => a + (r[t]?.errors ?? 0), 0);
    lines.push(`| ${t === 'prx' ? '**prx**' : t} | ${int(med(t, 'rps'))} | ${f2(med(t, 'p50'))} | ${f2(med(t, 'p99'))} | ${f2(med(t, 'p999'))} | ${errs} | ${t === 'prx' ? int(med(t, 'cpuUsPerCall')) : '–'} | ${t === 'prx' ? f2(med(t, 'rssMiB')) : '–'} |`);
  }
  const a50 = added('p50');
  const a99 = added('p99');
  const rps = median(rounds.map((r) => (r.prx && r.direct ? r.prx.rps / r.direct.rps : null)));
  lines.push(
    '',
    `prx − direct, median of the per-round differences (throughput ×direct: ${f2(rps)}):`,
    '',
    '| target | measured | met |',
    '|---|---:|:---:|',
    `| added latency at p50 ≤ ${GRPC_TARGETS.addedP50Ms} ms | ${f3(a50)} ms | ${a50 === null ? '?' : a50 <= GRPC_TARGETS.addedP50Ms ? 'yes' : 'no'} |`,
    `| added latency at p99 ≤ ${GRPC_TARGETS.addedP99Ms} ms | ${f3(a99)} ms | ${a99 === null ? '?' : a99 <= GRPC_TARGETS.addedP99Ms ? 'yes' : 'no'} |`,
    '',
    `The hop alone (relay − direct): p50 ${f3(median(rounds.map((r) => (r.relay && r.direct ? r.relay.p50 - r.direct.p50 : null))))} ms, p99 ${f3(median(rounds.map((r) => (r.relay && r.direct ? r.relay.p99 - r.direct.p99 : null))))} ms; prx over the relay: p50 ${f3(addedOver('relay', 'p50'))} ms, p99 ${f3(addedOver('relay', 'p99'))} ms.`,
    '',
    '| round | direct rps | direct p50 / p99 ms | relay rps | relay p50 / p99 ms | prx rps | prx p50 / p99 ms |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...rounds.map((r, i) => `| ${i + 1} | ${int(r.direct?.rps)} | ${f2(r.direct?.p50)} / ${f2(r.direct?.p99)} | ${int(r.relay?.rps)} | ${f2(r.relay?.p50)} / ${f2(r.relay?.p99)} | ${int(r.prx?.rps)} | ${f2(r.prx?.p50)} / ${f2(r.prx?.p99)} |`),
    MARK_END,
  );
  return `${lines.join('\n')}\n`;
}

async function benchRun(o) {
  requireDist(usageError);
  return supervised(children, 'bench-grpc', async (scratch) => {
    const server = children.start(0, process.execPath, [SELF, '--role', 'server'], ['pipe', 'pipe', 'inherit']);
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
      const round = {};
      for (const target of i % 2 === 0 ? ['direct', 'relay', 'prx'] : ['prx', 'relay', 'direct']) {
        const load = () => measure(o, target === 'prx' ? proxy : target === 'relay' ? relayPort : upstream, o.duration, o.warmup);
        const r = target === 'prx' ? await onPrx(prx.pid, load) : await load();
        round[target] = r;
        process.stdout.write(`  r${i + 1} ${target}: ${int(r.rps)} rps, p50 ${f3(r.p50)} ms, p99 ${f3(r.p99)} ms, errors ${r.errors}${r.firstError ? ` (${r.firstError})` : ''}\n`);
      }
      rounds.push(round);
    }
    const grpcJs = JSON.parse(readFileSync(join(REPO, 'node_modules', '@grpc', 'grpc-js', 'package.json'), 'utf8')).version;
    const section = renderGrpcSection({
      rounds, date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), concurrency: o.concurrency, duration: o.duration,
      warmup: o.warmup, pinning: canPin, node: process.version, grpcJs,
    });
    writeSection(o.md, section, MARK_BEGIN, MARK_END);
    process.stdout.write(`\n${section}\nwritten: ${o.md}\n`);
    return rounds.some((r) => r.prx.calls === 0) ? 1 : 0;
  });
}

async function main() {
  const o = options(process.argv.slice(2));
  if (o.role === 'server') return serverRole().then(() => undefined);
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
