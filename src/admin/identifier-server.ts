import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../core/errors.js';
import { getLogger, type Logger } from '../core/log.js';
import type { RunningRouter } from '../router/core/types.js';

/** What the identifier endpoint needs of a router: its label and, if it has one, its identifier. */
export type IdentifyingRouter = Pick<RunningRouter, 'label' | 'identify'>;

export interface IdentifierServerOptions {
  /** Listen address (the admin interface's `ip`). */
  readonly ip: string;
  /** `admin.httpIdentifierPort`; 0 picks a free port. */
  readonly port: number;
  /** Read on every request, so routers added or removed later are reflected. */
  readonly routers: () => readonly IdentifyingRouter[];
  readonly logger?: Logger;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Runs every router's identifiers on one request: `{"<router label>": <identification>}`.
 * Routers without an identifier (protocols that are not HTTP) are left out; an identifier that
 * throws shows `{"error": "<message>"}` under its router instead of failing the whole answer.
 */
export async function identifyAll(
  routers: readonly IdentifyingRouter[],
  req: http.IncomingMessage,
): Promise<Record<string, unknown>> {
  const entries = await Promise.all(
    routers.map(async (router): Promise<[string, unknown] | undefined> => {
      if (!router.identify) return undefined;
      try {
        return [router.label, await router.identify(req)];
      } catch (e) {
        return [router.label, { error: errorMessage(e) }];
      }
    }),
  );
  const out: Record<string, unknown> = {};
  for (const entry of entries) if (entry) out[entry[0]] = entry[1];
  return out;
}

/**
 * Naming values (paths, dtabs, name trees) render as their text form; bigints (trace ids) as
 * decimal strings. Everything else is left to JSON.
 */
function replacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const show = (value as { show?: unknown }).show;
      if (typeof show === 'string') return show;
    }
  }
  return value;
}

/**
 * The HTTP-identifier debug server (`admin.httpIdentifierPort`): any request is identified by every
 * router as if it had arrived at the router, and the answer is the JSON map of results. Every path
 * is served, not only `/`, because path identifiers name requests by their path.
 */
export class IdentifierServer {
  readonly #options: IdentifierServerOptions;
  readonly #log: Logger;
  #server: http.Server | undefined;

  constructor(options: IdentifierServerOptions) {
    this.#options = options;
    this.#log = options.logger ?? getLogger('prx.admin.identifier');
  }

  async listen(): Promise<{ ip: string; port: number }> {
    if (this.#server) throw new Error('identifier server is already listening');
    // HTTP/1.0 requests may lack Host, and an identifier's answer to that is worth showing.
    const server = http.createServer({ requireHostHeader: false }, (req, res) => void this.#serve(req, res));
    this.#server = server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.#options.port, this.#options.ip, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (e) {
      this.#server = undefined;
      throw e;
    }
    const address = this.address;
    this.#log.info({ address }, 'http identifier server listening');
    return address;
  }

  /** The bound address; throws when not listening. */
  get address(): { ip: string; port: number } {
    const bound = this.#server?.address() as AddressInfo | null | undefined;
    if (!bound) throw new Error('identifier server is not listening');
    return { ip: bound.address, port: bound.port };
  }

  /** Stops listening and drops open connections (a debug endpoint has nothing worth draining). */
  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  async #serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let status = 200;
    let body: string;
    try {
      body = JSON.stringify(await identifyAll(this.#options.routers(), req), replacer);
    } catch (e) {
      this.#log.error({ err: e }, 'http identification failed');
      status = 500;
      body = JSON.stringify({ error: errorMessage(e) });
    }
    // Identifiers read headers and the target only; the body is drained so keep-alive works.
    req.resume();
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
}
