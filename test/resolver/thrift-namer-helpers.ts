// The thrift name interface over the in-memory store and a test namer on 127.0.0.1:0, and a
// thriftpy client (Debian's python3-thriftpy) built from prx's namer.thrift alone.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { ThriftNamerInterface, type ThriftNamerInterfaceConfig, thriftNamerInterfaceSchema } from '../../src/resolver/interfaces/thrift-namer.js';
import { ResolverNaming } from '../../src/resolver/naming.js';
import { InMemoryDtabStore } from '../../src/resolver/storage/in-memory.js';
import { quietLogs } from '../admin/helpers.js';
import { ensureServicesInstalled } from '../helpers/services.js';
import { TestNamer } from './helpers.js';

const PEER = fileURLToPath(new URL('../fixtures/thrift/namer_peer.py', import.meta.url));

export interface ThriftNamerFixture {
  readonly iface: ThriftNamerInterface;
  readonly port: number;
  readonly store: InMemoryDtabStore;
  readonly namer: TestNamer;
  readonly registry: MetricsRegistry;
  close(): Promise<void>;
}

export async function startThriftNamer(
  namespaces: Record<string, string> = {},
  config: Partial<ThriftNamerInterfaceConfig> = {},
  options: { answerTimeoutMs?: number } = {},
): Promise<ThriftNamerFixture> {
  const { logs } = quietLogs();
  const registry = new MetricsRegistry();
  const store = new InMemoryDtabStore(namespaces, { log: logs.get('prx.storage'), stats: registry.stats.scope('storage') });
  const namer = new TestNamer();
  const naming = new ResolverNaming(store, { namers: [{ prefix: namer.prefix, namer }], enumerating: [namer] });
  const cfg: ThriftNamerInterfaceConfig = { ...thriftNamerInterfaceSchema.parse({ kind: 'io.prx.thriftNameInterpreter' }), port: 0, ...config };
  const iface = new ThriftNamerInterface(cfg, { store, naming, log: logs.get('prx.interface'), stats: registry.stats.scope('io.prx.thriftNameInterpreter') }, options);
  const { port } = await iface.listen();
  return {
    iface,
    port,
    store,
    namer,
    registry,
    close: async () => {
      await iface.close();
      await store.close();
      registry.close();
    },
  };
}

/** What the peer prints for one command. */
export type PeerResult = Record<string, unknown> & {
  ok?: Record<string, unknown>;
  failure?: { reason: string; retryInSeconds?: number };
  app_exception?: [number, string];
};

/** A thriftpy client process: `send` writes a command; `next` waits for the next result line. */
export interface ThriftpyPeer {
  send(cmd: Record<string, unknown>): void;
  next(timeoutMs?: number): Promise<PeerResult>;
  call(cmd: Record<string, unknown>, timeoutMs?: number): Promise<PeerResult>;
  close(): Promise<void>;
}

export async function thriftpyPeer(port: number): Promise<ThriftpyPeer> {
  await ensureServicesInstalled();
  const child: ChildProcessWithoutNullStreams = spawn('/usr/bin/python3', [PEER, String(port)], { stdio: 'pipe' });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines: string[] = [];
  const waiters: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const w = waiters.shift();
    if (w) w(line);
    else lines.push(line);
  });
  const next = (timeoutMs = 10_000): Promise<PeerResult> =>
    new Promise((resolve, reject) => {
      const take = (line: string): void => {
        clearTimeout(timer);
        resolve(JSON.parse(line) as PeerResult);
      };
      const timer = setTimeout(() => {
        const i = waiters.indexOf(take);
        if (i >= 0) waiters.splice(i, 1);
        reject(new Error(`thriftpy peer did not answer within ${timeoutMs} ms; stderr: ${stderr}`));
      }, timeoutMs);
      const line = lines.shift();
      if (line !== undefined) take(line);
      else waiters.push(take);
    });
  const ready = await next();
  if (ready['ready'] !== true) throw new Error(`thriftpy peer did not start: ${JSON.stringify(ready)} ${stderr}`);
  const send = (cmd: Record<string, unknown>): void => {
    child.stdin.write(`${JSON.stringify(cmd)}\n`);
  };
  return {
    send,
    next,
    call: (cmd, timeoutMs) => {
      send(cmd);
      return next(timeoutMs);
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      }),
  };
}
