// A protocol-faithful fake of the orchestrator (Kubernetes) API server, for every orchestrator kind
// prx has (the io.prx.orch namer, ingress identifier, configMap interpreter, daemonset transformer,
// DTab storage). No API server installs here, so this stands in for one, and is itself checked
// against the official @kubernetes/client-node informers (test/protocol/orch/fake-api.test.ts).
//
// What it serves, as a real API server does: the core group under /api/v1 and named groups under
// /apis/<group>/<version>; namespaced and all-namespace lists with the list's resourceVersion;
// `fieldSelector` (metadata.name, metadata.namespace) and `labelSelector` (=, ==, !=, existence);
// get, create (201 / 409 AlreadyExists), update (409 Conflict on a stale resourceVersion), delete
// (with preconditions); watches in both spellings (`?watch=true` and the legacy `/watch/` path)
// streaming chunked JSON events (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) from a
// resourceVersion, an object leaving a watch's label selector arriving as DELETED; one global
// resourceVersion counter whose event log, once compacted, answers old versions with 410 Expired
// (as an ERROR event or an HTTP 410, both occur); optional TLS and bearer-token auth (401).
// Test hooks: put/remove objects directly, compact, drop every watch, send bookmarks, uninstall a
// resource (404), split or coalesce event chunks, fail the next requests.
import { type IncomingMessage, type Server, type ServerResponse, createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIGMAPS, ENDPOINTS, INGRESSES, type OrchResource, PODS, SERVICES } from '../../src/protocol/orch/index.js';

export type FakeObject = Record<string, unknown> & {
  metadata: Record<string, unknown> & { name: string; namespace: string; resourceVersion: string; labels?: Record<string, string> };
};

/** prx's DTab custom resource (the io.prx.orch storage). */
export const DTABS: OrchResource = { group: 'prx.io', version: 'v1alpha1', plural: 'dtabs', kind: 'DTab' };

interface LogEvent {
  readonly rv: number;
  readonly res: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: FakeObject;
  readonly old: FakeObject | undefined;
}

interface Selector {
  readonly ns: string | undefined;
  readonly name: string | undefined;
  readonly labels: ((labels: Record<string, string>) => boolean) | undefined;
}

interface Watch {
  readonly res: string;
  readonly sel: Selector;
  readonly out: ServerResponse;
}

export interface FakeOrchApiOptions {
  /** Require `Authorization: Bearer <token>` (401 otherwise). */
  readonly token?: string;
  /** Serve HTTPS with this certificate (PEM files). */
  readonly tls?: { readonly certFile: string; readonly keyFile: string; readonly caFile: string };
  /** Resources served; defaults to Endpoints, Services, Pods, ConfigMaps, Ingresses and DTabs. */
  readonly resources?: readonly OrchResource[];
}

const resKey = (r: OrchResource): string => `${r.group}/${r.version}/${r.plural}`;

export class FakeOrchApi {
  readonly requests: { method: string; path: string; query: URLSearchParams; authorization: string | undefined }[] = [];
  readonly #resources = new Map<string, OrchResource>();
  readonly #objects = new Map<string, Map<string, FakeObject>>(); // resKey → `${ns}/${name}` → object
  readonly #uninstalled = new Set<string>();
  readonly #watches = new Set<Watch>();
  readonly #opts: FakeOrchApiOptions;
  readonly #sockets = new Set<Socket>();
  #log: LogEvent[] = [];
  #server: Server | undefined;
  #port = 0;
  #rv = 100;
  #oldestRetained = 0;
  /** Test hooks. */
  expiredAs: 'event' | 'http' = 'event';
  chunking: 'normal' | 'split' | 'coalesce' = 'normal';
  failNext: { count: number; status: number } = { count: 0, status: 500 };

