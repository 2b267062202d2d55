#!/usr/bin/env node
// Thrift and mux benchmark (issue #18). Thrift: framed TBinaryProtocol echo calls (small: a 5-byte
// string in, "ok" out) on `--connections` connections with one call in flight each, straight to a
// raw framed-binary backend, through a bare TCP relay and through prx (bin/prx, a thrift router
// with the full stack: identifier, dtab, retries, failure accrual over p2c), in interleaved rounds
// in the same run; prx's CPU per call against the HTTP/1.1 router's (read from latest.md). Mux:
// `--sessions` sessions × `--per-session` concurrent Tdispatch calls (64-byte bodies) driven by
// prx's own mux codec, direct, relay and through a mux router, in the same rounds. Large: prx's
// RSS while one `--mib` MiB thrift call and then one `--mib` MiB reply pass through it.
// Writes its own section into bench/results/latest.md (replaced on each run).
//
//   node scripts/bench-thrift.mjs [--rounds 3] [--duration 10] [--warmup 2] [--connections 16]
//     [--sessions 16] [--per-session 8] [--mib 16] [--parts thrift,mux,large] [--md FILE]
//
// Pinned like the other suites when taskset and 2+ cores exist: load generators and backends on
// cpu0, prx (and the relays) on cpu1. Every load run is a fresh child process. Uses dist/ (npm run
// bench builds first). The other suites' options are accepted and ignored; their modes that are
// not benchmarks (--report, --analyze, --render-config, --profile) skip this suite.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { muxBackendRole, muxLoadRole } from '../bench/lib/mux-roles.mjs';
import { canPin, Children, f2, f3, firstLine, freePort, int, median, relayRole, rssMiB, usage } from '../bench/lib/procs.mjs';
import { FULL_STACK, onPrx, requireDist, runMain, startPrx, suiteOptions, supervised, writeSection } from '../bench/lib/suite.mjs';
import { thriftBackendRole, thriftLargeRole, thriftLoadRole } from '../bench/lib/thrift-roles.mjs';

const SELF = fileURLToPath(import.meta.url);
const MARK_BEGIN = '<!-- bench-thrift: begin (scripts/bench-thrift.mjs replaces this section) -->';
const MARK_END = '<!-- bench-thrift: end -->';
const PARTS = ['thrift', 'mux', 'large'];
const TARGETS = ['direct', 'relay', 'prx'];
/** Issue #18's large-message target read as: prx holds at most one message of a call at a time,
 * so its RSS grows by less than two payloads (one message, and its chunks while it is assembled). */
export const LARGE_GROWTH_PAYLOADS = 2;
const { usageError, wholeNumber } = usage('bench-thrift');

function options(argv) {
  const own = Object.fromEntries(['connections', 'sessions', 'per-session', 'mib', 'parts', 'bytes', 'direction'].map((k) => [k, { type: 'string' }]));
  const { parsed, common } = suiteOptions(argv, own, { usageError, wholeNumber });
  const parts = (parsed.parts ?? PARTS.join(',')).split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !PARTS.includes(p))) usageError(`--parts takes some of ${PARTS.join(', ')} (comma-separated), got ${JSON.stringify(parsed.parts)}`);
  return {
    ...common,
    connections: wholeNumber('connections', parsed.connections, 1) ?? 16,
    sessions: wholeNumber('sessions', parsed.sessions, 1) ?? 16,
    perSession: wholeNumber('per-session', parsed['per-session'], 1) ?? 8,
    mib: wholeNumber('mib', parsed.mib, 1) ?? 16,
    parts: new Set(parts),
    // the thrift-large role's size and direction (the run passes them)
    largeBytes: wholeNumber('bytes', parsed.bytes, 1),
    direction: parsed.direction,
  };
}

// ---------------------------------------------------------------- prx and the measurements

