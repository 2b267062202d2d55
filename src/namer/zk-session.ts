import type * as Zk from 'node-zookeeper-client';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { hardenConnection } from './zk-harden.js';
import type { Backoff, BackoffStream } from '../service/policy/index.js';
import { closeZkClient } from './zk-call.js';

export type ZkModule = typeof Zk;

export interface ZkSessionOptions {
  readonly connect: string;
  readonly sessionTimeoutMs: number;
  /** Delays between new sessions after an expiry (reset once one connects). */
  readonly backoff: Backoff;
  readonly log: Logger;
  /** Log texts: what survives a disconnection, what happens in a new session, what a failed load means. */
  readonly whileDisconnected: string;
  readonly inNewSession: string;
  readonly loadFailed: string;
  /** A new session began: what the old one held is gone with it. */
  readonly began?: () => void;
  /** The current session is connected (first, or again): read or write what it needs. */
  readonly connected: (client: Zk.Client, zk: ZkModule) => void;
}

/**
 * One ZooKeeper session kept alive for a namer or an announcer: the client library loaded on first
 * use, a session that survives disconnections, a new session (after a backoff) once the server
 * expires it, and a watchdog that starts a new one when a session has not connected for a session
 * timeout (by then the server has expired it anyway, and the client library may wait forever for
 * a server that accepted the connection but never answers). `gen` names the session: answers for
 * an older one are to be ignored.
 */
export class ZkSession {
  readonly #o: ZkSessionOptions;
  #zk: ZkModule | undefined;
  #loading = false;
  #client: Zk.Client | undefined;
  #connected = false;
  #gen = 0;
  #watchdog: NodeJS.Timeout | undefined;
  #retry: NodeJS.Timeout | undefined;
  #backoff: BackoffStream | undefined;
  #closed = false;

  constructor(opts: ZkSessionOptions) {
    this.#o = opts;
  }

  get zk(): ZkModule | undefined {
    return this.#zk;
  }

  get client(): Zk.Client | undefined {
    return this.#client;
  }

  get connected(): boolean {
    return this.#connected;
  }

  get gen(): number {
    return this.#gen;
  }

  /** Loads the client library (once) and opens the first session. */
  start(): void {
    if (this.#loading || this.#closed) return;
    this.#loading = true;
    void import('node-zookeeper-client').then(
      (zk) => {
        this.#zk = zk;
        this.#newSession();
      },
      (e: unknown) => this.#o.log.error({ err: errorMessage(e) }, `${this.#o.loadFailed}: ${errorMessage(e)}`),
    );
  }

  /** Ends the session for good; answers still in flight belong to a past `gen`. */
  close(): Promise<void> {
    this.#closed = true;
    this.#gen++;
    this.#connected = false;
    clearTimeout(this.#watchdog);
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    return client === undefined ? Promise.resolve() : closeZkClient(client);
  }

  #newSession(): void {
    const zk = this.#zk;
    if (this.#closed || zk === undefined) return;
    const o = this.#o;
    const gen = ++this.#gen;
    this.#connected = false;
    o.began?.();
    const old = this.#client;
    const client = zk.createClient(o.connect, { sessionTimeout: o.sessionTimeoutMs, spinDelay: 200, retries: 0 });
    // The library throws out of its socket handler on a packet it cannot parse (seen across a
    // ZooKeeper restart), which would take the proxy down.
    hardenConnection(client, o.log);
    this.#client = client;
    if (old !== undefined) void closeZkClient(old);
    this.#armWatchdog(gen);
    client.on('state', (state: Zk.State) => {
      if (gen !== this.#gen) return;
      if (state === zk.State.SYNC_CONNECTED) {
        clearTimeout(this.#watchdog);
        this.#connected = true;
        this.#backoff = undefined;
        o.log.debug({ zk: o.connect }, 'connected to ZooKeeper');
        o.connected(client, zk);
      } else if (state === zk.State.DISCONNECTED) {
        this.#connected = false;
        o.log.warn({ zk: o.connect }, `disconnected from ZooKeeper; ${o.whileDisconnected}`);
        this.#armWatchdog(gen);
      } else if (state === zk.State.EXPIRED || state === zk.State.AUTH_FAILED) {
        this.#connected = false;
        clearTimeout(this.#watchdog);
        const why = state === zk.State.EXPIRED ? 'ZooKeeper session expired' : 'ZooKeeper authentication failed';
        o.log.warn({ zk: o.connect }, `${why}; ${o.inNewSession}`);
        clearTimeout(this.#retry);
        this.#backoff ??= o.backoff.stream();
        this.#retry = setTimeout(() => this.#newSession(), this.#backoff.nextMs()).unref();
      }
    });
    client.connect();
  }

  #armWatchdog(gen: number): void {
    clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => {
      if (gen !== this.#gen || this.#closed) return;
      this.#o.log.warn({ zk: this.#o.connect }, `no ZooKeeper connection for ${this.#o.sessionTimeoutMs} ms; starting a new session`);
      this.#newSession();
    }, this.#o.sessionTimeoutMs).unref();
  }
}
