// A protocol-faithful fake of Consul's HTTP API (no Consul server can be installed here): the KV
// store and, through FakeConsulCatalog, the catalog, health and agent endpoints the namer reads.
// A global raft-like index, per-key CreateIndex/ModifyIndex, blocking queries (`index`, `wait`)
// answered with X-Consul-Index, check-and-set writes, 404s that still carry an index, tombstones
// for deletes, `dc`, `stale`/`consistent`, and ACL tokens. Test hooks simulate outages, an index
// going backwards and a missing index header.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { FakeConsulCatalog } from './fake-consul-catalog.js';

interface Kv {
  value: Buffer;
  createIndex: number;
  modifyIndex: number;
  flags: number;
}

export interface ConsulRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly token: string | undefined;
}

export interface FakeConsulOptions {
  /** When set, every request must carry it (X-Consul-Token or ?token=), else 403. */
  readonly token?: string;
  readonly datacenter?: string;
  /** Serve HTTPS with this certificate; with `ca`, clients must present a certificate it signed. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer; readonly ca?: Buffer };
}

const MAX_WAIT_MS = 600_000;

export class FakeConsul {
  readonly requests: ConsulRequest[] = [];
  readonly #kv = new Map<string, Kv>();
  readonly #tombstones = new Map<string, number>();
  readonly #waiters = new Set<() => void>();
  readonly #opts: FakeConsulOptions;
  /** Services, instances and checks (`/v1/catalog/*`, `/v1/health/*`, `/v1/agent/self`). */
  readonly catalog: FakeConsulCatalog;
  #server: Server | undefined;
  #port = 0;
  /** The last write's index; Consul's start at 1 and never go back to 0. */
  #index = 1;
  /** Test hooks. */
  omitIndexHeader = false;
  failNext: { count: number; status: number } = { count: 0, status: 500 };

