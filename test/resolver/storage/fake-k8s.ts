// A protocol-faithful fake of the orchestrator (Kubernetes) API for namespaced custom resources,
// as `kubectl proxy` serves it (plain HTTP, no auth): one global resourceVersion counter, list
// (with the list's resourceVersion), get, create (201 / 409 AlreadyExists), update (409 Conflict on
// a stale metadata.resourceVersion, empty = unconditional, 404 when missing), delete, and watches
// in both spellings (`?watch=true` and the legacy `/watch/` path) streaming chunked JSON events
// (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) from a resourceVersion, with an event log whose
// retention window makes old resourceVersions answer 410 Expired (as an ERROR event or as an HTTP
// 410, both occur in real clusters). Test hooks: compact the log, drop every watch, remove the
// resource definition (404s), split or coalesce event chunks, fail the next requests.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> & { name: string; resourceVersion: string } };

interface Event {
  readonly rv: number;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly ns: string;
  readonly object: Obj;
}

interface Watch {
  readonly ns: string;
  readonly res: ServerResponse;
}

export interface FakeK8sOptions {
  readonly group?: string;
  readonly version?: string;
  readonly plural?: string;
  readonly kind?: string;
}

export class FakeK8s {
  readonly requests: { method: string; path: string; query: URLSearchParams }[] = [];
  readonly #objects = new Map<string, Obj>(); // `${ns}/${name}`
  #log: Event[] = [];
  readonly #watches = new Set<Watch>();
  readonly #group: string;
  readonly #version: string;
  readonly #plural: string;
  readonly #kind: string;
  #server: Server | undefined;
  #port = 0;
  #rv = 100;
  #oldestRetained = 0;
  /** Test hooks. */
  crdInstalled = true;
  expiredAs: 'event' | 'http' = 'event';
  chunking: 'normal' | 'split' | 'coalesce' = 'normal';
  failNext: { count: number; status: number } = { count: 0, status: 500 };

  constructor(opts: FakeK8sOptions = {}) {
    this.#group = opts.group ?? 'prx.io';
    this.#version = opts.version ?? 'v1alpha1';
    this.#plural = opts.plural ?? 'dtabs';
    this.#kind = opts.kind ?? 'DTab';
  }

  get port(): number {
    return this.#port;
  }

  get resourceVersion(): number {
    return this.#rv;
  }

  get openWatches(): number {
    return this.#watches.size;
  }

