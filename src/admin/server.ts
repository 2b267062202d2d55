import { readFile } from 'node:fs/promises';
import * as http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SocketOptionsConfig } from '../config/resolver-config.js';
import { errorMessage } from '../core/errors.js';
import { getLogger, type Logger } from '../core/log.js';
import {
  AdminHttpError,
  AdminTlsError,
  BadRequestError,
  DuplicateEndpointError,
  MethodNotAllowedError,
  AdminBodyTooLargeError,
  CrossSiteRequestError,
} from './errors.js';
import {
  acceptsJson,
  jsonResponse,
  textResponse,
  type AdminEndpoint,
  type AdminRequest,
  type AdminResponse,
} from './handler.js';
import { categoryOf, changesState, crossSiteReason, OPEN_POLICY, SecurityPolicy, type AdminCategory, type AdminSecurity } from './security.js';

/** The admin server's TLS object (config `admin.tls`). `caCertPath` makes client certificates mandatory. */
export interface AdminTls {
  readonly certPath: string;
  readonly keyPath: string;
  readonly caCertPath?: string;
}

export interface AdminServerOptions {
  /** Listen address; defaults to the loopback address. */
  readonly ip?: string;
  /** Listen port; defaults to 9990. 0 picks a free port (see {@link AdminServer.address}). */
  readonly port?: number;
  readonly tls?: AdminTls;
  /** Absent: every endpoint is available. */
  readonly security?: AdminSecurity;
  /** Larger request bodies get 413. Defaults to 1 MiB. */
  readonly maxBodyBytes?: number;
  readonly logger?: Logger;
  /** The resolver's `admin.socketOptions`; the proxy's admin uses Node's defaults. */
  readonly socketOptions?: SocketOptionsConfig;
}

/** An endpoint as listed by the `/admin` index. */
export interface AdminEndpointInfo {
  readonly path: string;
  readonly description: string;
  readonly category: AdminCategory;
  readonly methods: readonly string[] | 'any';
}

/** A request another process received and passes on: method, target (path and query), headers, body. */
export interface ForwardedAdminRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Uint8Array;
  /** For the error log only. */
  readonly url?: string;
}

/** Admin defaults from the spec's Limits table. */
export const ADMIN_DEFAULT_PORT = 9990;
export const ADMIN_DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

interface Route {
  readonly endpoint: AdminEndpoint;
  readonly methods: readonly string[] | undefined;
  /** For prefix routes, the prefix including its trailing `/`. */
  readonly prefix: string | undefined;
}

interface Match {
  readonly route: Route;
  readonly rest: string;
}

const PREFIX_MARK = '/*';

/**
 * The admin HTTP(S) server: a table of endpoints behind the security policy.
 *
 * Request flow: security (a rejected path is a 404 with an empty body, indistinguishable from a
 * disabled feature) → route (exact path, else the longest prefix pattern) → method → cross-site
 * check of requests that change state (403) → bounded body → handler. A handler's
 * {@link AdminHttpError} becomes its status; any other throw becomes a 500 and the server keeps
 * serving.
 */
export class AdminServer {
  readonly #options: AdminServerOptions;
  readonly #policy: SecurityPolicy;
  readonly #maxBody: number;
  readonly #log: Logger;
  readonly #exact = new Map<string, Route>();
  #prefixes: Route[] = []; // longest prefix first
  readonly #inFlight = new Set<AbortController>();
  #server: http.Server | undefined;

  constructor(options: AdminServerOptions = {}) {
    this.#options = options;
    this.#policy = options.security ? new SecurityPolicy(options.security) : OPEN_POLICY;
    this.#maxBody = options.maxBodyBytes ?? ADMIN_DEFAULT_MAX_BODY_BYTES;
    this.#log = options.logger ?? getLogger('prx.admin');
  }

