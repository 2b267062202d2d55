// The legitimate load, in its own process so the attackers' work never delays its clock: each
// route gets `conns` keep-alive HTTP/1.1 connections, each sending paced GETs one at a time. The
// parent names the phase (warmup, attack, recovery) over IPC; every request is counted in the
// phase it was sent in. Latency runs from send to the last body byte; when one takes longer than
// the pacing interval, the requests that a wrk2-style schedule would have sent meanwhile are
// recorded as synthetic samples (HdrHistogram's expected-interval correction), so a stall weighs
// in the percentiles as the users behind it would feel it.
import * as http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface LoadRoute {
  name: string;
  port: number;
  host: string;
  path: string;
  conns: number;
  rps: number;
}

export interface LoadSpec {
  routes: LoadRoute[];
  timeoutMs: number;
}

export interface PhaseSummary {
  sent: number;
  ok: number;
  failed: number;
  /** Failures by outcome (status code, timeout, reset, refused, …). */
  failures: Record<string, number>;
  /** Latency percentiles in ms over answered-ok requests and timeouts, corrected as above. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** p99 of the measured send-to-answer times alone (no synthetic samples). */
  serviceP99: number;
  synthetic: number;
  /** Per second of the phase: [sent, failed, max latency ms]. */
  seconds: [number, number, number][];
}

export type Phase = 'warmup' | 'attack' | 'recovery';
export type LoadMessage = { type: 'result'; phases: Record<string, Record<Phase, PhaseSummary>> };

class PhaseStats {
  readonly start = performance.now();
  sent = 0;
  ok = 0;
  failures = new Map<string, number>();
  latencies: number[] = [];
  service: number[] = [];
  synthetic = 0;
  seconds: [number, number, number][] = [];

  record(sentAt: number, outcome: string, ms: number, intervalMs: number): void {
    this.sent++;
    const sec = Math.max(0, Math.floor((sentAt - this.start) / 1000));
    while (this.seconds.length <= sec) this.seconds.push([0, 0, 0]);
    const s = this.seconds[sec]!;
    s[0]++;
    const ok = outcome.startsWith('2') && outcome.length === 3;
    if (ok) this.ok++;
    else {
      s[1]++;
      this.failures.set(outcome, (this.failures.get(outcome) ?? 0) + 1);
    }
    if (!ok && outcome !== 'timeout') return;
    s[2] = Math.max(s[2], ms);
    this.latencies.push(ms);
    this.service.push(ms);
    for (let missing = ms - intervalMs; missing >= intervalMs; missing -= intervalMs) {
      this.latencies.push(missing);
      this.synthetic++;
    }
  }

  summary(): PhaseSummary {
    const sorted = Float64Array.from(this.latencies).sort();
    const service = Float64Array.from(this.service).sort();
    const round = (ms: number) => Math.round(ms * 1000) / 1000;
    const q = (xs: Float64Array, p: number) => (xs.length === 0 ? 0 : round(xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]!));
    return {
      sent: this.sent,
      ok: this.ok,
      failed: this.sent - this.ok,
      failures: Object.fromEntries(this.failures),
      p50: q(sorted, 0.5),
      p99: q(sorted, 0.99),
      p999: q(sorted, 0.999),
      max: sorted.length === 0 ? 0 : round(sorted[sorted.length - 1]!),
      serviceP99: q(service, 0.99),
      synthetic: this.synthetic,
      seconds: this.seconds.map(([a, b, c]) => [a, b, Math.round(c * 100) / 100]),
    };
  }
}

function get(agent: http.Agent, route: LoadRoute, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(o);
    };
    const req = http.get({ agent, host: '127.0.0.1', port: route.port, path: route.path, headers: { host: route.host } });
    const timer = setTimeout(() => {
      req.destroy();
      finish('timeout');
    }, timeoutMs);
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => finish(String(res.statusCode)));
      res.once('error', () => finish('reset'));
    });
    req.once('error', (e: NodeJS.ErrnoException) =>
      finish(e.code === 'ECONNRESET' ? 'reset' : e.code === 'ECONNREFUSED' ? 'refused' : `error:${e.code ?? 'unknown'}`),
    );
  });
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
let phase: Phase = 'warmup';
let stopped = false;
const stats = new Map<string, Map<Phase, PhaseStats>>();
const statsOf = (route: string): PhaseStats => {
  let byPhase = stats.get(route);
  if (!byPhase) stats.set(route, (byPhase = new Map<Phase, PhaseStats>()));
  let s = byPhase.get(phase);
  if (!s) byPhase.set(phase, (s = new PhaseStats()));
  return s;
};

async function worker(route: LoadRoute, index: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const intervalMs = (1000 * route.conns) / route.rps;
  let next = performance.now() + (intervalMs * index) / route.conns;
  while (!stopped) {
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (stopped) break;
    const s = statsOf(route.name);
    const sentAt = performance.now();
    const outcome = await get(agent, route, spec.timeoutMs);
    const end = performance.now();
    s.record(sentAt, outcome, end - sentAt, intervalMs);
    next = sentAt + intervalMs;
  }
  agent.destroy();
}

const workers = spec.routes.flatMap((r) => Array.from({ length: r.conns }, (_, i) => worker(r, i)));

process.on('message', (m: { phase?: Phase; stop?: boolean }) => {
  if (m.phase) phase = m.phase;
  if (m.stop) void stop();
});
process.once('disconnect', () => process.exit(0));

async function stop(): Promise<void> {
  stopped = true;
  await Promise.all(workers);
  const phases: Record<string, Record<string, PhaseSummary>> = {};
  for (const [route, byPhase] of stats) phases[route] = Object.fromEntries([...byPhase].map(([p, s]) => [p, s.summary()]));
  process.send?.({ type: 'result', phases }, () => process.exit(0));
}