  async start(port = 0): Promise<this> {
    const server = createServer((req, res) => this.#handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    this.dropWatches();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Forgets every event up to now: watches from an older resourceVersion get 410. */
  compact(): void {
    this.#log = [];
    this.#oldestRetained = this.#rv;
  }

  /** Ends every open watch stream (an API server restart). */
  dropWatches(): void {
    for (const w of this.#watches) w.res.end();
    this.#watches.clear();
  }

  /** Writes an object directly (another client), as create-or-replace. */
  apply(ns: string, name: string, body: Record<string, unknown>): Obj {
    const key = `${ns}/${name}`;
    const type = this.#objects.has(key) ? 'MODIFIED' : 'ADDED';
    const obj = this.#stamp(ns, name, body);
    this.#objects.set(key, obj);
    this.#emit({ rv: this.#rv, type, ns, object: obj });
    return obj;
  }

  get(ns: string, name: string): Obj | undefined {
    return this.#objects.get(`${ns}/${name}`);
  }

  #stamp(ns: string, name: string, body: Record<string, unknown>): Obj {
    const old = this.#objects.get(`${ns}/${name}`);
    const meta = (body['metadata'] ?? {}) as Record<string, unknown>;
    return {
      ...body,
      apiVersion: `${this.#group}/${this.#version}`,
      kind: this.#kind,
      metadata: {
        ...meta,
        name,
        namespace: ns,
        uid: old?.metadata['uid'] ?? `uid-${name}-${this.#rv + 1}`,
        creationTimestamp: old?.metadata['creationTimestamp'] ?? new Date().toISOString(),
        resourceVersion: String(++this.#rv),
      },
    };
  }

  #emit(ev: Event): void {
    this.#log.push(ev);
    for (const w of this.#watches) if (w.ns === ev.ns) this.#write(w.res, [{ type: ev.type, object: ev.object }]);
  }

  #write(res: ServerResponse, events: unknown[]): void {
    const text = events.map((e) => JSON.stringify(e) + '\n').join('');
    if (this.chunking === 'split' && text.length > 4) {
      // Cut inside the JSON: clients must not take a chunk for an event.
      const cut = Math.floor(text.length / 2);
      res.write(text.slice(0, cut));
      setTimeout(() => res.writable && res.write(text.slice(cut)), 5);
    } else {
      res.write(text);
    }
  }

  #status(res: ServerResponse, code: number, reason: string, message: string, name?: string): void {
    const body = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      details: { ...(name === undefined ? {} : { name }), group: this.#group, kind: this.#plural },
      code,
    };
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  #json(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = req.method ?? 'GET';
    this.requests.push({ method, path: url.pathname, query: url.searchParams });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => this.#route(method, url, Buffer.concat(chunks).toString(), res));
  }

  #route(method: string, url: URL, body: string, res: ServerResponse): void {
    if (this.failNext.count > 0) {
      this.failNext.count--;
      return this.#status(res, this.failNext.status, 'InternalError', 'injected failure');
    }
    const base = `/apis/${this.#group}/${this.#version}/`;
    if (!url.pathname.startsWith(base) || !this.crdInstalled) return this.#status(res, 404, 'NotFound', 'the server could not find the requested resource');
    const parts = url.pathname.slice(base.length).split('/').map(decodeURIComponent);
    let legacyWatch = false;
    if (parts[0] === 'watch') {
      legacyWatch = true;
      parts.shift();
    }
    if (parts[0] !== 'namespaces' || parts[2] !== this.#plural || parts.length > 4 || parts[1] === undefined) {
      return this.#status(res, 404, 'NotFound', 'the server could not find the requested resource');
    }
    const ns = parts[1];
    const name = parts[3];
    const watch = legacyWatch || url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    if (method === 'GET' && watch && name === undefined) return this.#watch(ns, url.searchParams, res);
    if (name === undefined) {
      if (method === 'GET') {
        const items = [...this.#objects.entries()].filter(([k]) => k.startsWith(`${ns}/`)).map(([, o]) => o);
        return this.#json(res, 200, { kind: `${this.#kind}List`, apiVersion: `${this.#group}/${this.#version}`, metadata: { resourceVersion: String(this.#rv) }, items });
      }
      if (method === 'POST') {
        const obj = JSON.parse(body) as { metadata?: { name?: string } };
        const n = obj.metadata?.name;
        if (n === undefined) return this.#status(res, 422, 'Invalid', 'metadata.name: Required value');
        if (this.#objects.has(`${ns}/${n}`)) return this.#status(res, 409, 'AlreadyExists', `${this.#plural}.${this.#group} "${n}" already exists`, n);
        return this.#json(res, 201, this.apply(ns, n, obj));
      }
      return this.#status(res, 405, 'MethodNotAllowed', 'method not allowed');
    }
    const key = `${ns}/${name}`;
    const cur = this.#objects.get(key);
    switch (method) {
      case 'GET':
        return cur ? this.#json(res, 200, cur) : this.#status(res, 404, 'NotFound', `${this.#plural}.${this.#group} "${name}" not found`, name);
      case 'PUT': {
        if (!cur) return this.#status(res, 404, 'NotFound', `${this.#plural}.${this.#group} "${name}" not found`, name);
        const obj = JSON.parse(body) as { metadata?: { resourceVersion?: string } };
        const rv = obj.metadata?.resourceVersion;
        if (rv !== undefined && rv !== '' && rv !== cur.metadata.resourceVersion) {
          return this.#status(
            res,
            409,
            'Conflict',
            `Operation cannot be fulfilled on ${this.#plural}.${this.#group} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
            name,
          );
        }
        return this.#json(res, 200, this.apply(ns, name, obj));
      }
      case 'DELETE': {
        if (!cur) return this.#status(res, 404, 'NotFound', `${this.#plural}.${this.#group} "${name}" not found`, name);
        // DeleteOptions.preconditions.resourceVersion: a delete of exactly that version, else 409.
        const want = body === '' ? undefined : (JSON.parse(body) as { preconditions?: { resourceVersion?: string } }).preconditions?.resourceVersion;
        if (want !== undefined && want !== cur.metadata.resourceVersion) {
          return this.#status(res, 409, 'Conflict', `Operation cannot be fulfilled on ${this.#plural}.${this.#group} "${name}": Precondition failed: ResourceVersion in precondition: ${want}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`, name);
        }
        this.#objects.delete(key);
        const gone: Obj = { ...cur, metadata: { ...cur.metadata, resourceVersion: String(++this.#rv) } };
        this.#emit({ rv: this.#rv, type: 'DELETED', ns, object: gone });
        return this.#json(res, 200, cur);
      }
      default:
        return this.#status(res, 405, 'MethodNotAllowed', 'method not allowed');
    }
  }

  #watch(ns: string, q: URLSearchParams, res: ServerResponse): void {
    const rvText = q.get('resourceVersion') ?? '';
    const from = rvText === '' || rvText === '0' ? undefined : Number(rvText);
    if (from !== undefined && from < this.#oldestRetained) {
      const message = `too old resource version: ${from} (${this.#oldestRetained})`;
      if (this.expiredAs === 'http') return this.#status(res, 410, 'Gone', message);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
      res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'Expired', code: 410 } }) + '\n');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const backlog =
      from === undefined
        ? [...this.#objects.entries()].filter(([k]) => k.startsWith(`${ns}/`)).map(([, o]) => ({ type: 'ADDED', object: o }))
        : this.#log.filter((e) => e.ns === ns && e.rv > from).map((e) => ({ type: e.type, object: e.object }));
    if (backlog.length > 0) {
      if (this.chunking === 'coalesce') this.#write(res, backlog);
      else for (const e of backlog) this.#write(res, [e]);
    }
    if (q.get('allowWatchBookmarks') === 'true') {
      this.#write(res, [{ type: 'BOOKMARK', object: { kind: this.#kind, apiVersion: `${this.#group}/${this.#version}`, metadata: { resourceVersion: String(this.#rv) } } }]);
    }
    const w: Watch = { ns, res };
    this.#watches.add(w);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      this.#watches.delete(w);
    });
  }
}
