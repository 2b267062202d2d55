import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { interfaceShape, type SocketOptionsConfig } from '../../config/resolver-config.js';
import type { ServerTlsConfig } from '../../config/tls.js';
import { PrxError, errorMessage } from '../../core/errors.js';
import { type Activity, type Dtab, NAMING_BUDGET_CODES, type Var } from '../../naming/index.js';
import type { Counter } from '../../service/stats/index.js';
import { InvalidIfMatchError, RequestTimedOutError } from '../errors.js';
import { DtabNamespaceAbsentError } from '../storage/errors.js';
import {
  renderAddr,
  renderBoundNames,
  renderBoundTree,
  renderDelegation,
  renderDtab,
  renderNamespaces,
} from './controller-render.js';
import {
  BadRequest, BodyTooLarge, decodeNamespace, isWatch, readDtabBody, readDtabParam, readIfMatch, readPathParam,
} from './controller-request.js';
import { JSON_MEDIA_TYPE, negotiateDtabType } from './dtab-codec.js';
import { HttpListener } from './http-listener.js';
import { type IfMatch, versionTag } from './if-match.js';
import { type InterfaceContext, type ResolverInterface, defineInterface } from './interface-kind.js';
import { WatchHeartbeats, readHeartbeatParam } from './watch-heartbeat.js';
import { type Rendered, WatchStream, type WatchStreamHost, type WatchedView, firstRendered } from './watch-stream.js';
import { lazySchema } from '../../config/index.js';

/**
 * `io.prx.httpController`: the resolver's HTTP API under `/api/1` (default 127.0.0.1:4180) —
 * dtab reads and writes, and bind/addr/resolve/delegate views of names. Used by `prxctl` and by
 * the proxy's `io.prx.resolver.http` interpreter. Every GET view accepts `watch=true` (or `1`)
 * and then streams one JSON document per line per change, with a bare-newline heartbeat every
 * `heartbeatMs` (see watch-heartbeat.ts).
 */
export const httpControllerSchema = lazySchema(() => z.strictObject({ ...interfaceShape('io.prx.httpController', 4180) }));
export type HttpControllerConfig = z.output<typeof httpControllerSchema>;

/** How long a request without `watch` waits for storage or namers before a 503. */
export const DEFAULT_ANSWER_TIMEOUT_MS = 10_000;

export { versionTag } from './if-match.js';
export { MAX_DTAB_BODY_BYTES } from './controller-request.js';

const API_PREFIX = '/api/1/';
const TEXT_TYPE = 'text/plain; charset=utf-8';

/** Options beyond the config object (tests shorten the answer timeout). */
export interface HttpControllerOptions {
  readonly answerTimeoutMs?: number;
}

/** Where an HTTP controller listens: its config object (port 0 picks a free port). */
export interface HttpControllerListen {
  readonly ip: string;
  readonly port: number;
  readonly tls?: ServerTlsConfig | undefined;
  readonly socketOptions?: SocketOptionsConfig | undefined;
}

/** A view watched by one or more streams: what it shows, under its share key. */
interface SharedView extends WatchedView {
  readonly key: string;
  users: number;
}

/** A response the handlers return; watch responses are written by a {@link WatchStream} instead. */
interface Reply {
  readonly status: number;
  readonly body?: string;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

const text = (status: number, body: string): Reply => ({ status, body: `${body}\n`, contentType: TEXT_TYPE });
const NO_CONTENT: Reply = { status: 204 };

/** The controller: routing, dtab reads and writes, name views, watches. */
export class HttpController implements ResolverInterface {
  readonly kind = 'io.prx.httpController';
  readonly #ctx: InterfaceContext;
  readonly #listener: HttpListener;
  readonly #answerTimeoutMs: number;
  readonly #streams = new Set<WatchStream<SharedView>>();
  readonly #streamHost: WatchStreamHost<SharedView>;
  /**
   * Watch sources by what they show: watchers of the same view share one observation of storage
   * and namers, and each change is rendered (and encoded) once however many watch it (fan-out to
   * many proxies).
   */
  readonly #sharedViews = new Map<string, SharedView>();
  readonly #requests: Counter;

  constructor(cfg: HttpControllerListen, ctx: InterfaceContext, options: HttpControllerOptions = {}) {
    this.#ctx = ctx;
    this.#answerTimeoutMs = options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS;
    this.#streamHost = {
      writeTimeoutMs: cfg.socketOptions?.writeTimeoutMs,
      heartbeats: new WatchHeartbeats(),
      streamEnded: (stream) => this.#streamEnded(stream),
    };
    this.#listener = new HttpListener(
      {
        kind: this.kind,
        ip: cfg.ip,
        port: cfg.port,
        log: ctx.log,
        ...(cfg.tls ? { tls: cfg.tls } : {}),
        ...(cfg.socketOptions ? { socketOptions: cfg.socketOptions } : {}),
      },
      (req, res) => void this.#serve(req, res),
    );
    this.#requests = ctx.stats.counter('requests');
    ctx.stats.gauge(['watches'], () => this.#streams.size);
  }

