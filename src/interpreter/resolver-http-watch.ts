import { type IncomingMessage, request as httpRequest } from 'node:http';
import type { PeerCertificate } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Backoff } from '../service/policy/index.js';
import { ResolverHttpError } from './errors.js';
import { JsonStreamSplitter, type StreamItem } from './resolver-http-json.js';

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
  readonly log?: Logger | undefined;
}

/** A stream that lived this long reconnects at once when it ends; a shorter one backs off. */
const HEALTHY_STREAM_MS = 1000;
/** How much of an error response's body is quoted. */
const ERROR_BODY_CHARS = 1024;

/**
 * One long-lived watch on the resolver (`GET …?watch=true`): documents are delivered as they
 * arrive; when the stream fails or ends it is reopened after a backoff delay (at once after a
 * stream that lived and delivered), forever, until `stop()` aborts the request and any wait.
 * What the documents built stays with the caller, so the last good value outlives a disconnection.
 */
export class ControllerWatch {
  readonly #opts: ControllerWatchOptions;
  readonly #abort = new AbortController();
  #started = false;
  #state: WatchStatus['state'] = 'connecting';
  #controller: ControllerEndpoint | undefined;
  #connectedAt: Date | undefined;
  #lastUpdateAt: Date | undefined;
  #updates = 0;
  #attemptUpdates = 0;
  #attemptFailed = false;
  #reconnects = 0;
  #failures = 0;
  #retryAt: Date | undefined;
  #lastError: { message: string; at: Date } | undefined;

  constructor(opts: ControllerWatchOptions) {
    this.#opts = opts;
  }

  start(): void {
    if (this.#started || this.#abort.signal.aborted) return;
    this.#started = true;
    void this.#run(this.#abort.signal);
  }

  /** Aborts the request in flight and any wait; nothing is delivered afterwards. */
  stop(): void {
    this.#state = 'stopped';
    this.#abort.abort();
  }

  status(): WatchStatus {
    const c = this.#controller;
    return {
      state: this.#state,
      controller: c === undefined ? null : c.host.includes(':') ? `[${c.host}]:${c.port}` : `${c.host}:${c.port}`,
      connectedAt: this.#connectedAt?.toISOString() ?? null,
      lastUpdateAt: this.#lastUpdateAt?.toISOString() ?? null,
      updates: this.#updates,
      reconnects: this.#reconnects,
      retryAt: this.#state === 'waiting' ? (this.#retryAt?.toISOString() ?? null) : null,
      lastError: this.#lastError ? { message: this.#lastError.message, at: this.#lastError.at.toISOString() } : null,
    };
  }

  async #run(signal: AbortSignal): Promise<void> {
    let delays = this.#opts.backoff.stream();
    while (!signal.aborted) {
      this.#state = 'connecting';
      this.#attemptUpdates = 0;
      this.#attemptFailed = false;
      const startedAt = Date.now();
      try {
        const endpoint = await this.#opts.endpoint(signal);
        this.#controller = endpoint;
        await this.#streamOnce(endpoint, signal);
        // After an error report the stream's end is expected; the report is the news.
        if (!signal.aborted && !this.#attemptFailed) this.#failed(new ResolverHttpError('the resolver closed the watch stream'));
      } catch (e) {
        if (signal.aborted) break;
        this.#failed(e);
      }
      if (signal.aborted) break;
      let delay: number;
      if (this.#attemptUpdates > 0) {
        delays = this.#opts.backoff.stream();
        delay = Date.now() - startedAt >= HEALTHY_STREAM_MS ? 0 : delays.nextMs();
      } else {
        delay = delays.nextMs();
      }
      this.#state = 'waiting';
      this.#retryAt = new Date(Date.now() + delay);
      try {
        await sleep(delay, undefined, { signal, ref: false });
      } catch {
        break;
      }
      this.#reconnects++;
    }
    this.#state = 'stopped';
  }

  #streamOnce(endpoint: ControllerEndpoint, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const tls = this.#opts.tls;
      const options = {
        host: endpoint.host,
        port: endpoint.port,
        path: this.#opts.target,
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
      req.on('error', reject);
      req.on('response', (res: IncomingMessage) => {
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          this.#readError(res, resolve, reject);
          return;
        }
        this.#state = 'streaming';
        this.#connectedAt = new Date();
        const splitter = new JsonStreamSplitter();
        let ended = false;
        res.on('data', (chunk: string) => this.#deliver(splitter.push(chunk)));
        res.on('end', () => {
          ended = true;
          this.#deliver(splitter.end());
          resolve();
        });
        res.on('error', reject);
        res.on('close', () => {
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
      if (this.#abort.signal.aborted) return;
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
      this.#updates++;
      this.#attemptUpdates++;
      this.#failures = 0;
      this.#lastUpdateAt = new Date();
    }
  }

  #serverError(error: ResolverHttpError): void {
    this.#attemptFailed = true;
    this.#failed(error);
    this.#opts.onServerError(error);
  }

  #failed(e: unknown): void {
    const message = errorMessage(e);
    this.#lastError = { message, at: new Date() };
    this.#failures++;
    // The first failure after a good stretch is news; the retries after it are not.
    const log = this.#opts.log;
    const fields = { target: this.#opts.target, failures: this.#failures };
    if (this.#failures === 1) log?.warn(fields, `resolver watch failed: ${message}`);
    else log?.debug(fields, `resolver watch failed again: ${message}`);
  }
}