  constructor(opts: FakeConsulOptions = {}) {
    this.#opts = opts;
    this.catalog = new FakeConsulCatalog(opts.datacenter ?? 'dc1', () => ++this.#index, () => this.#wake());
  }

  get port(): number {
    return this.#port;
  }

  get index(): number {
    return this.#index;
  }

  /** Blocking queries held open right now (a released watch leaves none behind). */
  get blockedQueries(): number {
    return this.#waiters.size;
  }

  async start(port = 0): Promise<this> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.#handle(req, res);
    const tls = this.#opts.tls;
    const server: Server =
      tls === undefined
        ? createServer(handler)
        : createTlsServer({ cert: tls.cert, key: tls.key, ...(tls.ca === undefined ? {} : { ca: tls.ca, requestCert: true, rejectUnauthorized: true }) }, handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
    return this;
  }

  /** Stops listening and drops every open connection (blocking queries included); the data is kept. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    for (const w of [...this.#waiters]) w();
  }

  /** Starts again on the same port (after `stop`). */
  restart(): Promise<this> {
    return this.start(this.#port);
  }

  /** Forgets everything and restarts the index low, as a Consul restored from nothing would. */
  wipe(): void {
    this.#kv.clear();
    this.#tombstones.clear();
    this.catalog.wipe();
    this.#index = 1;
    this.#wake();
  }

  /** Sets a key directly (a write by another tool), bumping the index. */
  set(key: string, value: string | Buffer): void {
    this.#put(key, Buffer.from(value));
  }

  get(key: string): string | undefined {
    return this.#kv.get(key)?.value.toString();
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  #put(key: string, value: Buffer, flags = 0): void {
    const index = ++this.#index;
    const cur = this.#kv.get(key);
    this.#kv.set(key, { value, createIndex: cur?.createIndex ?? index, modifyIndex: index, flags });
    this.#tombstones.delete(key);
    this.#wake();
  }

  #delete(key: string): void {
    const index = ++this.#index;
    this.#kv.delete(key);
    this.#tombstones.set(key, index);
    this.#wake();
  }

  /** The entries a read returns and its index (Consul's rules for one key or a prefix). */
  #read(key: string, prefix: boolean): { entries: [string, Kv][]; index: number } {
    if (!prefix) {
      const kv = this.#kv.get(key);
      return kv ? { entries: [[key, kv]], index: kv.modifyIndex } : { entries: [], index: this.#index };
    }
    const entries = [...this.#kv].filter(([k]) => k.startsWith(key)).sort(([a], [b]) => (a < b ? -1 : 1));
    let index = 0;
    for (const [, kv] of entries) index = Math.max(index, kv.modifyIndex);
    for (const [k, i] of this.#tombstones) if (k.startsWith(key)) index = Math.max(index, i);
    return { entries, index: index === 0 ? this.#index : index };
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const token = (req.headers['x-consul-token'] as string | undefined) ?? url.searchParams.get('token') ?? undefined;
    this.requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, token });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => this.#respond(req.method ?? 'GET', url, token, Buffer.concat(chunks), res));
  }

  #send(res: ServerResponse, status: number, body: string, index?: number, type = 'application/json'): void {
    const headers: Record<string, string> = { 'Content-Type': type, 'X-Consul-KnownLeader': 'true', 'X-Consul-LastContact': '0' };
    if (index !== undefined && !this.omitIndexHeader) headers['X-Consul-Index'] = String(index);
    res.writeHead(status, headers);
    res.end(body);
  }

  #respond(method: string, url: URL, token: string | undefined, body: Buffer, res: ServerResponse): void {
    if (this.failNext.count > 0) {
      this.failNext.count--;
      return this.#send(res, this.failNext.status, 'rpc error: No cluster leader', undefined, 'text/plain');
    }
    if (this.#opts.token !== undefined && token !== this.#opts.token) return this.#send(res, 403, 'Permission denied', undefined, 'text/plain');
    const dc = url.searchParams.get('dc');
    if (dc !== null && dc !== (this.#opts.datacenter ?? 'dc1')) return this.#send(res, 500, 'No path to datacenter', undefined, 'text/plain');
    if (method === 'GET' && this.catalog.serves(url.pathname)) {
      const current = (): number => this.catalog.indexOf(url.pathname, this.#index);
      return this.#block(url.searchParams, res, current, () => {
        const answer = this.catalog.answer(url.pathname, url.searchParams);
        this.#send(res, answer.status, answer.body, answer.status === 200 ? current() : undefined, answer.status === 200 ? 'application/json' : 'text/plain');
      });
    }
    if (!url.pathname.startsWith('/v1/kv/')) return this.#send(res, 404, '', undefined, 'text/plain');
    const key = decodeURIComponent(url.pathname.slice('/v1/kv/'.length));
    const q = url.searchParams;
    switch (method) {
      case 'GET':
        return this.#get(key, q, res);
      case 'PUT': {
        const cas = q.get('cas');
        if (cas !== null) {
          const cur = this.#kv.get(key);
          const ok = cas === '0' ? cur === undefined : cur !== undefined && String(cur.modifyIndex) === cas;
          if (!ok) return this.#send(res, 200, 'false');
        }
        this.#put(key, body, Number(q.get('flags') ?? 0));
        return this.#send(res, 200, 'true');
      }
      case 'DELETE': {
        const cas = q.get('cas');
        if (q.has('recurse')) {
          for (const k of [...this.#kv.keys()]) if (k.startsWith(key)) this.#delete(k);
          return this.#send(res, 200, 'true');
        }
        const cur = this.#kv.get(key);
        if (cas !== null && (cur === undefined || String(cur.modifyIndex) !== cas)) return this.#send(res, 200, 'false');
        if (cur !== undefined) this.#delete(key);
        return this.#send(res, 200, 'true');
      }
      default:
        return this.#send(res, 405, 'method not allowed', undefined, 'text/plain');
    }
  }

  #get(key: string, q: URLSearchParams, res: ServerResponse): void {
    const prefix = q.has('recurse') || q.has('keys');
    const answer = (): void => {
      const { entries, index } = this.#read(key, prefix);
      if (entries.length === 0) return this.#send(res, 404, '', index, 'text/plain');
      if (q.has('raw') && !prefix) return this.#send(res, 200, entries[0]![1].value.toString(), index, 'text/plain');
      if (q.has('keys')) {
        const sep = q.get('separator');
        const keys = new Set<string>();
        for (const [k] of entries) {
          const rest = k.slice(key.length);
          const cut = sep ? rest.indexOf(sep) : -1;
          keys.add(cut >= 0 ? key + rest.slice(0, cut + (sep as string).length) : k);
        }
        return this.#send(res, 200, JSON.stringify([...keys]), index);
      }
      const out = entries.map(([k, kv]) => ({
        LockIndex: 0,
        Key: k,
        Flags: kv.flags,
        Value: kv.value.length === 0 ? null : kv.value.toString('base64'),
        CreateIndex: kv.createIndex,
        ModifyIndex: kv.modifyIndex,
      }));
      this.#send(res, 200, JSON.stringify(out), index);
    };
    this.#block(q, res, () => this.#read(key, prefix).index, answer);
  }

  /** A blocking query: answer at once if the data moved past `index`, else when it does or the wait ends. */
  #block(q: URLSearchParams, res: ServerResponse, current: () => number, answer: () => void): void {
    const minIndex = Number(q.get('index') ?? 0);
    const waitMs = Math.min(parseWait(q.get('wait')) ?? 300_000, MAX_WAIT_MS);
    if (minIndex <= 0 || current() > minIndex) return answer();
    const done = (): void => {
      clearTimeout(timer);
      this.#waiters.delete(check);
      res.off('close', done);
    };
    const check = (): void => {
      if (res.destroyed || this.#server === undefined) return done();
      if (current() !== minIndex) {
        done();
        answer();
      }
    };
    const timer = setTimeout(() => {
      done();
      answer();
    }, waitMs + Math.floor(Math.random() * (waitMs / 16)));
    this.#waiters.add(check);
    res.on('close', done);
  }
}

function parseWait(text: string | null): number | undefined {
  if (text === null) return undefined;
  const m = /^(\d+)(ms|s|m)?$/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
}
