// What the benchmark scripts that run their roles as child processes share (scripts/bench-grpc.mjs,
// scripts/bench-thrift.mjs): usage errors, free ports, pinning with taskset, a child's first line,
// stopping children, a process's CPU time and RSS from /proc, percentiles and medians, number
// formats, a bare TCP relay role, and replacing a script's own marked section in a Markdown file.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { cpus } from 'node:os';
import { createInterface } from 'node:readline';

/** `usageError(message)` (prints `<script>: message`, exits 2) and `wholeNumber(name, text, min)` for `script`. */
export function usage(script) {
  const usageError = (message) => {
    process.stderr.write(`${script}: ${message}\n`);
    process.exit(2);
  };
  const wholeNumber = (name, text, min) => {
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text) || Number(text) < min) usageError(`--${name} must be a whole number ≥ ${min}, got ${JSON.stringify(text)}`);
    return Number(text);
  };
  return { usageError, wholeNumber };
}

export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

export const canPin = cpus().length >= 2 && spawnSync('taskset', ['--version']).status === 0;

/** `cmd args` pinned to `core` when taskset exists and there are 2+ cores. */
export function pinned(core, cmd, args) {
  return canPin ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args];
}

/** Spawns (pinned) children and stops them all at the end. */
export class Children {
  #all = new Set();

  start(core, cmd, args, stdio) {
    const [c, a] = pinned(core, cmd, args);
    const child = spawn(c, a, { stdio });
    this.#all.add(child);
    child.once('exit', () => this.#all.delete(child));
    return child;
  }

  /** SIGTERM to every child still running, SIGKILL after `timeoutMs`. */
  async stopAll(timeoutMs = 5000) {
    for (const c of this.#all) c.kill('SIGTERM');
    await Promise.all([...this.#all].map((c) => stopped(c, timeoutMs)));
  }
}

export function firstLine(child, timeoutMs, what) {
  return new Promise((ok, fail) => {
    const lines = createInterface({ input: child.stdout });
    const timer = setTimeout(() => fail(new Error(`${what}: no output within ${timeoutMs} ms`)), timeoutMs);
    lines.once('line', (l) => {
      clearTimeout(timer);
      lines.close();
      ok(l);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${what} exited (${code}) before reporting`));
    });
  });
}

export function stopped(child, timeoutMs) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
  });
}

/** utime + stime of a process, in seconds; null when it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const hz = 100; // USER_HZ: 100 on every Linux the harness runs on
    return (Number(f[11]) + Number(f[12])) / hz;
  } catch {
    return null;
  }
}

export function rssMiB(pid) {
  try {
    const kib = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isFinite(kib) ? kib / 1024 : null;
  } catch {
    return null;
  }
}

/** The `p` quantile (0..1) of ascending `sorted`; null when empty. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/** The median of the finite numbers among `xs`; null when there are none. */
export function median(xs) {
  const a = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((p, q) => p - q);
  if (a.length === 0) return null;
  const m = Math.floor(a.length / 2);
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
}

const finite = (v) => typeof v === 'number' && Number.isFinite(v);
export const f2 = (v) => (finite(v) ? v.toFixed(2) : '–');
export const f3 = (v) => (finite(v) ? v.toFixed(3) : '–');
export const int = (v) => (finite(v) ? Math.round(v).toLocaleString('en-US') : '–');

/**
 * The relay role: a bare TCP byte relay (node net, no parsing) on 127.0.0.1 in front of `port`, in
 * prx's place and on its core: what one more hop costs on this machine, whatever the proxy.
 * Prints {"port": N}; exits when stdin closes.
 */
export async function relayRole(port) {
  const server = createServer({ noDelay: true }, (down) => {
    const up = connect({ host: '127.0.0.1', port, noDelay: true });
    down.pipe(up).on('error', () => down.destroy());
    up.pipe(down).on('error', () => up.destroy());
    down.on('error', () => up.destroy());
    up.on('error', () => down.destroy());
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
  process.stdin.resume();
  process.stdin.once('close', () => process.exit(0));
}

/**
 * `md` with the section between the markers `begin` and `end` replaced by `section` (which carries
 * the markers itself), or with `section` appended after a blank line when `md` has none.
 */
export function withSection(md, section, begin, end) {
  const b = md.indexOf(begin);
  const e = md.indexOf(end);
  if (b >= 0 && e > b) return md.slice(0, b) + section + md.slice(e + end.length + (md[e + end.length] === '\n' ? 1 : 0));
  return `${md}${md.length === 0 || md.endsWith('\n\n') ? '' : md.endsWith('\n') ? '\n' : '\n\n'}${section}`;
}

/**
 * The recorded window of a closed-loop load run: `warmup` s unrecorded from now, then `duration` s
 * recorded; calls straddling the window are not counted. `result()` is the load roles' JSON line.
 */
export class CallWindow {
  #lat = [];
  #total = 0;
  #errors = 0;
  #firstError = null;
  #recordedFrom = 0;
  #recordFrom;
  stopAt;

  constructor(warmup, duration) {
    this.#recordFrom = performance.now() + warmup * 1000;
    this.stopAt = this.#recordFrom + duration * 1000;
  }

  /** Whether loops should keep calling. */
  get open() {
    return performance.now() < this.stopAt;
  }

  /** A call from `start` to `end` (performance.now() ms); `error` a string when it failed. */
  record(start, end, error) {
    this.#total++;
    if (this.#recordedFrom === 0 && end >= this.#recordFrom) this.#recordedFrom = end;
    if (this.#recordedFrom === 0 || start < this.#recordFrom || end > this.stopAt) return;
    if (error === undefined) this.#lat.push(end - start);
    else {
      this.#errors++;
      this.#firstError ??= error;
    }
  }

  result() {
    const seconds = (this.stopAt - this.#recordedFrom) / 1000;
    const lat = this.#lat.sort((a, b) => a - b);
    return {
      calls: lat.length, errors: this.#errors, total: this.#total, rps: this.#recordedFrom > 0 ? lat.length / seconds : 0,
      p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), p999: percentile(lat, 0.999), firstError: this.#firstError,
    };
  }
}
