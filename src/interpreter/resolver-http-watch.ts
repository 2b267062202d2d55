import { type IncomingMessage, request as httpRequest } from 'node:http';
import type { PeerCertificate } from 'node:tls';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Backoff } from '../service/policy/index.js';
import { ResolverHttpError } from './errors.js';
import { JsonStreamSplitter, type StreamItem } from './resolver-http-json.js';
import { WatchLoop } from './watch-loop.js';

/** Where the resolver's HTTP controller listens. */
export interface ControllerEndpoint {
  readonly host: string;
  readonly port: number;
}

/** TLS to the resolver: its certificate must name `commonName` and chain to `ca` (or the system CAs). */
export interface ControllerTls {
  readonly commonName: string;
  readonly ca?: Buffer;
}

/** One watch stream as `/<router>/interpreter_state/…` shows it. */
export interface WatchStatus {
  /** `connecting` (resolving the resolver or awaiting its answer), `streaming`, `waiting` to reconnect, `stopped`. */
  readonly state: 'connecting' | 'streaming' | 'waiting' | 'stopped';
  readonly controller: string | null;
  readonly connectedAt: string | null;
  readonly lastUpdateAt: string | null;
  readonly updates: number;
  readonly reconnects: number;
  readonly retryAt: string | null;
  readonly lastError: { readonly message: string; readonly at: string } | null;
}

export interface ControllerWatchOptions {
  /** Path and query of the watch, e.g. `/api/1/addr/default?path=%2F%23%2Ffs%2Fa&watch=true`. */
  readonly target: string;
  readonly endpoint: (signal: AbortSignal) => Promise<ControllerEndpoint>;
  readonly tls?: ControllerTls | undefined;
  /** Delays between failed attempts; a stream that delivered updates starts the sequence over. */
  readonly backoff: Backoff;
  /** Each document; a throw counts as an error report from the resolver. */
  readonly onDocument: (json: unknown, text: string) => void;
  /** The resolver reported a failure (status, error line, or a document that does not fit). */
  readonly onServerError: (error: ResolverHttpError) => void;
  /** Judge the stream by its silence (see {@link ControllerWatch}); none: trust the connection. */
  readonly liveness?: WatchLiveness | undefined;
  readonly log?: Logger | undefined;
}

/** `failureThreshold` as an HTTP watch applies it. */
export interface WatchLiveness {
  /** The heartbeat period asked of the resolver (`minPeriodMs`). */
  readonly periodMs: number;
  /** How long past a period the stream may stay silent before it is judged dead. */
  readonly closeTimeoutMs: number;
}

/** The query parameter and response header of the controller's heartbeats (watch-heartbeat.ts on the resolver). */
const HEARTBEAT_PARAM = 'heartbeatMs';
const HEARTBEAT_HEADER = 'prx-heartbeat-ms';

/** How much of an error response's body is quoted. */
const ERROR_BODY_CHARS = 1024;

/**
 * One long-lived watch on the resolver (`GET …?watch=true`), kept alive by a {@link WatchLoop}:
 * documents are delivered as they arrive, and a failed or ended stream is reopened after a
 * backoff delay until `stop()`.
 *
 * With `liveness`, the watch asks for a heartbeat every `periodMs` (`heartbeatMs`), and a stream
 * that stays silent — no answer, no bytes — for `closeTimeoutMs` plus the period the resolver
 * announced (`prx-heartbeat-ms`; at least `periodMs`) is torn down as dead and reopened. The
 * reopened stream starts with the current value, so nothing that changed meanwhile is lost. A
 * server that announces no heartbeats (namerd) is not judged by silence once it has answered.
 */
export class ControllerWatch {
  readonly #opts: ControllerWatchOptions;
  readonly #loop: WatchLoop;
  #controller: ControllerEndpoint | undefined;
  #attemptFailed = false;