  listen(): Promise<{ ip: string; port: number }> {
    return this.#listener.listen();
  }

  get address(): { ip: string; port: number } {
    return this.#listener.address;
  }

  get url(): string {
    return this.#listener.url;
  }

  /** Open watch streams (tests check that disconnects release them). */
  get watchCount(): number {
    return this.#streams.size;
  }

  async close(graceMs = 0): Promise<void> {
    const closing = this.#listener.close(graceMs);
    // Watches never finish on their own: end them so their connections can close.
    for (const stream of [...this.#streams]) stream.end();
    await closing;
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.#requests.incr();
    const abort = new AbortController();
    const onClose = (): void => abort.abort(new Error('client went away'));
    res.on('close', onClose);
    let reply: Reply | undefined;
    try {
      reply = await this.#route(req, res, abort.signal);
    } catch (e) {
      // A client that went away needs no answer (and its abort is not a failure worth logging).
      if (abort.signal.aborted) return;
      reply = this.#errorReply(e);
    }
    if (reply !== undefined) this.#write(req, res, reply);
    // A watch stream took over and watches the connection itself: the signal is not held for its life.
    else res.off('close', onClose);
  }

  #write(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
    this.#ctx.stats.counter('status', String(reply.status)).incr();
    if (res.destroyed || res.headersSent) return;
    req.resume();
    const headers: Record<string, string | number> = { ...reply.headers };
    if (reply.contentType !== undefined) headers['content-type'] = reply.contentType;
    const body = reply.body === undefined ? undefined : Buffer.from(reply.body, 'utf8');
    if (body !== undefined) headers['content-length'] = body.byteLength;
    res.writeHead(reply.status, headers);
    res.end(body);
  }

  #errorReply(e: unknown): Reply {
    if (e instanceof BadRequest) return text(400, e.message);
    if (e instanceof BodyTooLarge) return text(413, e.message);
    if (e instanceof InvalidIfMatchError) return text(400, e.message);
    if (e instanceof RequestTimedOutError) return text(503, e.message);
    if (PrxError.hasCode(e, 'PRX_ERR_DTAB_INVALID_NAMESPACE')) return text(400, errorMessage(e));
    if (PrxError.hasCode(e, 'PRX_ERR_STORAGE_UNAVAILABLE')) return text(503, errorMessage(e));
    if (e instanceof PrxError && e.code.includes('FORBIDDEN')) return text(403, e.message);
    this.#ctx.log.error({ err: e }, 'http controller request failed');
    return text(500, errorMessage(e));
  }

