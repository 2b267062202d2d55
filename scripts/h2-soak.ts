// `npm run soak:h2`: a long run of gRPC through prx's h2 router, looking for what Linkerd 1's h2
// router was known for: long-lived streams that stall, calls that fail under steady load, memory
// and descriptors that creep. One grpc-js backend (in this process) and bin/prx (an h2 router from
// a temp config); through prx, one long-lived bidi stream (a 64-byte message every --bidi-ms,
// each echoed and checked in order) and steady unary load (--rps, each call with a 5 s deadline).
// Reports every --interval and at the end; exit 0 when nothing stalled (no gap between echoes over
// --stall-ms), no unary call failed, the bidi stream lived to the end with every message echoed in
// order and prx stayed up; 1 naming what failed; 2 when the setup could not start.
//
//   npm run soak:h2 -- [--duration 60s] [--interval 10s] [--rps 200] [--bidi-ms 10] [--stall-ms 1000]
//                      [--json FILE] [--keep]
//   e.g. npm run soak:h2 -- --duration 30m
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SAY = '/test.Echo/Say';
const CHAT = '/test.Echo/Chat';
const MESSAGE_BYTES = 64;
const UNARY_DEADLINE_MS = 5000;

/** A bad command line: reported as its message alone. */
class UsageError extends Error {}

/** `90`, `90s`, `30m`, `2h` → milliseconds. */
function durationMs(name: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new UsageError(`--${name} must be a duration like 60s, 30m or 2h, got ${JSON.stringify(text)}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got ${JSON.stringify(text)}`);
  return n;
}

interface Options {
  durationMs: number;
  intervalMs: number;
  rps: number;
  bidiMs: number;
  stallMs: number;
  json: string | undefined;
  keep: boolean;
  inject: Fault | undefined;
}

/** Faults the backend can inject once, 1 s into the load: how the soak is checked to see them. */
const FAULTS = ['stall', 'unary-error'] as const;
type Fault = (typeof FAULTS)[number];