  /** Registers an endpoint. Registering a path twice throws {@link DuplicateEndpointError}. */
  add(endpoint: AdminEndpoint): this {
    const methods = endpoint.method === undefined ? undefined : [endpoint.method].flat();
    if (endpoint.path.endsWith(PREFIX_MARK)) {
      const prefix = endpoint.path.slice(0, -1);
      if (this.#prefixes.some((r) => r.prefix === prefix)) throw new DuplicateEndpointError(endpoint.path);
      this.#prefixes = [...this.#prefixes, { endpoint, methods, prefix }].sort(
        (a, b) => (b.prefix?.length ?? 0) - (a.prefix?.length ?? 0),
      );
    } else {
      if (this.#exact.has(endpoint.path)) throw new DuplicateEndpointError(endpoint.path);
      this.#exact.set(endpoint.path, { endpoint, methods, prefix: undefined });
    }
    return this;
  }

  /** Whether an endpoint is registered at exactly `path` (a prefix endpoint's path ends in `/*`). */
  has(path: string): boolean {
    return this.#exact.has(path) || this.#prefixes.some((r) => r.endpoint.path === path);
  }

  /** Unregisters the endpoint at `path` (to register another in its place); false if there was none. */
  remove(path: string): boolean {
    if (this.#exact.delete(path)) return true;
    const before = this.#prefixes.length;
    this.#prefixes = this.#prefixes.filter((r) => r.endpoint.path !== path);
    return this.#prefixes.length !== before;
  }

  /**
   * Serves a request that arrived some other way than this server's socket (a worker process
   * answering its primary's admin): the same security, routing, method and cross-site checks and
   * error responses; the body is already read. A post-response action runs once the answer is built.
   */
  async handle(request: ForwardedAdminRequest, signal: AbortSignal): Promise<AdminResponse> {
    const url = parseUrl(request.target);
    const wantsJson = acceptsJson(request.headers.accept) || url?.pathname.endsWith('.json') === true;
    let response: AdminResponse;
    try {
      if (!url) throw new BadRequestError('malformed request URL');
      response = await this.#route(request.method, url, request.headers, wantsJson, signal, () => {}, () => Promise.resolve(Buffer.from(request.body)));
    } catch (e) {
      response = this.#errorResponse(e, request, wantsJson);
    }
    const { onSent, ...rest } = response;
    if (onSent) queueMicrotask(onSent);
    return rest;
  }

  /** The endpoints the security policy lets through, sorted by path (the `/admin` index). */
  endpoints(): AdminEndpointInfo[] {
    return [...this.#exact.values(), ...this.#prefixes]
      .map(({ endpoint, methods }) => ({
        path: endpoint.path,
        description: endpoint.description ?? '',
        category: endpoint.category ?? categoryOf(endpoint.path),
        methods: methods ?? ('any' as const),
      }))
      .filter((e) => this.#policy.allows(e.path, e.category))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** Starts listening; resolves with the bound address. */
  async listen(): Promise<{ ip: string; port: number }> {
    if (this.#server) throw new Error('admin server is already listening');
    const server = await this.#createServer();
    this.#server = server;
    const { ip = '127.0.0.1', port = ADMIN_DEFAULT_PORT } = this.#options;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        // `reusePort` is validated against the Node version by the config schema.
        const reusePort = this.#options.socketOptions?.reusePort === true ? { reusePort: true } : {};
        server.listen({ port, host: ip, ...reusePort }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (e) {
      this.#server = undefined; // e.g. EADDRINUSE: allow another attempt
      throw e;
    }
    const address = this.address;
    this.#log.info({ address }, 'admin server listening');
    return address;
  }

  /** The bound address; throws when not listening. */
  get address(): { ip: string; port: number } {
    const bound = this.#server?.address() as AddressInfo | null | undefined;
    if (!bound) throw new Error('admin server is not listening');
    return { ip: bound.address, port: bound.port };
  }

  /** The base URL of the admin interface ({admin_url}), e.g. `http://127.0.0.1:9990`. */
  get url(): string {
    const { ip, port } = this.address;
    const host = ip.includes(':') ? `[${ip}]` : ip;
    return `${this.#options.tls ? 'https' : 'http'}://${host}:${port}`;
  }

  /** Stops listening, aborts handlers still running and drops open connections. */
  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    for (const ac of this.#inFlight) ac.abort();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  async #createServer(): Promise<http.Server> {
    const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      void this.#serve(req, res);
    };
    const { tls, socketOptions } = this.#options;
    const serverOptions: http.ServerOptions = {
      ...(socketOptions ? { noDelay: socketOptions.noDelay, keepAlive: socketOptions.keepAlive } : {}),
    };
    if (!tls) return this.#applyTimeout(http.createServer(serverOptions, listener));
    const read = async (path: string): Promise<Buffer> => {
      try {
        return await readFile(path);
      } catch (e) {
        throw new AdminTlsError(`cannot read ${path}: ${errorMessage(e)}`, { cause: e });
      }
    };
    const [cert, key, ca] = await Promise.all([
      read(tls.certPath),
      read(tls.keyPath),
      tls.caCertPath === undefined ? undefined : read(tls.caCertPath),
    ]);
    const clientAuth = ca !== undefined;
    return this.#applyTimeout(
      // node:https is loaded only by an admin server that terminates TLS.
      process.getBuiltinModule('node:https').createServer({ ...serverOptions, cert, key, ...(clientAuth ? { ca, requestCert: true, rejectUnauthorized: true } : {}) }, listener),
    );
  }

  /** Node's socket timeout counts reads and writes alike: `readTimeoutMs` is an idle-connection timeout. */
  #applyTimeout<S extends http.Server>(server: S): S {
    const ms = this.#options.socketOptions?.readTimeoutMs;
    if (ms !== undefined) server.timeout = ms;
    return server;
  }

  #match(path: string): Match | undefined {
    const exact = this.#exact.get(path);
    if (exact) return { route: exact, rest: '' };
    const route = this.#prefixes.find((r) => r.prefix !== undefined && path.startsWith(r.prefix));
    return route && { route, rest: path.slice(route.prefix?.length ?? 0) };
  }

  async #serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const ac = new AbortController();
    this.#inFlight.add(ac);
    res.on('close', () => {
      this.#inFlight.delete(ac);
      if (!res.writableFinished) ac.abort();
    });
    const url = parseUrl(req.url ?? '/');
    // `.json` endpoints answer errors in JSON too, whatever the Accept header says.
    const wantsJson = acceptsJson(req.headers.accept) || url?.pathname.endsWith('.json') === true;
    let response: AdminResponse;
    try {
      if (!url) throw new BadRequestError('malformed request URL');
      response = await this.#dispatch(req, url, wantsJson, ac.signal);
    } catch (e) {
      req.resume();
      if (ac.signal.aborted) {
        // The client left or the server is closing: the handler stopped as asked, and no one is
        // waiting for an answer. Not an error (a heap profile cut short by shutdown used to log one).
        this.#log.debug({ method: req.method, url: req.url }, 'admin request abandoned');
        return;
      }
      response = this.#errorResponse(e, req, wantsJson);
    }
    this.#write(res, response);
  }

  #dispatch(req: http.IncomingMessage, url: URL, wantsJson: boolean, signal: AbortSignal): Promise<AdminResponse> {
    return this.#route(req.method ?? 'GET', url, req.headers, wantsJson, signal, () => req.resume(), () => readBody(req, this.#maxBody));
  }

  /** Security → route → method → cross-site check → body → handler; `discard` drops an unread body. */
  async #route(
    method: string,
    url: URL,
    headers: IncomingHttpHeaders,
    wantsJson: boolean,
    signal: AbortSignal,
    discard: () => void,
    body: () => Promise<Buffer>,
  ): Promise<AdminResponse> {
    const path = url.pathname;
    const match = this.#match(path);
    const category = match?.route.endpoint.category ?? categoryOf(path);
    if (!this.#policy.allows(path, category)) {
      discard();
      return { status: 404, contentType: 'text/plain', body: '' };
    }
    if (!match) {
      discard();
      return errorBody(404, `no admin endpoint at ${path}`, wantsJson);
    }
    const { route, rest } = match;
    if (route.methods && !route.methods.includes(method) && !(method === 'HEAD' && route.methods.includes('GET'))) {
      throw new MethodNotAllowedError(method, route.methods);
    }
    if (changesState(method, category)) {
      const reason = crossSiteReason(headers, this.#options.tls ? 'https' : 'http');
      if (reason !== undefined) {
        discard();
        throw new CrossSiteRequestError(reason);
      }
    }
    const request: AdminRequest = {
      method,
      path,
      query: url.searchParams,
      headers,
      body: await body(),
      rest,
      wantsJson,
      signal,
    };
    return await route.endpoint.handler(request);
  }

  #errorResponse(e: unknown, req: { readonly method?: string | undefined; readonly url?: string | undefined }, wantsJson: boolean): AdminResponse {
    if (e instanceof AdminHttpError) {
      return { ...errorBody(e.status, e.message, wantsJson), headers: e.headers };
    }
    this.#log.error({ err: e, method: req.method, url: req.url }, 'admin handler failed');
    return errorBody(500, `internal error: ${errorMessage(e)}`, wantsJson);
  }

