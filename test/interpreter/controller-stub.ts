// A stand-in for the resolver's HTTP controller (until src/resolver/interfaces/http-controller.ts
// lands): it serves `/api/1/bind/<ns>` and `/api/1/addr/<ns>` with Linkerd's exact JSON shapes and
// watch framing (one document plus "\n" per chunk, identical values suppressed, an error as a text
// line and then the end of the stream), from values the test sets.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

type Key = string;
const bindKey = (ns: string, path: string): Key => `bind ${ns} ${path}`;
const addrKey = (ns: string, id: string): Key => `addr ${ns} ${id}`;

type Value = { readonly json: unknown } | { readonly error: string };

interface Watcher {
  readonly key: Key;
  readonly res: ServerResponse;
  last: string | undefined;
}

/** A leaf of `/api/1/bind` JSON. */
export function leafJson(id: string, residual = '/', addrs: readonly { ip: string; port: number }[] = []): unknown {
  return { type: 'leaf', bound: { addr: addrSetJson(addrs), id, path: residual } };
}

/** `/api/1/addr` JSON of a bound address set. */
export function addrSetJson(addrs: readonly { ip: string; port: number; meta?: Record<string, unknown> }[]): unknown {
  return { type: 'bound', addrs: addrs.map((a) => ({ ip: a.ip, port: a.port, meta: a.meta ?? {} })), meta: {} };
}

export class ControllerStub {
  readonly #values = new Map<Key, Value>();
  readonly #watchers = new Set<Watcher>();
  readonly #sockets = new Set<Socket>();
  readonly #rejected = new Map<string, { status: number; body: string }>();
  readonly #tls: { key: string; cert: string } | undefined;
  #server: Server | undefined;
  /** Every request's URL, in order. */
  readonly requests: string[] = [];
  port = 0;

  /** With `tls`, the stub speaks HTTPS with that key and certificate. */
  constructor(tls?: { key: string; cert: string }) {
    this.#tls = tls;
  }

  /** Listens on 127.0.0.1 (`port` 0 picks one; pass the old port to come back after `stop`). */
  async start(port = this.port): Promise<void> {
    const handler = (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res);
    const server: Server = this.#tls ? createTlsServer(this.#tls, handler) : createServer(handler);
    const track = (s: Socket): void => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    };
    if (this.#tls) server.on('secureConnection', track);
    else server.on('connection', track);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Stops listening and cuts every connection, as a crashed or restarted controller would. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#watchers.clear();
    for (const s of this.#sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Watch streams the controller is serving now. */
  get openWatches(): number {
    return this.#watchers.size;
  }

  /** Open TCP connections. */
  get openConnections(): number {
    return this.#sockets.size;
  }

  setBind(ns: string, path: string, json: unknown): void {
    this.#set(bindKey(ns, path), { json });
  }

  setAddr(ns: string, id: string, json: unknown): void {
    this.#set(addrKey(ns, id), { json });
  }

  /** The next answer for the bind of `path` is an error line, after which the stream ends. */
  failBind(ns: string, path: string, message: string): void {
    this.#set(bindKey(ns, path), { error: message });
  }

  /** Every request for namespace `ns` is answered `status` with `body` (as an unknown namespace would be). */
  rejectNamespace(ns: string, status: number, body: string): void {
    this.#rejected.set(ns, { status, body });
  }

  #set(key: Key, value: Value): void {
    this.#values.set(key, value);
    for (const w of [...this.#watchers]) if (w.key === key) this.#send(w, value);
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    this.requests.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://stub');
    const m = /^\/api\/1\/(bind|addr)\/([^/]+)$/.exec(url.pathname);
    const path = url.searchParams.get('path');
    if (req.method !== 'GET' || !m || path === null) {
      res.writeHead(404).end();
      return;
    }
    if (!path.startsWith('/')) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`Invalid path: ${path}`);
      return;
    }
    const ns = decodeURIComponent(m[2] as string);
    const rejected = this.#rejected.get(ns);
    if (rejected) {
      res.writeHead(rejected.status, { 'content-type': 'text/plain' }).end(rejected.body);
      return;
    }
    const key = m[1] === 'bind' ? bindKey(ns, path) : addrKey(ns, path);
    const watch = ['true', '1'].includes(url.searchParams.get('watch') ?? '');
    const value = this.#values.get(key);
    if (!watch) {
      if (value === undefined) res.writeHead(404).end();
      else if ('error' in value) res.writeHead(500).end(value.error);
      else res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(value.json)}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    const w: Watcher = { key, res, last: undefined };
    this.#watchers.add(w);
    res.on('close', () => this.#watchers.delete(w));
    if (value !== undefined) this.#send(w, value);
  }

  #send(w: Watcher, value: Value): void {
    if ('error' in value) {
      this.#watchers.delete(w);
      w.res.end(`${value.error}\n`);
      return;
    }
    const text = JSON.stringify(value.json);
    if (text === w.last) return;
    w.last = text;
    w.res.write(`${text}\n`);
  }
}