  constructor(opts: FakeOrchApiOptions = {}) {
    this.#opts = opts;
    for (const r of opts.resources ?? [ENDPOINTS, SERVICES, PODS, CONFIGMAPS, INGRESSES, DTABS]) {
      this.#resources.set(resKey(r), r);
      this.#objects.set(resKey(r), new Map());
    }
  }

  get port(): number {
    return this.#port;
  }

  get origin(): string {
    return `${this.#opts.tls === undefined ? 'http' : 'https'}://127.0.0.1:${this.#port}`;
  }

  get caPem(): string | undefined {
    return this.#opts.tls === undefined ? undefined : readFileSync(this.#opts.tls.caFile, 'utf8');
  }

  get resourceVersion(): number {
    return this.#rv;
  }

  openWatches(res?: OrchResource): number {
    if (res === undefined) return this.#watches.size;
    const k = resKey(res);
    let n = 0;
    for (const w of this.#watches) if (w.res === k) n++;
    return n;
  }

  async start(port = 0): Promise<this> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.#handle(req, res);
    const tls = this.#opts.tls;
    const server = tls === undefined ? createHttpServer(handler) : createHttpsServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    // Every socket, TLS handshakes included (closeAllConnections misses those), so close() ends them all.
    server.on('connection', (sock: Socket) => {
      this.#sockets.add(sock);
      sock.once('close', () => this.#sockets.delete(sock));
    });
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    this.dropWatches();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    for (const sock of this.#sockets) sock.destroy();
    await closed;
  }

  /** Forgets every event up to now: watches from an older resourceVersion get 410. */
  compact(): void {
    this.#log = [];
    this.#oldestRetained = this.#rv;
  }

  /** Ends every open watch stream (an API server restart, a load balancer's idle cut). */
  dropWatches(): void {
    for (const w of this.#watches) w.out.end();
    this.#watches.clear();
  }

  /** Sends a BOOKMARK at the current resourceVersion on every open watch that asked for them. */
  bookmarks(): void {
    for (const w of this.#watches) {
      const r = this.#resources.get(w.res);
      if (r) this.#write(w.out, [{ type: 'BOOKMARK', object: { kind: r.kind, apiVersion: apiVersion(r), metadata: { resourceVersion: String(this.#rv) } } }]);
    }
  }

  /** Makes a resource unknown (404), as before its definition is installed; `install` undoes it. */
  uninstall(res: OrchResource): void {
    this.#uninstalled.add(resKey(res));
  }

  install(res: OrchResource): void {
    this.#uninstalled.delete(resKey(res));
  }

  /** Creates or replaces an object (another client's write); its namespace defaults to `default`. */
  put(res: OrchResource, body: { metadata: { name: string; namespace?: string } & Record<string, unknown> } & Record<string, unknown>): FakeObject {
    const ns = body.metadata.namespace ?? 'default';
    return this.#apply(res, ns, body.metadata.name, body);
  }

  remove(res: OrchResource, ns: string, name: string): boolean {
    const k = resKey(res);
    const cur = this.#objects.get(k)?.get(`${ns}/${name}`);
    if (cur === undefined) return false;
    this.#objects.get(k)?.delete(`${ns}/${name}`);
    const gone: FakeObject = { ...cur, metadata: { ...cur.metadata, resourceVersion: String(++this.#rv) } };
    this.#emit({ rv: this.#rv, res: k, type: 'DELETED', object: gone, old: cur });
    return true;
  }

  get(res: OrchResource, ns: string, name: string): FakeObject | undefined {
    return this.#objects.get(resKey(res))?.get(`${ns}/${name}`);
  }

  list(res: OrchResource, ns?: string): FakeObject[] {
    return [...(this.#objects.get(resKey(res))?.values() ?? [])].filter((o) => ns === undefined || o.metadata.namespace === ns);
  }

  #apply(res: OrchResource, ns: string, name: string, body: Record<string, unknown>): FakeObject {
    const k = resKey(res);
    const objects = this.#objects.get(k);
    if (objects === undefined) throw new Error(`the fake does not serve ${k}`);
    const old = objects.get(`${ns}/${name}`);
    const meta = (body['metadata'] ?? {}) as Record<string, unknown>;
    const obj: FakeObject = {
      ...body,
      apiVersion: apiVersion(res),
      kind: res.kind,
      metadata: {
        ...meta,
        name,
        namespace: ns,
        uid: old?.metadata['uid'] ?? `uid-${name}-${this.#rv + 1}`,
        creationTimestamp: old?.metadata['creationTimestamp'] ?? new Date().toISOString(),
        resourceVersion: String(++this.#rv),
      },
    };
    objects.set(`${ns}/${name}`, obj);
    this.#emit({ rv: this.#rv, res: k, type: old === undefined ? 'ADDED' : 'MODIFIED', object: obj, old });
    return obj;
  }

  /** The event a watch with `sel` sees for `ev`, if any: objects entering or leaving its selector are ADDED or DELETED to it. */
  #seen(ev: LogEvent, sel: Selector): { type: string; object: FakeObject } | undefined {
    const now = matches(ev.object, sel);
    const before = ev.old !== undefined && matches(ev.old, sel);
    if (ev.type === 'DELETED') return before || now ? { type: 'DELETED', object: ev.object } : undefined;
    if (now) return { type: before ? 'MODIFIED' : 'ADDED', object: ev.object };
    if (before) return { type: 'DELETED', object: ev.object };
    return undefined;
  }

  #emit(ev: LogEvent): void {
    this.#log.push(ev);
    for (const w of this.#watches) {
      if (w.res !== ev.res) continue;
      const seen = this.#seen(ev, w.sel);
      if (seen) this.#write(w.out, [seen]);
    }
  }

  #write(out: ServerResponse, events: unknown[]): void {
    const text = events.map((e) => JSON.stringify(e) + '\n').join('');
    if (this.chunking === 'split' && text.length > 4) {
      // Cut inside the JSON: clients must not take a chunk for an event.
      const cut = Math.floor(text.length / 2);
      out.write(text.slice(0, cut));
      setTimeout(() => out.writable && out.write(text.slice(cut)), 5);
    } else {
      out.write(text);
    }
  }

  #status(out: ServerResponse, code: number, reason: string, message: string, details: Record<string, unknown> = {}): void {
    this.#json(out, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code });
  }

  #json(out: ServerResponse, code: number, body: unknown): void {
    out.writeHead(code, { 'Content-Type': 'application/json' });
    out.end(JSON.stringify(body));
  }

  #handle(req: IncomingMessage, out: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = req.method ?? 'GET';
    const authorization = req.headers.authorization;
    this.requests.push({ method, path: url.pathname, query: url.searchParams, authorization });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        this.#route(method, url, Buffer.concat(chunks).toString(), authorization, out);
      } catch (e) {
        this.#status(out, 400, 'BadRequest', e instanceof Error ? e.message : String(e));
      }
    });
  }

  #route(method: string, url: URL, body: string, authorization: string | undefined, out: ServerResponse): void {
    if (this.#opts.token !== undefined && authorization !== `Bearer ${this.#opts.token}`) {
      return this.#status(out, 401, 'Unauthorized', 'Unauthorized');
    }
    if (this.failNext.count > 0) {
      this.failNext.count--;
      return this.#status(out, this.failNext.status, 'InternalError', 'injected failure');
    }
    const notFound = (): void => this.#status(out, 404, 'NotFound', 'the server could not find the requested resource');
    const segs = url.pathname.split('/').filter((s) => s !== '').map(decodeURIComponent);
    // /api/v1/... or /apis/<group>/<version>/...
    let group: string;
    let version: string;
    let rest: string[];
    if (segs[0] === 'api' && segs[1] !== undefined) [group, version, rest] = ['', segs[1], segs.slice(2)];
    else if (segs[0] === 'apis' && segs[1] !== undefined && segs[2] !== undefined) [group, version, rest] = [segs[1], segs[2], segs.slice(3)];
    else return notFound();
    let legacyWatch = false;
    if (rest[0] === 'watch') {
      legacyWatch = true;
      rest = rest.slice(1);
    }
    let ns: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      ns = rest[1];
      rest = rest.slice(2);
    }
    const [plural, name, ...extra] = rest;
    const k = `${group}/${version}/${plural ?? ''}`;
    const res = this.#resources.get(k);
    if (res === undefined || extra.length > 0 || this.#uninstalled.has(k)) return notFound();
    const q = url.searchParams;
    const watch = legacyWatch || q.get('watch') === 'true' || q.get('watch') === '1';
    const fields = parseFieldSelector(q.get('fieldSelector'));
    const scoped: Selector = { ns: ns ?? fields.ns, name: fields.name, labels: parseLabelSelector(q.get('labelSelector')) };
    if (name === undefined) {
      if (method === 'GET' && watch) return this.#watch(k, res, scoped, q, out);
      if (method === 'GET') {
        const items = [...(this.#objects.get(k)?.values() ?? [])].filter((o) => matches(o, scoped));
        return this.#json(out, 200, { kind: `${res.kind}List`, apiVersion: apiVersion(res), metadata: { resourceVersion: String(this.#rv) }, items });
      }
      if (method === 'POST' && ns !== undefined) {
        const obj = JSON.parse(body) as { metadata?: { name?: string } };
        const n = obj.metadata?.name;
        if (n === undefined) return this.#status(out, 422, 'Invalid', 'metadata.name: Required value');
        if (this.get(res, ns, n)) return this.#status(out, 409, 'AlreadyExists', `${res.plural}${group === '' ? '' : `.${group}`} "${n}" already exists`, { name: n, kind: res.plural });
        return this.#json(out, 201, this.#apply(res, ns, n, obj));
      }
      return this.#status(out, 405, 'MethodNotAllowed', 'method not allowed');
    }
    if (ns === undefined) return notFound();
    const what = `${res.plural}${group === '' ? '' : `.${group}`} "${name}"`;
    const cur = this.get(res, ns, name);
    switch (method) {
      case 'GET':
        return cur ? this.#json(out, 200, cur) : this.#status(out, 404, 'NotFound', `${what} not found`, { name, kind: res.plural });
      case 'PUT': {
        if (!cur) return this.#status(out, 404, 'NotFound', `${what} not found`, { name, kind: res.plural });
        const obj = JSON.parse(body) as { metadata?: { resourceVersion?: string } };
        const rv = obj.metadata?.resourceVersion;
        if (rv !== undefined && rv !== '' && rv !== cur.metadata.resourceVersion) {
          return this.#status(out, 409, 'Conflict', `Operation cannot be fulfilled on ${what}: the object has been modified; please apply your changes to the latest version and try again`, { name, kind: res.plural });
        }
        return this.#json(out, 200, this.#apply(res, ns, name, obj));
      }
      case 'DELETE': {
        if (!cur) return this.#status(out, 404, 'NotFound', `${what} not found`, { name, kind: res.plural });
        // DeleteOptions.preconditions.resourceVersion: a delete of exactly that version, else 409.
        const want = body === '' ? undefined : (JSON.parse(body) as { preconditions?: { resourceVersion?: string } }).preconditions?.resourceVersion;
        if (want !== undefined && want !== cur.metadata.resourceVersion) {
          return this.#status(out, 409, 'Conflict', `Operation cannot be fulfilled on ${what}: Precondition failed: ResourceVersion in precondition: ${want}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`, { name, kind: res.plural });
        }
        this.remove(res, ns, name);
        return this.#json(out, 200, cur);
      }
      default:
        return this.#status(out, 405, 'MethodNotAllowed', 'method not allowed');
    }
  }

  #watch(k: string, res: OrchResource, sel: Selector, q: URLSearchParams, out: ServerResponse): void {
    const rvText = q.get('resourceVersion') ?? '';
    const from = rvText === '' || rvText === '0' ? undefined : Number(rvText);
    if (from !== undefined && from < this.#oldestRetained) {
      const message = `too old resource version: ${from} (${this.#oldestRetained})`;
      if (this.expiredAs === 'http') return this.#status(out, 410, 'Gone', message);
      out.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
      out.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: 'Expired', code: 410 } }) + '\n');
      return;
    }
    out.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    out.flushHeaders();
    const backlog =
      from === undefined
        ? [...(this.#objects.get(k)?.values() ?? [])].filter((o) => matches(o, sel)).map((o) => ({ type: 'ADDED', object: o }))
        : this.#log.filter((e) => e.res === k && e.rv > from).flatMap((e) => this.#seen(e, sel) ?? []);
    if (backlog.length > 0) {
      if (this.chunking === 'coalesce') this.#write(out, backlog);
      else for (const e of backlog) this.#write(out, [e]);
    }
    if (q.get('allowWatchBookmarks') === 'true') {
      this.#write(out, [{ type: 'BOOKMARK', object: { kind: res.kind, apiVersion: apiVersion(res), metadata: { resourceVersion: String(this.#rv) } } }]);
    }
    const w: Watch = { res: k, sel, out };
    this.#watches.add(w);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    const timer = timeout > 0 ? setTimeout(() => out.end(), timeout * 1000) : undefined;
    out.on('close', () => {
      if (timer) clearTimeout(timer);
      this.#watches.delete(w);
    });
  }
}