/** The prx config: a thrift router (every call named /svc) and a mux router (/svc/bench), full stack. */
function prxConfig({ admin, thrift, mux, largeBytes }) {
  const routers = [];
  if (thrift) {
    routers.push({
      protocol: 'thrift', label: 'thrift', thriftProtocol: 'binary', dtab: `/svc => /$/inet/127.0.0.1/${thrift.upstream};`,
      // room for the large call's frame (its string plus the message's head)
      thriftMaxMessageBytes: Math.max(32 * 1024 * 1024, largeBytes + 1024 * 1024),
      ...FULL_STACK, client: { ...FULL_STACK.client, thriftFramed: true },
      servers: [{ ip: '127.0.0.1', port: thrift.proxy, thriftFramed: true }],
    });
  }
  if (mux) routers.push({ protocol: 'mux', label: 'mux', dtab: `/svc => /$/inet/127.0.0.1/${mux.upstream};`, ...FULL_STACK, servers: [{ ip: '127.0.0.1', port: mux.proxy }] });
  return { admin: { ip: '127.0.0.1', port: admin }, routers };
}

const children = new Children();

/** One load run of `kind` (thrift or mux) against `port`; its JSON result. */
async function measure(o, kind, port, seconds, warmup) {
  const shape = kind === 'thrift' ? ['--connections', String(o.connections)] : ['--sessions', String(o.sessions), '--per-session', String(o.perSession)];
  const args = [SELF, '--role', `${kind}-load`, '--port', String(port), '--duration', String(seconds), '--warmup', String(warmup), ...shape];
  const child = children.start(0, process.execPath, args, ['ignore', 'pipe', 'inherit']);
  return JSON.parse(await firstLine(child, (seconds + warmup + 30) * 1000, `the ${kind} load`));
}

/** A role child printing {"port": N}: the child and its port. */
async function roleWithPort(core, role, extra = []) {
  const child = children.start(core, process.execPath, [SELF, '--role', role, ...extra], ['pipe', 'pipe', 'inherit']);
  return { child, port: JSON.parse(await firstLine(child, 15000, `the ${role}`)).port };
}

