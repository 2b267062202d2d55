import { Agent, type Dispatcher, request } from 'undici';
import { errorMessage } from '../../core/errors.js';
import { StorageUnavailableError } from './errors.js';
import { type TlsMaterial, nodeTlsOptions } from '../../config/index.js';

/** A response read whole. */
export interface HttpResult {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** A streamed response: the status and headers, and the body as it arrives. */
export interface HttpStream {
  readonly status: number;
  readonly body: AsyncIterable<Buffer>;
  /** Reads what is left of the body as text (error responses). */
  text(): Promise<string>;
}

/**
 * A small HTTP/1.1 client for the REST-style stores (Consul, the orchestrator API): one connection
 * pool per store, plain or TLS, no timeouts of its own on bodies so that long polls and watch
 * streams can stay open; callers abort them with a signal.
 */
export class StorageHttpClient {
  readonly #origin: string;
  readonly #agent: Agent;

  constructor(host: string, port: number, tls: TlsMaterial | undefined, opts: { readonly headersTimeoutMs?: number } = {}) {
    const h = host.includes(':') ? `[${host}]` : host;
    this.#origin = `${tls === undefined ? 'http' : 'https'}://${h}:${port}`;
    this.#agent = new Agent({
      headersTimeout: opts.headersTimeoutMs ?? 0,
      bodyTimeout: 0,
      ...(tls === undefined ? {} : { connect: nodeTlsOptions(tls) as NonNullable<Agent.Options['connect']> }),
    });
  }

  get origin(): string {
    return this.#origin;
  }

  /** Sends a request and reads the whole response. Network failures become StorageUnavailableError. */
  async call(
    method: Dispatcher.HttpMethod,
    path: string,
    opts: { readonly headers?: Record<string, string>; readonly body?: string; readonly signal?: AbortSignal } = {},
  ): Promise<HttpResult> {
    try {
      const res = await request(this.#origin + path, {
        method,
        dispatcher: this.#agent,
        ...(opts.headers === undefined ? {} : { headers: opts.headers }),
        ...(opts.body === undefined ? {} : { body: opts.body }),
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      });
      const body = await res.body.text();
      return { status: res.statusCode, headers: res.headers, body };
    } catch (e) {
      throw unavailable(method, path, e);
    }
  }

  /** Sends a request and hands back the body as a stream (watches). */
  async stream(path: string, opts: { readonly headers?: Record<string, string>; readonly signal?: AbortSignal } = {}): Promise<HttpStream> {
    try {
      const res = await request(this.#origin + path, {
        method: 'GET',
        dispatcher: this.#agent,
        ...(opts.headers === undefined ? {} : { headers: opts.headers }),
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      });
      return { status: res.statusCode, body: res.body, text: () => res.body.text() };
    } catch (e) {
      throw unavailable('GET', path, e);
    }
  }

  /**
   * Drops the pool and fails whatever is still queued. A store closes only once nothing waits on
   * it, and a graceful close could wait forever: a test run hung in it after a refused TLS client
   * certificate left a request queued with no connection.
   */
  close(): Promise<void> {
    return this.#agent.destroy().catch(() => undefined);
  }
}

function unavailable(method: string, path: string, e: unknown): StorageUnavailableError {
  if (e instanceof StorageUnavailableError) return e;
  const code = (e as { code?: unknown } | undefined)?.code;
  return new StorageUnavailableError(`${method} ${path} failed: ${errorMessage(e)}${typeof code === 'string' ? ` (${code})` : ''}`, {
    cause: e,
  });
}

/** True when a request failed before anything was sent (the server refused the connection): safe to retry any write. */
export function refusedBeforeSending(e: unknown): boolean {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur !== undefined && cur !== null; i++) {
    if ((cur as { code?: unknown }).code === 'ECONNREFUSED') return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}

/** The first value of a header. */
export function header(h: HttpResult['headers'], name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}