  #write(res: http.ServerResponse, response: AdminResponse): void {
    if (res.destroyed) return;
    const body = typeof response.body === 'string' ? Buffer.from(response.body, 'utf8') : response.body;
    res.writeHead(response.status ?? 200, {
      ...response.headers,
      'content-type': response.contentType,
      'content-length': body.byteLength,
    });
    const { onSent } = response;
    // `writeTimeoutMs`: a client that does not take a (large) response in time is dropped.
    const writeTimeoutMs = this.#options.socketOptions?.writeTimeoutMs;
    const stalled = writeTimeoutMs === undefined ? undefined : setTimeout(() => res.destroy(), writeTimeoutMs);
    stalled?.unref();
    if (stalled) res.once('close', () => clearTimeout(stalled));
    res.end(body, () => {
      if (stalled) clearTimeout(stalled);
      if (!onSent) return;
      try {
        onSent();
      } catch (e) {
        this.#log.error({ err: e }, 'admin post-response action failed');
      }
    });
  }
}

/**
 * The request target as a URL. Origin-form targets (`/a/b?c`) are appended to a dummy origin
 * rather than resolved against it, so `//x/y` stays the path `//x/y` instead of naming a host.
 */
function parseUrl(target: string): URL | undefined {
  try {
    return new URL(target.startsWith('/') ? `http://admin.invalid${target}` : target);
  } catch {
    return undefined;
  }
}

function errorBody(status: number, message: string, wantsJson: boolean): AdminResponse {
  return wantsJson ? jsonResponse({ error: message }, status) : textResponse(message, status);
}

/** Reads the whole body, refusing (413) anything larger than `limit` bytes. */
function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > limit) {
      req.resume();
      reject(new AdminBodyTooLargeError(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // Stop buffering but keep the socket alive for the 413; its `Connection: close` ends the
      // exchange. (Destroying the request would take the response down with it.)
      req.off('data', onData);
      req.resume();
      reject(new AdminBodyTooLargeError(limit));
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}
