// The fleet under test: the backends (a child process), an fs namer directory, a prx and a
// prx-resolver started from the built bin/ executables with configs written to a temp dir, all on
// free ports of 127.0.0.1. Every child is tracked by PID and killed by PID at the end.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { httpCall, sleep } from './wire.js';

export interface BackendPorts {
  good: number[];
  upgrade: number;
  silent: number;
  bareLf: number;
  badChunk: number;
}

export interface FleetPorts {
  prx: number;
  prxAdmin: number;
  resolver: number;
  resolverAdmin: number;
  backends: BackendPorts;
}

/** A child process and how it ended, if it did. */
export class Watched {
  exit: { code: number | null; signal: NodeJS.Signals | null; atMs: number } | null = null;
  readonly ended: Promise<void>;
  readonly name: string;
  readonly child: ChildProcess;
  readonly logPath: string | null;

  constructor(name: string, child: ChildProcess, logPath: string | null, startedAt: number) {
    this.name = name;
    this.child = child;
    this.logPath = logPath;
    this.ended = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal, atMs: Date.now() - startedAt };
        resolve();
      }),
    );
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** The last lines of its log (why it died). */
  logTail(lines = 6): string[] {
    if (!this.logPath) return [];
    try {
      return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines);
    } catch {
      return [];
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; by PID only. */
  async kill(graceMs = 3000): Promise<void> {
    if (!this.alive) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.ended;
    clearTimeout(timer);
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export const ROUTER = 'soak';

export interface FleetOptions {
  repo: string;
  poolIdleMs: number;
}

/** The fleet, started; `stop()` kills whatever is still running and removes the temp dir. */
export class Fleet {
  readonly dir = mkdtempSync(join(tmpdir(), 'prx-soak-'));
  readonly disco = join(this.dir, 'disco');
  readonly children: Watched[] = [];
  readonly startedAt = Date.now();
  ports!: FleetPorts;
  prx!: Watched;
  resolver!: Watched;

  async start(o: FleetOptions): Promise<void> {
    mkdirSync(this.disco);
    const backends = this.spawn('backends', process.execPath, ['--import', 'tsx', join(o.repo, 'scripts/attack-soak/backends.ts')], null, o.repo);
    const line = await firstLine(backends.child, 15_000);
    const b = JSON.parse(line) as BackendPorts;
    this.ports = { prx: await freePort(), prxAdmin: await freePort(), resolver: await freePort(), resolverAdmin: await freePort(), backends: b };
    this.writeNames();

    const prxConfig = join(this.dir, 'prx.yaml');
    writeFileSync(prxConfig, JSON.stringify(this.prxConfig(o.poolIdleMs), null, 2));
    const resolverConfig = join(this.dir, 'resolver.yaml');
    writeFileSync(resolverConfig, JSON.stringify(this.resolverConfig(), null, 2));
    this.prx = this.spawn('prx', join(o.repo, 'bin/prx'), [prxConfig], join(this.dir, 'prx.log'), this.dir);
    this.resolver = this.spawn('prx-resolver', join(o.repo, 'bin/prx-resolver'), [resolverConfig], join(this.dir, 'resolver.log'), this.dir);
    await this.ready();
  }

  /** One fs namer file per backend; `churn` is the one item 12 rewrites in place. */
  private writeNames(): void {
    const b = this.ports.backends;
    const lines = (ports: number[]) => ports.map((p) => `127.0.0.1 ${p}\n`).join('');
    for (const [name, ports] of Object.entries({
      good: b.good,
      churn: b.good,
      upgrade: [b.upgrade],
      silent: [b.silent],
      barelf: [b.bareLf],
      badchunk: [b.badChunk],
    })) {
      writeFileSync(join(this.disco, name), lines(ports));
    }
  }

  /** Rewrites `churn` in place (truncate, then two writes), alternating the order of its lines. */
  rewriteChurn(flip: boolean): void {
    const [a, b] = this.ports.backends.good;
    const fd = openSync(join(this.disco, 'churn'), 'w');
    try {
      writeFileSync(fd, `127.0.0.1 ${flip ? a : b}\n`);
      writeFileSync(fd, `127.0.0.1 ${flip ? b : a}\n`);
    } finally {
      closeSync(fd);
    }
  }

  private prxConfig(poolIdleMs: number): unknown {
    const p = this.ports;
    return {
      admin: { ip: '127.0.0.1', port: p.prxAdmin },
      namers: [{ kind: 'io.prx.fs', rootDir: this.disco }],
      routers: [
        {
          protocol: 'http',
          label: ROUTER,
          // /svc/<Host> by the default identifier. `loop` is this proxy itself (item 7) and
          // `admin` its own admin listener, both configured on purpose.
          dtab: [
            '/svc => /#/io.prx.fs;',
            `/svc/loop => /$/inet/127.0.0.1/${p.prx};`,
            `/svc/admin => /$/inet/127.0.0.1/${p.prxAdmin};`,
          ].join('\n'),
          // Idle pooled connections close after poolIdleMs (default 600 s), so the minute after
          // the attack measures what leaked, not what the pool keeps on purpose.
          client: { kind: 'io.prx.global', hostConnectionPool: { idleTimeMs: poolIdleMs } },
          servers: [{ ip: '127.0.0.1', port: p.prx }],
        },
      ],
    };
  }

  private resolverConfig(): unknown {
    const p = this.ports;
    return {
      admin: { ip: '127.0.0.1', port: p.resolverAdmin },
      storage: { kind: 'io.prx.inMemory', namespaces: { default: '/svc => /#/io.prx.fs', ifmatch: '/svc => /#/io.prx.fs' } },
      namers: [{ kind: 'io.prx.fs', rootDir: this.disco }],
      interfaces: [{ kind: 'io.prx.httpController', ip: '127.0.0.1', port: p.resolver }],
    };
  }

  private spawn(name: string, cmd: string, args: string[], logPath: string | null, cwd: string): Watched {
    const log = logPath === null ? -1 : openSync(logPath, 'a');
    // The backends (no log file) read stdin to notice the soak is gone, and report on stdout.
    const stdio = logPath === null ? (['pipe', 'pipe', 'inherit'] as const) : (['ignore', log, log] as const);
    const child = spawn(cmd, args, { cwd, stdio: [...stdio] });
    if (log >= 0) closeSync(log);
    const w = new Watched(name, child, logPath, this.startedAt);
    this.children.push(w);
    return w;
  }

  /** Waits until prx routes to `good` and the resolver binds, or throws after 30 s. */
  private async ready(): Promise<void> {
    const p = this.ports;
    const checks: [string, () => Promise<boolean>][] = [
      ['prx admin', async () => (await httpCall({ port: p.prxAdmin, path: '/admin/ping', timeoutMs: 1000 })).status === 200],
      ['prx route', async () => (await httpCall({ port: p.prx, path: '/', headers: { host: 'good' }, timeoutMs: 1000 })).status === 200],
      ['resolver admin', async () => (await httpCall({ port: p.resolverAdmin, path: '/admin/ping', timeoutMs: 1000 })).status === 200],
      ['resolver bind', async () => (await httpCall({ port: p.resolver, path: '/api/1/bind/default?path=/svc/good', timeoutMs: 1000 })).status === 200],
    ];
    const deadline = Date.now() + 30_000;
    for (const [what, check] of checks) {
      for (;;) {
        for (const c of this.children) if (!c.alive) throw new Error(`${c.name} exited during start-up: ${c.logTail().join(' | ')}`);
        if (await check()) break;
        if (Date.now() > deadline) throw new Error(`${what} not ready after 30 s (logs in ${this.dir})`);
        await sleep(200);
      }
    }
  }

  /** Starts a tracked child that is not part of the fleet proper (the load generator). */
  spawnNode(name: string, script: string, args: string[], cwd: string): Watched {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const w = new Watched(name, child, null, this.startedAt);
    this.children.push(w);
    return w;
  }

  /** Last resort on an unexpected exit: SIGKILL by PID, synchronously. */
  killNow(): void {
    for (const c of this.children) if (c.alive) c.child.kill('SIGKILL');
  }

  async stop(keepDir: boolean): Promise<void> {
    await Promise.all(this.children.map((c) => c.kill()));
    if (!keepDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

function firstLine(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    if (!child.stdout) return reject(new Error('no stdout'));
    const rl = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error('backends did not start')), timeoutMs);
    rl.once('line', (l) => {
      clearTimeout(timer);
      rl.close();
      resolve(l);
    });
    child.once('exit', () => reject(new Error('backends exited during start-up')));
  });
}
