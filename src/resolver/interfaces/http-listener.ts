import { readFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { SocketOptionsConfig } from '../../config/resolver-config.js';
import type { ServerTlsConfig } from '../../config/tls.js';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { InterfaceNotListeningError, InterfaceTlsError } from '../errors.js';

/** Where and how an HTTP interface listens. */
export interface HttpListenerOptions {
  /** The interface kind, for logs and errors. */
  readonly kind: string;
  readonly ip: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly tls?: ServerTlsConfig;
  readonly socketOptions?: SocketOptionsConfig;
  readonly log: Logger;
}

/** While closing, how often connections that have become idle are closed. */
const IDLE_SWEEP_MS = 25;

export type RequestListener = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/**
 * An HTTP(S) listener with socket options and graceful close: `close` stops accepting, closes
 * keep-alive connections as soon as they are idle, and drops the rest once the grace period is
 * over (the owner ends its long-lived streams itself).
 */
export class HttpListener {
  readonly #options: HttpListenerOptions;
  readonly #listener: RequestListener;
  #server: http.Server | undefined;
  #address: { ip: string; port: number } | undefined;

  constructor(options: HttpListenerOptions, listener: RequestListener) {
    this.#options = options;
    this.#listener = listener;
  }

  async listen(): Promise<{ ip: string; port: number }> {
    if (this.#server) throw new Error(`interface ${this.#options.kind} is already listening`);
    const server = await this.#createServer();
    const { ip, port, socketOptions } = this.#options;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // `reusePort` is validated against the Node version by the config schema.
      const listenOptions = { port, host: ip, ...(socketOptions?.reusePort === true ? { reusePort: true } : {}) };
      server.listen(listenOptions, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#server = server;
    const bound = server.address() as AddressInfo;
    this.#address = { ip: bound.address, port: bound.port };
    this.#options.log.info({ address: this.#address, kind: this.#options.kind }, `${this.#options.kind} listening`);
    return this.#address;
  }

  get address(): { ip: string; port: number } {
    if (!this.#address) throw new InterfaceNotListeningError(this.#options.kind);
    return this.#address;
  }

  get url(): string {
    const { ip, port } = this.address;
    const host = ip.includes(':') ? `[${ip}]` : ip;
    return `${this.#options.tls ? 'https' : 'http'}://${host}:${port}`;
  }

  get listening(): boolean {
    return this.#server !== undefined;
  }

  /**
   * Stops listening. Idle connections close now; connections still busy after `graceMs` are
   * dropped. Resolves once every connection is gone.
   */
  async close(graceMs = 0): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    this.#address = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Connections become idle as their last response finishes (watches ended by the owner,
    // requests completing): close each as soon as it is idle, and every one once the grace is over.
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    sweep.unref();
    timer.unref();
    try {
      await closed;
    } finally {
      clearInterval(sweep);
      clearTimeout(timer);
    }
  }

  async #createServer(): Promise<http.Server> {
    const { socketOptions, tls } = this.#options;
    const serverOptions: http.ServerOptions = {
      noDelay: socketOptions?.noDelay ?? true,
      keepAlive: socketOptions?.keepAlive ?? false,
    };
    let server: http.Server;
    if (!tls) {
      server = http.createServer(serverOptions, this.#listener);
    } else {
      const read = async (path: string): Promise<Buffer> => {
        try {
          return await readFile(path);
        } catch (e) {
          throw new InterfaceTlsError(`${this.#options.kind}: cannot read ${path}: ${errorMessage(e)}`, { cause: e });
        }
      };
      const [cert, key, ca] = await Promise.all([
        read(tls.certPath),
        read(tls.keyPath),
        tls.caCertPath === undefined ? undefined : read(tls.caCertPath),
      ]);
      const clientAuth = ca !== undefined ? { ca, requestCert: true, rejectUnauthorized: true } : {};
      server = https.createServer({ ...serverOptions, cert, key, ...clientAuth }, this.#listener);
    }
    // Node's socket timeout counts reads and writes alike: an idle-connection timeout.
    if (socketOptions?.readTimeoutMs !== undefined) server.timeout = socketOptions.readTimeoutMs;
    return server;
  }
}