  constructor(opts: ControllerWatchOptions) {
    this.#opts = opts;
    this.#loop = new WatchLoop({
      backoff: opts.backoff,
      log: opts.log,
      what: 'resolver watch',
      logFields: () => ({ target: opts.target }),
      attempt: (signal) => this.#attempt(signal),
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Aborts the request in flight and any wait; nothing is delivered afterwards. */
  stop(): void {
    this.#loop.stop();
  }

  status(): WatchStatus {
    const c = this.#controller;
    const s = this.#loop.status();
    return {
      state: s.state,
      controller: c === undefined ? null : c.host.includes(':') ? `[${c.host}]:${c.port}` : `${c.host}:${c.port}`,
      connectedAt: s.connectedAt,
      lastUpdateAt: s.lastUpdateAt,
      updates: s.updates,
      reconnects: s.reconnects,
      retryAt: s.retryAt,
      lastError: s.lastError,
    };
  }

  async #attempt(signal: AbortSignal): Promise<void> {
    this.#attemptFailed = false;
    const endpoint = await this.#opts.endpoint(signal);
    this.#controller = endpoint;
    await this.#streamOnce(endpoint, signal);
    // After an error report the stream's end is expected; the report is the news.
    if (!signal.aborted && !this.#attemptFailed) this.#loop.failed(new ResolverHttpError('the resolver closed the watch stream'));
  }

  #streamOnce(endpoint: ControllerEndpoint, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const tls = this.#opts.tls;
      const liveness = this.#opts.liveness;
      const target = this.#opts.target;
      const options = {
        host: endpoint.host,
        port: endpoint.port,
        path: liveness === undefined ? target : `${target}${target.includes('?') ? '&' : '?'}${HEARTBEAT_PARAM}=${liveness.periodMs}`,
        method: 'GET',
        headers: { accept: 'application/json' },
        signal,
        // A watch holds its connection for as long as it lives: pooling would gain nothing.
        agent: false,
      } as const;
      const req = tls
        ? process.getBuiltinModule('node:https').request({
            ...options,
            servername: tls.commonName,
            ...(tls.ca === undefined ? {} : { ca: tls.ca }),
            checkServerIdentity: (_host: string, cert: PeerCertificate) =>
              process.getBuiltinModule('node:tls').checkServerIdentity(tls.commonName, cert),
          })
        : httpRequest(options);
      // The silence allowed: until the answer, closeTimeoutMs + periodMs; then by what the resolver announced.
      let silence: NodeJS.Timeout | undefined;
      const settle = (): void => {
        if (silence !== undefined) clearTimeout(silence);
        silence = undefined;
      };
      const judge = (allowedMs: number): void => {
        settle();
        silence = setTimeout(() => {
          reject(new ResolverHttpError(`nothing from the resolver for ${allowedMs} ms (failureThreshold): the link is taken for dead`));
          req.destroy();
        }, allowedMs);
        silence.unref();
      };
      if (liveness !== undefined) judge(liveness.closeTimeoutMs + liveness.periodMs);
      req.on('error', (e) => {
        settle();
        reject(e);
      });
      req.on('response', (res: IncomingMessage) => {
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          settle();
          this.#readError(res, resolve, reject);
          return;
        }
        const announced = Number(res.headers[HEARTBEAT_HEADER]);
        if (liveness === undefined || !(announced > 0)) settle();
        else judge(liveness.closeTimeoutMs + Math.max(liveness.periodMs, announced));
        this.#loop.streaming();
        const splitter = new JsonStreamSplitter();
        let ended = false;
        res.on('data', (chunk: string) => {
          silence?.refresh();
          this.#deliver(splitter.push(chunk));
        });
        res.on('end', () => {
          ended = true;
          settle();
          this.#deliver(splitter.end());
          resolve();
        });
        res.on('error', reject);
        res.on('close', () => {
          settle();
          if (!ended) reject(new ResolverHttpError('the connection to the resolver was lost'));
        });
      });
      req.end();
    });
  }

  /** A non-200 answer: its status and the start of its body are the error. */
  #readError(res: IncomingMessage, resolve: () => void, reject: (e: unknown) => void): void {
    let body = '';
    res.on('data', (chunk: string) => {
      if (body.length < ERROR_BODY_CHARS) body += chunk;
    });
    res.on('error', reject);
    res.on('end', () => {
      const text = body.slice(0, ERROR_BODY_CHARS).trim();
      const error = new ResolverHttpError(`the resolver answered ${res.statusCode} to GET ${this.#opts.target}${text ? `: ${text}` : ''}`);
      this.#serverError(error);
      resolve();
    });
  }

  #deliver(items: readonly StreamItem[]): void {
    for (const item of items) {
      if (this.#loop.stopped) return;
      if ('error' in item) {
        this.#serverError(new ResolverHttpError(item.error));
        continue;
      }
      try {
        this.#opts.onDocument(item.json, item.text);
      } catch (e) {
        this.#serverError(e instanceof ResolverHttpError ? e : new ResolverHttpError(errorMessage(e)));
        continue;
      }
      this.#loop.delivered();
    }
  }

  #serverError(error: ResolverHttpError): void {
    this.#attemptFailed = true;
    this.#loop.failed(error);
    this.#opts.onServerError(error);
  }
}