  /** Returns the reply, or undefined when a watch stream took over the response. */
  async #route(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<Reply | undefined> {
    const url = new URL(req.url ?? '/', 'http://controller.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const notFound = text(404, `Not found: ${path}`);
    if (path === '/api/1/dtabs') return this.#dtabs(method, undefined, req, res, url, signal);
    if (!path.startsWith(API_PREFIX)) return notFound;
    const rest = path.slice(API_PREFIX.length);
    const slash = rest.indexOf('/');
    const resource = slash < 0 ? rest : rest.slice(0, slash);
    const ns = slash < 0 ? undefined : decodeNamespace(rest.slice(slash + 1));
    if (ns === null) return notFound;
    // The parameters of a watch (null: answer once).
    const watch = isWatch(url.searchParams) && method === 'GET' ? url.searchParams : null;
    const view = (key: string, source: () => Var<Rendered>, extra?: Dtab): Promise<Reply | undefined> | Reply =>
      method === 'GET' || method === 'HEAD' ? this.#view(key, source, watch, res, signal, extra) : methodNotAllowed(method, ['GET', 'HEAD']);
    switch (resource) {
      case 'dtabs':
        return this.#dtabs(method, ns, req, res, url, signal);
      case 'bind':
      case 'addr':
      case 'resolve': {
        if (ns === undefined || ns === '') return notFound;
        const name = readPathParam(url.searchParams);
        if (resource === 'addr') return view(viewKey('addr', ns, name.show), () => renderAddr(this.#ctx.naming.addr(name)));
        const extra = readDtabParam(url.searchParams);
        const key = viewKey(resource, ns, name.show, extra.show);
        if (resource === 'bind') return view(key, () => renderBoundTree(this.#ctx.naming.bind(ns, extra, name)), extra);
        return view(key, () => renderAddr(this.#ctx.naming.resolve(ns, extra, name)), extra);
      }
      case 'delegate': {
        // Without a namespace in the path it behaves like the admin's delegator: `?namespace=`.
        const namespace = ns === undefined || ns === '' ? url.searchParams.get('namespace') : ns;
        if (namespace === null || namespace === '') {
          return text(400, 'Malformed delegation request: the namespace parameter is required');
        }
        const name = readPathParam(url.searchParams);
        const extra = readDtabParam(url.searchParams);
        return view(viewKey('delegate', namespace, name.show, extra.show), () => renderDelegation(this.#ctx.naming, namespace, extra, name), extra);
      }
      case 'bound-names':
        if (ns !== undefined) return notFound;
        return view('bound-names', () => renderBoundNames(this.#ctx.naming.boundNames()));
      default:
        return notFound;
    }
  }

  /**
   * A name view: streamed when `watch` holds the watch's parameters, else the first answer as a 200 (an error as a 500; a 400
   * when the request's own `extra` dtab pushed the evaluation past the naming budget).
   */
  async #view(
    key: string,
    source: () => Var<Rendered>,
    watch: URLSearchParams | null,
    res: ServerResponse,
    signal: AbortSignal,
    extra?: Dtab,
  ): Promise<Reply | undefined> {
    if (watch !== null) {
      this.#stream(res, key, source, JSON_MEDIA_TYPE, watch);
      return undefined;
    }
    const answer = await this.#first(source(), signal);
    if (answer.kind === 'error') {
      const requestFault = extra !== undefined && !extra.isEmpty && answer.code !== undefined && NAMING_BUDGET_CODES.has(answer.code);
      return requestFault ? text(400, `Invalid dtab: ${answer.message}`) : text(500, answer.message);
    }
    return { status: 200, body: answer.text, contentType: JSON_MEDIA_TYPE };
  }

  #stream(res: ServerResponse, key: string, make: () => Var<Rendered>, contentType: string, params: URLSearchParams): void {
    // A bad heartbeatMs is refused before anything is watched.
    const heartbeatMs = readHeartbeatParam(params, contentType);
    const shareKey = `${contentType}\n${key}`;
    let view = this.#sharedViews.get(shareKey);
    if (view === undefined) {
      view = { key: shareKey, source: make(), contentType, users: 0 };
      this.#sharedViews.set(shareKey, view);
    }
    view.users++;
    // The stream may end inside its constructor (a first value that is already an error, e.g. a
    // binding refused by the naming budget), before it could be added.
    const stream = new WatchStream(res, view, this.#streamHost, heartbeatMs);
    if (!stream.ended) this.#streams.add(stream);
  }

  #streamEnded(stream: WatchStream<SharedView>): void {
    this.#streams.delete(stream);
    const view = stream.view;
    if (--view.users === 0 && this.#sharedViews.get(view.key) === view) this.#sharedViews.delete(view.key);
  }

  /** Views shared by open watches (tests check that they are released). */
  get sharedViewCount(): number {
    return this.#sharedViews.size;
  }

  /** Heartbeat timers of open watches, one per distinct period (tests check that they are released). */
  get heartbeatGroupCount(): number {
    return this.#streamHost.heartbeats.groupCount;
  }

  /** The first answer of `source`, bounded by the answer timeout and the client staying. */
  #first(source: Var<Rendered>, signal: AbortSignal): ReturnType<typeof firstRendered> {
    const timeout = AbortSignal.timeout(this.#answerTimeoutMs);
    return firstRendered(source, AbortSignal.any([signal, timeout])).catch((e: unknown) => {
      throw timeout.aborted ? new RequestTimedOutError() : e;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // /api/1/dtabs

  async #dtabs(
    method: string,
    ns: string | undefined,
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    signal: AbortSignal,
  ): Promise<Reply | undefined> {
    const store = this.#ctx.store;
    if (ns === undefined || ns === '') {
      if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(method, ['GET', 'HEAD']);
      return this.#view('namespaces', () => renderNamespaces(store.list()), isWatch(url.searchParams) && method === 'GET' ? url.searchParams : null, res, signal);
    }
    switch (method) {
      case 'GET':
      case 'HEAD': {
        const { contentType, codec } = negotiateDtabType(req.headers.accept);
        if (method === 'GET' && isWatch(url.searchParams)) {
          this.#stream(res, viewKey('dtab', ns), () => renderDtab(store.observe(ns), codec), contentType, url.searchParams);
          return undefined;
        }
        const current = await this.#firstValue(store.observe(ns), signal);
        if (current === undefined) return text(404, `Dtab namespace ${ns} does not exist`);
        const headers = { etag: versionTag(current.version) };
        if (method === 'HEAD') return { status: 200, headers };
        return { status: 200, headers, contentType, body: `${codec.write(current.dtab)}\n` };
      }
      case 'POST': {
        const dtab = await readDtabBody(req);
        try {
          await store.create(ns, dtab);
          return NO_CONTENT;
        } catch (e) {
          if (PrxError.hasCode(e, 'PRX_ERR_DTAB_EXISTS')) return text(409, `Dtab namespace ${ns} already exists`);
          throw e;
        }
      }
      case 'PUT': {
        const condition = readIfMatch(req);
        const dtab = await readDtabBody(req);
        return this.#conditional(ns, condition, req.headers['if-match'], signal, (version) =>
          version === undefined ? this.#replace(ns, dtab, signal) : store.update(ns, dtab, version),
        );
      }
      case 'DELETE':
        return this.#conditional(ns, readIfMatch(req), req.headers['if-match'], signal, (version) => store.delete(ns, version));
      default:
        return methodNotAllowed(method, ['GET', 'HEAD', 'POST', 'PUT', 'DELETE']);
    }
  }

  /**
   * Runs a write under `If-Match`: without one (or with `*`) `write(undefined)`; with a list of
   * entity-tags a compare-and-set per version they name until one is current. 404 when the
   * namespace is absent, 412 when no tag is its current version.
   */
  async #conditional(
    ns: string,
    condition: IfMatch | undefined,
    header: string | undefined,
    signal: AbortSignal,
    write: (version: Uint8Array | undefined) => Promise<void>,
  ): Promise<Reply> {
    const absent = text(404, `Dtab namespace ${ns} does not exist`);
    try {
      if (condition === undefined || condition.kind === 'any') {
        await write(undefined);
        return NO_CONTENT;
      }
      for (const version of condition.versions) {
        try {
          await write(version);
          return NO_CONTENT;
        } catch (e) {
          if (!PrxError.hasCode(e, 'PRX_ERR_DTAB_VERSION_MISMATCH')) throw e;
        }
      }
      // No tag names a version at all: whether the namespace exists decides between 404 and 412.
      if (condition.versions.length === 0 && (await this.#firstValue(this.#ctx.store.observe(ns), signal)) === undefined) return absent;
      const shown = header !== undefined && header.length > 100 ? `${header.slice(0, 100)}…` : header;
      return text(412, `Dtab namespace ${ns} has changed: version ${shown ?? ''} is not its current version`);
    } catch (e) {
      if (PrxError.hasCode(e, 'PRX_ERR_DTAB_ABSENT')) return absent;
      throw e;
    }
  }

  /**
   * PUT without a version. The spec's state table: it replaces an existing namespace and is 404
   * on an absent one. It is still a compare-and-set on the version just read, retried when a
   * concurrent writer wins, so it never resurrects a namespace deleted meanwhile.
   */
  async #replace(ns: string, dtab: Dtab, signal: AbortSignal): Promise<void> {
    for (;;) {
      const current = await this.#firstValue(this.#ctx.store.observe(ns), signal);
      if (current === undefined) throw new DtabNamespaceAbsentError(ns);
      try {
        await this.#ctx.store.update(ns, dtab, current.version);
        return;
      } catch (e) {
        if (!PrxError.hasCode(e, 'PRX_ERR_DTAB_VERSION_MISMATCH')) throw e;
      }
    }
  }

  /** The first settled value of `activity`, bounded like the name views' answers. */
  async #firstValue<T>(activity: Activity<T>, signal: AbortSignal): Promise<T> {
    const timeout = AbortSignal.timeout(this.#answerTimeoutMs);
    try {
      return await activity.toPromise(AbortSignal.any([signal, timeout]));
    } catch (e) {
      throw timeout.aborted ? new RequestTimedOutError() : e;
    }
  }
}

/** What a view shows, as an unambiguous key. */
function viewKey(...parts: string[]): string {
  return JSON.stringify(parts);
}

function methodNotAllowed(method: string, allowed: readonly string[]): Reply {
  return { ...text(405, `Method not allowed: ${method}`), headers: { allow: allowed.join(', ') } };
}

/** The `io.prx.httpController` kind. */
export const httpControllerKind = defineInterface<HttpControllerConfig>({
  kind: 'io.prx.httpController',
  schema: httpControllerSchema,
  create: (cfg, ctx) => new HttpController(cfg, ctx),
});