function options(): Options {
  const { values: a } = parseArgs({
    options: {
      duration: { type: 'string', default: '60s' },
      interval: { type: 'string' },
      rps: { type: 'string', default: '200' },
      'bidi-ms': { type: 'string', default: '10' },
      'stall-ms': { type: 'string', default: '1000' },
      json: { type: 'string' },
      keep: { type: 'boolean', default: false },
      inject: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (a.help) {
    process.stdout.write(`npm run soak:h2 -- [options]
  --duration 60s    how long the load runs (s, m, h; e.g. 30m)
  --interval        report period (default 10s, 60s for runs of 10 minutes or more)
  --rps 200         unary calls per second through prx (64 B each way, 5 s deadline)
  --bidi-ms 10      one message on the long-lived bidi stream every this many ms
  --stall-ms 1000   a gap between two echoes longer than this is a stall (fails the run)
  --json FILE       also write the summary as JSON
  --keep            keep the temp dir (prx.yaml, prx.log)
  --inject FAULT    check the soak itself: 1 s in, the backend holds bidi echoes for --stall-ms + 500 ms
                    (stall) or fails one unary call with INTERNAL (unary-error); the run must fail
`);
    process.exit(0);
  }
  if (a.inject !== undefined && !(FAULTS as readonly string[]).includes(a.inject)) throw new UsageError(`--inject takes ${FAULTS.join(' or ')}, got ${JSON.stringify(a.inject)}`);
  const duration = durationMs('duration', a.duration);
  if (duration < 1000) throw new UsageError('--duration must be at least 1s');
  return {
    durationMs: duration,
    intervalMs: a.interval !== undefined ? durationMs('interval', a.interval) : duration >= 600_000 ? 60_000 : 10_000,
    rps: positive('rps', a.rps),
    bidiMs: positive('bidi-ms', a['bidi-ms']),
    stallMs: positive('stall-ms', a['stall-ms']),
    json: a.json,
    keep: a.keep,
    inject: a.inject as Fault | undefined,
  };
}

// ---------------------------------------------------------------- measurement helpers

/** Latencies in ms, in log buckets 1 % wide from 1 µs up (constant memory for runs of hours). */
class Histogram {
  private static readonly BASE = Math.log(1.01);
  private readonly counts = new Uint32Array(2400); // 1.01^2400 µs ≈ 23 000 s
  count = 0;

  add(ms: number): void {
    const us = Math.max(1, ms * 1000);
    this.counts[Math.min(this.counts.length - 1, Math.floor(Math.log(us) / Histogram.BASE))]! += 1;
    this.count++;
  }

  /** The p-quantile in ms (upper edge of its bucket), or null when empty. */
  quantile(p: number): number | null {
    if (this.count === 0) return null;
    const rank = Math.max(1, Math.ceil(p * this.count));
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.exp((i + 1) * Histogram.BASE) / 1000;
    }
    return null;
  }
}

interface ProcSample {
  rssMiB: number;
  fds: number;
}

function sampleProc(pid: number): ProcSample | null {
  try {
    const fds = readdirSync(`/proc/${pid}/fd`).length;
    const kib = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isFinite(kib) ? { rssMiB: Math.round((kib / 1024) * 10) / 10, fds } : null;
  } catch {
    return null;
  }
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = net.createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => ok(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const same = (b: Buffer): Buffer => b;
const fmt = (v: number | null, d = 2) => (v === null ? '–' : v.toFixed(d));

// ---------------------------------------------------------------- backend, prx

/** The backend's fault switch: armed by the soak once the load runs (--inject). */
interface FaultSwitch {
  holdEchoesUntil: number; // performance.now() until which Chat queues its echoes
  failNextUnary: boolean;
}

/** The grpc-js backend: Say echoes the request, Chat echoes every message, in order. */
async function startBackend(fault: FaultSwitch): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  const def = (path: string, stream: boolean) => ({
    path, requestStream: stream, responseStream: stream,
    requestSerialize: same, requestDeserialize: same, responseSerialize: same, responseDeserialize: same,
  });
  server.addService({ Say: def(SAY, false), Chat: def(CHAT, true) }, {
    Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      if (!fault.failNextUnary) return done(null, call.request);
      fault.failNextUnary = false;
      done({ code: grpc.status.INTERNAL, details: 'injected by --inject unary-error' });
    },
    Chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      const held: Buffer[] = [];
      let timer: NodeJS.Timeout | undefined;
      const flush = () => {
        timer = undefined;
        for (const m of held.splice(0)) call.write(m);
      };
      call.on('data', (m: Buffer) => {
        const wait = fault.holdEchoesUntil - performance.now();
        if (wait <= 0 && held.length === 0) return void call.write(m);
        held.push(m);
        timer ??= setTimeout(flush, Math.max(0, wait));
      });
      call.on('close', () => clearTimeout(timer));
      call.on('end', () => {
        clearTimeout(timer);
        flush();
        call.end();
      });
      call.on('error', () => undefined); // the client's cancel; nothing to clean up
    },
  });
  const port = await new Promise<number>((ok, fail) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? fail(e) : ok(p))),
  );
  return { server, port };
}

function prxConfig(p: { proxy: number; admin: number; backend: number }): unknown {
  return {
    admin: { ip: '127.0.0.1', port: p.admin },
    routers: [
      {
        protocol: 'h2',
        label: 'soak-h2',
        // gRPC's /test.Echo/<method> → /svc/test.Echo
        identifier: { kind: 'io.prx.header.path', segments: 1 },
        dtab: `/svc/test.Echo => /$/inet/127.0.0.1/${p.backend};`,
        service: {
          kind: 'io.prx.global',
          responseClassifier: { kind: 'io.prx.h2.grpc.default' },
          retries: { budget: { minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 }, backoff: { kind: 'jittered', minMs: 10, maxMs: 100 } },
        },
        client: {
          kind: 'io.prx.global',
          failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 5, backoff: { kind: 'jittered', minMs: 5000, maxMs: 300000 } },
        },
        servers: [{ ip: '127.0.0.1', port: p.proxy }],
      },
    ],
  };
}

function unary(client: grpc.Client, payload: Buffer, deadlineMs: number): Promise<{ ok: boolean; ms: number; error?: string }> {
  const start = performance.now();
  return new Promise((done) => {
    client.makeUnaryRequest(SAY, same, same, payload, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (e, reply) => {
      const ms = performance.now() - start;
      if (e) done({ ok: false, ms, error: `${grpc.status[e.code] ?? e.code}: ${e.details}` });
      else if (!reply?.equals(payload)) done({ ok: false, ms, error: 'reply differs from the request' });
      else done({ ok: true, ms });
    });
  });
}