function apiVersion(r: OrchResource): string {
  return r.group === '' ? r.version : `${r.group}/${r.version}`;
}

function matches(o: FakeObject, sel: Selector): boolean {
  if (sel.ns !== undefined && o.metadata.namespace !== sel.ns) return false;
  if (sel.name !== undefined && o.metadata.name !== sel.name) return false;
  return sel.labels === undefined || sel.labels(o.metadata.labels ?? {});
}

function parseFieldSelector(text: string | null): { ns?: string; name?: string } {
  const out: { ns?: string; name?: string } = {};
  for (const term of (text ?? '').split(',').filter((t) => t !== '')) {
    const m = /^([a-zA-Z.]+)==?(.*)$/.exec(term);
    if (m === null) throw new Error(`invalid field selector term ${JSON.stringify(term)}`);
    if (m[1] === 'metadata.name') out.name = m[2] ?? '';
    else if (m[1] === 'metadata.namespace') out.ns = m[2] ?? '';
    else throw new Error(`"${m[1]}" is not a known field selector: only "metadata.name", "metadata.namespace"`);
  }
  return out;
}

function parseLabelSelector(text: string | null): ((labels: Record<string, string>) => boolean) | undefined {
  if (text === null || text === '') return undefined;
  const tests = text.split(',').map((term): ((l: Record<string, string>) => boolean) => {
    let m = /^([^!=]+)!=(.*)$/.exec(term);
    if (m) {
      const [, k = '', v] = m;
      return (l) => l[k] !== v;
    }
    m = /^([^!=]+)==?(.*)$/.exec(term);
    if (m) {
      const [, k = '', v] = m;
      return (l) => l[k] === v;
    }
    if (term.startsWith('!')) return (l) => !(term.slice(1) in l);
    return (l) => term in l;
  });
  return (labels) => tests.every((t) => t(labels));
}

/**
 * A pod's view of this API server: a service-account directory holding a token and the server's CA,
 * and the environment variables a pod gets, for in-cluster mode.
 */
export function inClusterEnvironment(api: FakeOrchApi, token: string): { serviceAccountDir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'prx-sa-'));
  writeFileSync(join(dir, 'token'), `${token}\n`);
  writeFileSync(join(dir, 'ca.crt'), api.caPem ?? '');
  writeFileSync(join(dir, 'namespace'), 'default');
  return { serviceAccountDir: dir, env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(api.port) } };
}