/** Retries a 1 s load run through prx until it succeeds (up to 15 s): prx is ready. */
async function awaitReady(o, kind, port, prx, prxOut) {
  const until = Date.now() + 15000;
  for (;;) {
    if (prx.exitCode !== null) throw new Error(`prx exited (${prx.exitCode}):\n${prxOut()}`);
    const probe = await measure({ ...o, connections: 1, sessions: 1, perSession: 1 }, kind, port, 1, 0).catch(() => null);
    if (probe !== null && probe.calls > 0 && probe.errors === 0) return;
    if (Date.now() > until) throw new Error(`no ${kind} call succeeds through prx (${probe?.firstError ?? 'load failed'}); prx output:\n${prxOut()}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** One large thrift call (`direction` up: a large call; down: a large reply) through prx, sampling prx's RSS every 10 ms. */
async function largeCall(port, direction, bytes, prxPid) {
  const args = [SELF, '--role', 'thrift-large', '--port', String(port), '--bytes', String(bytes), '--direction', direction];
  const child = children.start(0, process.execPath, args, ['ignore', 'pipe', 'inherit']);
  const baseMiB = rssMiB(prxPid);
  let peakMiB = baseMiB;
  const timer = setInterval(() => (peakMiB = Math.max(peakMiB, rssMiB(prxPid) ?? peakMiB)), 10);
  try {
    const r = JSON.parse(await firstLine(child, 120_000, `the large thrift client (${direction})`));
    return { ...r, complete: r.bytes === bytes, baseMiB, peakMiB };
  } finally {
    clearInterval(timer);
  }
}

/** The large part: a warm-up of each direction at 64 KiB, then the large call and the large reply. */
async function large(port, bytes, prxPid) {
  for (const d of ['up', 'down']) await largeCall(port, d, 64 * 1024, prxPid);
  const up = await largeCall(port, 'up', bytes, prxPid);
  const down = await largeCall(port, 'down', bytes, prxPid);
  return { bytes, up, down };
}

/** The HTTP/1.1 router's prx CPU µs/request at 16 connections, from the http suite's section of `md`. */
export function httpCpuUsPerRequest(md) {
  const m = /\| CPU ≤ [\d.]+ µs\/request at 16 conns \| ([\d.]+) µs \|/.exec(md);
  return m ? Number(m[1]) : null;
}

// ---------------------------------------------------------------- the section

const rowOf = (rounds, part, target, k) => median(rounds.map((r) => r[part]?.[target]?.[k]));
const diffOf = (rounds, part, k, over = 'direct') => median(rounds.map((r) => (r[part]?.prx && r[part]?.[over] ? r[part].prx[k] - r[part][over][k] : null)));

/** The Markdown section from the run's results. */
export function renderThriftSection(run) {
  const { rounds, date, o, pinning, node, httpCpuUs, big } = run;
  const lines = [
    MARK_BEGIN,
    `## thrift and mux — ${date}`,
    '',
    `- thrift: framed TBinaryProtocol calls echo("hello") → "ok", ${o.connections} connections with one call in flight each; backend and load generator: raw framed-binary bytes (bench/lib/thrift-roles.mjs)`,
    `- mux: ${o.sessions} sessions × ${o.perSession} concurrent Tdispatch calls (64-byte bodies) by prx's mux codec (dist/protocol/mux) at both ends (bench/lib/mux-roles.mjs)`,
    `- ${rounds.length} interleaved round(s) of ${o.duration} s per target after ${o.warmup} s warm-up (each load a fresh process), order alternating; medians over rounds; node ${node}`,
    `- Pinning: ${pinning ? 'load generators and backends on cpu0, prx (and the relays) on cpu1' : 'none'}; prx: \`bin/prx\`, a thrift router and a mux router (dtab, retries, failure accrual over p2c)`,
    '- relay: a bare TCP byte relay (node `net`, no parsing) in prx\'s place: what one more hop costs on this machine',
    '',
    '| protocol | target | rps | p50 ms | p99 ms | p99.9 ms | errors | prx CPU µs/call | prx RSS MiB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const parts = ['thrift', 'mux'].filter((p) => rounds.some((r) => r[p]));
  let largeNote = null;
  for (const p of parts) {
    for (const t of TARGETS) {
      const errs = rounds.reduce((a, r) => a + (r[p]?.[t]?.errors ?? 0), 0);
      const isPrx = t === 'prx';
      lines.push(`| ${p} | ${isPrx ? '**prx**' : t} | ${int(rowOf(rounds, p, t, 'rps'))} | ${f2(rowOf(rounds, p, t, 'p50'))} | ${f2(rowOf(rounds, p, t, 'p99'))} | ${f2(rowOf(rounds, p, t, 'p999'))} | ${errs} | ${isPrx ? f2(rowOf(rounds, p, t, 'cpuUsPerCall')) : '–'} | ${isPrx ? f2(rowOf(rounds, p, t, 'rssMiB')) : '–'} |`);
    }
  }
  lines.push('', 'Targets of issue #18 (prx − direct: the median of the per-round differences):', '', '| target | measured | met |', '|---|---:|:---:|');
  if (parts.includes('thrift')) {
    const cpu = rowOf(rounds, 'thrift', 'prx', 'cpuUsPerCall');
    const ratio = median(rounds.map((r) => (r.thrift?.prx && r.thrift?.direct ? r.thrift.prx.rps / r.thrift.direct.rps : null)));
    lines.push(
      `| thrift throughput against direct (reported) | ${f2(ratio)}× direct | – |`,
      `| thrift p99 against direct (reported) | +${f3(diffOf(rounds, 'thrift', 'p99'))} ms (p50 +${f3(diffOf(rounds, 'thrift', 'p50'))} ms) | – |`,
      httpCpuUs === null
        ? `| thrift prx CPU per call ≤ the HTTP/1.1 router's (not in ${run.mdName}: run the http suite) | ${f2(cpu)} µs | ? |`
        : `| thrift prx CPU per call ≤ the HTTP/1.1 router's ${f2(httpCpuUs)} µs/request (16 conns, ${run.mdName}) | ${f2(cpu)} µs | ${cpu === null ? '?' : cpu <= httpCpuUs ? 'yes' : 'no'} |`,
    );
  }
  if (parts.includes('mux')) {
    const ratio = median(rounds.map((r) => (r.mux?.prx && r.mux?.direct ? r.mux.prx.rps / r.mux.direct.rps : null)));
    lines.push(`| mux throughput and p99 against direct (reported) | ${f2(ratio)}× direct, p99 +${f3(diffOf(rounds, 'mux', 'p99'))} ms | – |`);
  }
  if (big) {
    const mib = big.bytes / (1024 * 1024);
    for (const [d, what] of [['up', 'call'], ['down', 'reply']]) {
      const r = big[d];
      const growth = r.peakMiB - r.baseMiB;
      const met = r.complete && growth < LARGE_GROWTH_PAYLOADS * mib;
      lines.push(`| a ${f2(mib)} MiB ${what} passes${r.complete ? '' : ` (INCOMPLETE: ${r.bytes} bytes)`}, prx's RSS growing < ${LARGE_GROWTH_PAYLOADS} × the payload | +${f2(growth)} MiB (${f2(r.baseMiB)} → ${f2(r.peakMiB)}; ${f2(growth / mib)} payloads; ${int(r.ms)} ms) | ${met ? 'yes' : 'no'} |`);
    }
    largeNote = `The large call and then the large reply, one at a time on one connection after a 64 KiB warm-up of each, each measured from the RSS it started at; over both, prx's RSS went ${f2(big.up.baseMiB)} → ${f2(Math.max(big.up.peakMiB, big.down.peakMiB))} MiB, and was ${f2(big.down.baseMiB)} MiB between them.`;
  }
  if (largeNote !== null) lines.push('', largeNote);
  if (parts.length > 0) {
    lines.push('', `The hop alone (relay − direct), p99: ${parts.map((p) => `${p} ${f3(median(rounds.map((r) => (r[p]?.relay && r[p]?.direct ? r[p].relay.p99 - r[p].direct.p99 : null))))} ms`).join(', ')}; prx over the relay, p99: ${parts.map((p) => `${p} ${f3(diffOf(rounds, p, 'p99', 'relay'))} ms`).join(', ')}.`);
    lines.push('', `| round | ${parts.flatMap((p) => TARGETS.map((t) => `${p} ${t} rps · p99 ms`)).join(' | ')} |`, `|---:|${parts.flatMap(() => TARGETS.map(() => '---:')).join('|')}|`);
    rounds.forEach((r, i) => lines.push(`| ${i + 1} | ${parts.flatMap((p) => TARGETS.map((t) => `${int(r[p]?.[t]?.rps)} · ${f2(r[p]?.[t]?.p99)}`)).join(' | ')} |`));
  }
  lines.push(MARK_END);
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------- the run

async function benchRun(o) {
  requireDist(usageError);
  return supervised(children, 'bench-thrift', async (scratch) => {
    const wantThrift = o.parts.has('thrift') || o.parts.has('large');
    const backends = {};
    if (wantThrift) backends.thrift = (await roleWithPort(0, 'thrift-backend')).port;
    if (o.parts.has('mux')) backends.mux = (await roleWithPort(0, 'mux-backend')).port;
    const ports = {};
    for (const p of Object.keys(backends)) ports[p] = { upstream: backends[p], proxy: await freePort(), relay: (await roleWithPort(1, 'relay', ['--port', String(backends[p])])).port };
    const largeBytes = o.mib * 1024 * 1024;
    const prx = startPrx(children, scratch, 1, prxConfig({ admin: await freePort(), thrift: ports.thrift, mux: ports.mux, largeBytes }));
    for (const p of Object.keys(ports)) await awaitReady(o, p, ports[p].proxy, prx.child, prx.output);

    let big = null;
    if (o.parts.has('large')) {
      big = await large(ports.thrift.proxy, largeBytes, prx.child.pid);
      for (const d of ['up', 'down']) process.stdout.write(`  large ${d}: ${big[d].bytes} of ${largeBytes} bytes in ${int(big[d].ms)} ms; prx RSS ${f2(big[d].baseMiB)} → ${f2(big[d].peakMiB)} MiB (+${f2(big[d].peakMiB - big[d].baseMiB)})\n`);
    }
    const loads = ['thrift', 'mux'].filter((p) => o.parts.has(p));
    if (loads.length > 0) process.stdout.write(`thrift/mux benchmark: ${o.rounds} round(s) × ${o.duration} s per target (${loads.join(', ')})${canPin ? '; load and backends on cpu0, prx on cpu1' : ''}\n`);
    const rounds = [];
    for (let i = 0; loads.length > 0 && i < o.rounds; i++) {
      const round = {};
      for (const p of loads) {
        round[p] = {};
        for (const target of i % 2 === 0 ? TARGETS : [...TARGETS].reverse()) {
          const load = () => measure(o, p, ports[p][target === 'prx' ? 'proxy' : target === 'relay' ? 'relay' : 'upstream'], o.duration, o.warmup);
          const r = target === 'prx' ? await onPrx(prx.child.pid, load) : await load();
          round[p][target] = r;
          process.stdout.write(`  r${i + 1} ${p} ${target}: ${int(r.rps)} rps, p50 ${f3(r.p50)} ms, p99 ${f3(r.p99)} ms, errors ${r.errors}${r.firstError ? ` (${r.firstError})` : ''}\n`);
        }
      }
      rounds.push(round);
    }
    const section = renderThriftSection({
      rounds, date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), o, pinning: canPin, node: process.version,
      httpCpuUs: httpCpuUsPerRequest(existsSync(o.md) ? readFileSync(o.md, 'utf8') : ''), mdName: o.md.endsWith('latest.md') ? 'latest.md' : o.md, big,
    });
    writeSection(o.md, section, MARK_BEGIN, MARK_END);
    process.stdout.write(`\n${section}\nwritten: ${o.md}\n`);
    const failedLoad = rounds.some((r) => loads.some((p) => r[p].prx.calls === 0));
    const failedLarge = big !== null && !(big.up.complete && big.down.complete);
    return failedLoad || failedLarge ? 1 : 0;
  });
}

async function main() {
  const o = options(process.argv.slice(2));
  const needPort = () => o.port ?? usageError(`--role ${o.role} needs --port`);
  switch (o.role) {
    case undefined:
      break;
    case 'thrift-backend':
      return thriftBackendRole().then(() => undefined);
    case 'mux-backend':
      return muxBackendRole().then(() => undefined);
    case 'relay':
      return relayRole(needPort()).then(() => undefined);
    case 'thrift-load':
      await thriftLoadRole({ port: needPort(), connections: o.connections, warmup: o.warmup, duration: o.duration });
      return 0;
    case 'mux-load':
      await muxLoadRole({ port: needPort(), sessions: o.sessions, perSession: o.perSession, warmup: o.warmup, duration: o.duration });
      return 0;
    case 'thrift-large':
      if (o.direction !== 'up' && o.direction !== 'down') usageError(`--role thrift-large needs --direction up or down, got ${JSON.stringify(o.direction)}`);
      await thriftLargeRole({ port: needPort(), bytes: o.largeBytes ?? o.mib * 1024 * 1024, direction: o.direction });
      return 0;
    default:
      usageError(`--role must be thrift-backend, mux-backend, relay, thrift-load, mux-load or thrift-large, got ${JSON.stringify(o.role)}`);
  }
  if (o.otherMode !== undefined) {
    process.stdout.write(`thrift/mux benchmark: skipped (${o.otherMode} is another suite's mode)\n`);
    return 0;
  }
  return benchRun(o);
}

runMain(SELF, 'bench-thrift', main);