// ---------------------------------------------------------------- the soak

interface Interval {
  sent: number;
  received: number;
  maxGapMs: number;
  ok: number;
  failed: number;
  lat: Histogram;
}

const newInterval = (): Interval => ({ sent: 0, received: 0, maxGapMs: 0, ok: 0, failed: 0, lat: new Histogram() });

async function main(): Promise<number> {
  const o = options();
  if (!existsSync(join(REPO, 'dist/bundle/prx.js')) && !existsSync(join(REPO, 'dist/cli/prx.js'))) {
    process.stderr.write('h2-soak: dist/ is missing; run `npm run build` (npm run soak:h2 does)\n');
    return 2;
  }
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'prx-h2-soak-'));
  const fault: FaultSwitch = { holdEchoesUntil: 0, failNextUnary: false };
  const backend = await startBackend(fault);
  const ports = { proxy: await freePort(), admin: await freePort(), backend: backend.port };
  const config = join(dir, 'prx.yaml');
  writeFileSync(config, JSON.stringify(prxConfig(ports), null, 2));
  const logFd = openSync(join(dir, 'prx.log'), 'a');
  const prx: ChildProcess = spawn(join(REPO, 'bin/prx'), [config], { cwd: dir, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  let prxExit = null as string | null; // set by the exit handler
  prx.once('exit', (code, signal) => (prxExit = `prx exited (${signal ?? code})`));
  const client = new grpc.Client(`127.0.0.1:${ports.proxy}`, grpc.credentials.createInsecure());
  const failures: string[] = [];
  const cleanup = async () => {
    client.close();
    if (prx.exitCode === null && prx.signalCode === null) {
      prx.kill('SIGTERM');
      const t = setTimeout(() => prx.kill('SIGKILL'), 5000);
      await new Promise((r) => prx.once('exit', r));
      clearTimeout(t);
    }
    backend.server.forceShutdown();
    if (!o.keep) rmSync(dir, { recursive: true, force: true });
    else log(`kept: ${dir}`);
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));

  // ready: a unary call through prx succeeds
  const payload = Buffer.alloc(MESSAGE_BYTES, 0x61);
  const readyBy = Date.now() + 20_000;
  for (;;) {
    if (prxExit !== null) {
      process.stderr.write(`h2-soak: ${prxExit}; log:\n${readFileSync(join(dir, 'prx.log'), 'utf8').slice(-2000)}\n`);
      await cleanup();
      return 2;
    }
    const r = await unary(client, payload, 1000);
    if (r.ok) break;
    if (Date.now() > readyBy) {
      process.stderr.write(`h2-soak: no unary call succeeds through prx (${r.error}); log:\n${readFileSync(join(dir, 'prx.log'), 'utf8').slice(-2000)}\n`);
      await cleanup();
      return 2;
    }
    await sleep(200);
  }
  const pid = prx.pid ?? -1;
  const start = sampleProc(pid);
  let peakRss = start?.rssMiB ?? 0;
  log(`h2 soak: ${(o.durationMs / 1000).toFixed(0)} s through prx (pid ${pid}, h2 router on 127.0.0.1:${ports.proxy}); bidi message every ${o.bidiMs} ms, ${o.rps} unary rps; stall = gap > ${o.stallMs} ms`);
  log(`start: prx RSS ${fmt(start?.rssMiB ?? null, 1)} MiB, ${start?.fds ?? '–'} fds`);

  const total = newInterval();
  let cur = newInterval();
  let stalls = 0;
  let inStall = false;
  let orderErrors = 0;
  let bidiBroken = null as string | null; // set by the stream's handlers
  let bidiStatus = null as grpc.StatusObject | null;
  let ending = false;
  const t0 = performance.now();

  // the long-lived bidi stream
  const bidi = client.makeBidiStreamRequest(CHAT, same, same, new grpc.Metadata());
  let nextSeq = 0;
  let expected = 0;
  let lastEcho = performance.now();
  bidi.on('data', (m: Buffer) => {
    const now = performance.now();
    const gap = now - lastEcho;
    lastEcho = now;
    inStall = false;
    cur.maxGapMs = Math.max(cur.maxGapMs, gap);
    total.maxGapMs = Math.max(total.maxGapMs, gap);
    const seq = m.length === MESSAGE_BYTES ? m.readUInt32BE(0) : -1;
    if (seq !== expected) {
      if (orderErrors++ < 5) failures.push(`bidi: echo #${total.received} carries seq ${seq}, expected ${expected}`);
      expected = seq + 1;
    } else expected++;
    cur.received++;
    total.received++;
  });
  bidi.on('error', (e: grpc.ServiceError) => {
    if (!ending || e.code !== grpc.status.CANCELLED) bidiBroken ??= `bidi stream broke: ${grpc.status[e.code] ?? e.code}: ${e.details}`;
  });
  bidi.on('status', (s: grpc.StatusObject) => (bidiStatus = s));
  const bidiEnded = new Promise<void>((r) => bidi.once('close', r));
  bidi.once('end', () => {
    if (!ending) bidiBroken ??= 'bidi stream ended by the server before the client ended it';
  });
  const sendTimer = setInterval(() => {
    if (bidiBroken !== null) return;
    const m = Buffer.alloc(MESSAGE_BYTES, 0x62);
    m.writeUInt32BE(nextSeq++ >>> 0, 0);
    bidi.write(m);
    cur.sent++;
    total.sent++;
  }, o.bidiMs);

  // steady unary load, paced on elapsed time (a late timer issues what is due, at most 1 s worth)
  let issued = 0;
  let inFlight = 0;
  const errorsSeen = new Map<string, number>();
  const unaryTimer = setInterval(() => {
    const due = Math.floor(((performance.now() - t0) / 1000) * o.rps);
    const cap = Math.ceil(o.rps);
    if (due - issued > cap) issued = due - cap; // over 1 s behind: the backlog beyond it is dropped
    const n = due - issued;
    issued = due;
    for (let i = 0; i < n; i++) {
      inFlight++;
      void unary(client, payload, UNARY_DEADLINE_MS).then((r) => {
        inFlight--;
        if (r.ok) {
          cur.ok++;
          total.ok++;
          cur.lat.add(r.ms);
          total.lat.add(r.ms);
        } else {
          cur.failed++;
          total.failed++;
          const k = r.error ?? '?';
          errorsSeen.set(k, (errorsSeen.get(k) ?? 0) + 1);
        }
      });
    }
  }, 5);

  // stalls (also one still going on), RSS peak, prx alive; one report line per interval
  const watch = setInterval(() => {
    const gap = performance.now() - lastEcho;
    if (gap > o.stallMs && !inStall && total.sent > total.received) {
      inStall = true;
      stalls++;
      failures.push(`bidi: no echo for ${gap.toFixed(0)} ms at ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    const s = sampleProc(pid);
    if (s) peakRss = Math.max(peakRss, s.rssMiB);
  }, 100);
  let lastReport = t0;
  const report = () => {
    const now = performance.now();
    const gapNow = now - lastEcho;
    const s = sampleProc(pid);
    log(
      `[${((now - t0) / 1000).toFixed(0).padStart(5)} s] bidi sent ${cur.sent} recv ${cur.received} (total ${total.sent}/${total.received}) max gap ${Math.max(cur.maxGapMs, total.sent > total.received ? gapNow : 0).toFixed(0)} ms | ` +
        `unary ok ${cur.ok} failed ${cur.failed} p50 ${fmt(cur.lat.quantile(0.5))} p99 ${fmt(cur.lat.quantile(0.99))} ms | prx RSS ${fmt(s?.rssMiB ?? null, 1)} MiB, ${s?.fds ?? '–'} fds`,
    );
    cur = newInterval();
    lastReport = now;
  };

  const injectAt = o.inject === undefined ? undefined : setTimeout(() => {
    if (o.inject === 'stall') fault.holdEchoesUntil = performance.now() + o.stallMs + 500;
    else fault.failNextUnary = true;
    log(`injected: ${o.inject}`);
  }, 1000);
  const deadline = t0 + o.durationMs;
  while (performance.now() < deadline && prxExit === null && bidiBroken === null) {
    await sleep(Math.min(250, deadline - performance.now()));
    if (performance.now() - lastReport >= o.intervalMs) report();
  }
  const ranMs = performance.now() - t0;
  clearInterval(unaryTimer);
  clearInterval(sendTimer);
  clearTimeout(injectAt);
  // in-flight unary calls end by their deadline; the bidi stream is half-closed and must echo all
  for (const until = Date.now() + UNARY_DEADLINE_MS + 1000; inFlight > 0 && Date.now() < until; ) await sleep(20);
  ending = true;
  if (bidiBroken === null) {
    bidi.end();
    await Promise.race([bidiEnded, sleep(5000)]);
  } else bidi.cancel();
  clearInterval(watch);
  if (cur.sent + cur.received + cur.ok + cur.failed > 0) report();
  // a pooled connection may close a little after the load; give descriptors a moment to settle
  await sleep(1000);
  const end = sampleProc(pid);

  if (prxExit !== null) failures.unshift(prxExit);
  if (bidiBroken !== null) failures.unshift(bidiBroken);
  const finalStatus = bidiStatus;
  if (bidiBroken === null && finalStatus === null) failures.push('bidi stream: no status 5 s after the client ended it');
  else if (bidiBroken === null && finalStatus !== null && finalStatus.code !== grpc.status.OK) failures.push(`bidi stream ended with ${grpc.status[finalStatus.code]}: ${finalStatus.details}`);
  if (bidiBroken === null && total.received !== total.sent) failures.push(`bidi: ${total.sent} sent, ${total.received} echoed`);
  if (total.failed > 0) failures.push(`unary: ${total.failed} failed (${[...errorsSeen].map(([k, n]) => `${n}× ${k}`).join('; ')})`);
  if (inFlight > 0) failures.push(`unary: ${inFlight} call(s) still unanswered after their deadline`);
  if (stalls > 0 && !failures.some((f) => f.startsWith('bidi: no echo'))) failures.push(`${stalls} stall(s)`);

  const summary = {
    date: new Date().toISOString(),
    seconds: Math.round(ranMs / 100) / 10,
    bidi: { sent: total.sent, received: total.received, maxGapMs: Math.round(total.maxGapMs * 10) / 10, stalls, orderErrors, status: finalStatus ? grpc.status[finalStatus.code] : null },
    unary: { ok: total.ok, failed: total.failed, rps: Math.round((total.ok / (ranMs / 1000)) * 10) / 10, p50Ms: total.lat.quantile(0.5), p99Ms: total.lat.quantile(0.99), p999Ms: total.lat.quantile(0.999) },
    prx: { rssMiB: { start: start?.rssMiB ?? null, peak: peakRss, end: end?.rssMiB ?? null }, fds: { start: start?.fds ?? null, end: end?.fds ?? null } },
    ok: failures.length === 0,
    failures,
  };
  log('');
  log(`h2 soak, ${summary.seconds} s:`);
  log(`  bidi: ${total.sent} sent, ${total.received} echoed in order${orderErrors ? ` (${orderErrors} out of order)` : ''}, max gap ${fmt(total.maxGapMs, 1)} ms, ${stalls} stall(s) over ${o.stallMs} ms, final status ${summary.bidi.status ?? '–'}`);
  log(`  unary: ${total.ok} ok, ${total.failed} failed (${summary.unary.rps} rps), p50 ${fmt(summary.unary.p50Ms)} ms, p99 ${fmt(summary.unary.p99Ms)} ms, p99.9 ${fmt(summary.unary.p999Ms)} ms`);
  log(`  prx RSS MiB: start ${fmt(start?.rssMiB ?? null, 1)}, peak ${fmt(peakRss, 1)}, end ${fmt(end?.rssMiB ?? null, 1)}; fds: start ${start?.fds ?? '–'}, end ${end?.fds ?? '–'}`);
  log(summary.ok ? '  PASS' : `  FAIL:\n${failures.map((f) => `    - ${f}`).join('\n')}`);
  if (o.json !== undefined) writeFileSync(o.json, `${JSON.stringify(summary, null, 2)}\n`);
  await cleanup();
  return summary.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    const usage = e instanceof UsageError || (e as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION';
    process.stderr.write(`h2-soak: ${e instanceof Error ? (usage ? e.message : (e.stack ?? e.message)) : String(e)}\n`);
    process.exit(2);
  },
);
