import type * as Zk from 'node-zookeeper-client';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { Pending, type State, Var, failed, ok } from '../naming/index.js';
import type { Backoff, BackoffStream } from '../service/policy/index.js';
import { closeZkClient, zkCodeOf } from './zk-call.js';

type ZkModule = typeof Zk;

/** A watched read: its current path and how to read it again. */
interface Watched {
  readonly path: string;
  /** Reads again, re-arming the watch; called on the watch's event and on every (re)connection. */
  refresh(): void;
}

/**
 * Live views of znodes for namers: `children`, `data` and `exists` are lazy vars that read a
 * znode with a one-shot watch and read again (re-arming it) whenever the watch fires. One
 * session serves them all; it is opened on first use. While the connection is lost each view
 * keeps its last value; on reconnection, and in the new session after an expiry (or after no
 * connection for a session timeout), every observed view is read again. A view nobody observes
 * holds no watch state of its own (ZooKeeper drops the server-side watch when it next fires).
 */
export class ZkWatcher {
  readonly #connect: string;
  readonly #sessionTimeoutMs: number;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  readonly #active = new Set<Watched>();
  readonly #children = new Map<string, Var<State<string[] | null>>>();
  readonly #data = new Map<string, Var<State<Buffer | null>>>();
  readonly #exists = new Map<string, Var<State<boolean>>>();
  #zk: ZkModule | undefined;
  #loading = false;
  #client: Zk.Client | undefined;
  #connected = false;
  #gen = 0;
  #watchdog: NodeJS.Timeout | undefined;
  #sessionRetry: NodeJS.Timeout | undefined;
  #sessionBackoff: BackoffStream | undefined;
  #closed = false;

  constructor(connect: string, sessionTimeoutMs: number, log: Logger, backoff: Backoff) {
    this.#connect = connect;
    this.#sessionTimeoutMs = sessionTimeoutMs;
    this.#log = log;
    this.#backoff = backoff;
  }

  /** The children of `path`; null while it does not exist. */
  children(path: string): Var<State<string[] | null>> {
    return this.#view(this.#children, path, (client, zk, watcher, set, fail, again) =>
      client.getChildren(path, watcher, (err, children) => {
        if (err === null) return set(ok([...children].sort()));
        if (zkCodeOf(asError(err)) !== zk.Exception.NO_NODE) return fail(err);
        // Absent: watch for its creation (a creation between the two reads is caught by the exists).
        client.exists(path, watcher, (e2, stat) => {
          if (e2 !== null) return fail(e2);
          if (stat !== null) return again();
          set(ok(null));
        });
      }),
    );
  }

  /** The data of `path`; null while it does not exist. */
  data(path: string): Var<State<Buffer | null>> {
    return this.#view(this.#data, path, (client, zk, watcher, set, fail) =>
      client.getData(path, watcher, (err, data) => {
        if (err === null) return set(ok(data ?? Buffer.alloc(0)));
        if (zkCodeOf(asError(err)) !== zk.Exception.NO_NODE) return fail(err);
        set(ok(null));
      }),
    );
  }

  /** Whether `path` exists. */
  exists(path: string): Var<State<boolean>> {
    return this.#view(this.#exists, path, (client, _zk, watcher, set, fail) =>
      client.exists(path, watcher, (err, stat) => {
        if (err !== null) return fail(err);
        set(ok(stat !== null));
      }),
    );
  }

  /** Ends the session; views keep their last values. */
  close(): void {
    this.#closed = true;
    this.#gen++;
    clearTimeout(this.#watchdog);
    clearTimeout(this.#sessionRetry);
    this.#active.clear();
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) void closeZkClient(client);
  }

  #view<T>(
    cache: Map<string, Var<State<T>>>,
    path: string,
    read: (
      client: Zk.Client,
      zk: ZkModule,
      watcher: (e: Zk.Event) => void,
      set: (s: State<T>) => void,
      fail: (err: Error | Zk.Exception) => void,
      again: () => void,
    ) => void,
  ): Var<State<T>> {
    const cached = cache.get(path);
    if (cached !== undefined) return cached;
    const v = Var.async<State<T>>(Pending, (set) => {
      // Only the newest read's answer counts. The watcher is one function for the view's life: the
      // client keeps each distinct watcher function until its event, so a new one per read would
      // pile up across reconnections on a znode that never changes.
      let seq = 0;
      let known = false;
      const publish = (st: State<T>): void => {
        if (st.kind === 'ok') known = true;
        set(st);
      };
      const watcher = (): void => {
        if (this.#active.has(entry)) entry.refresh();
      };
      const entry: Watched = {
        path,
        refresh: () => {
          const client = this.#client;
          const zk = this.#zk;
          if (!this.#active.has(entry) || client === undefined || zk === undefined || !this.#connected) return;
          const mine = ++seq;
          const gen = this.#gen;
          const live = (): boolean => mine === seq && gen === this.#gen && this.#active.has(entry);
          const fail = (err: Error | Zk.Exception): void => {
            if (!live()) return;
            const e = asError(err);
            const code = zkCodeOf(e);
            // A lost connection or session is followed by a reconnection or a new session, which reads again.
            if (code === zk.Exception.CONNECTION_LOSS || code === zk.Exception.SESSION_EXPIRED || code === zk.Exception.OPERATION_TIMEOUT) {
              this.#log.debug({ zk: this.#connect, path, err: e.message }, `ZooKeeper read of ${path} failed; keeping the last value`);
              return;
            }
            // Anything else (no permission, a path ZooKeeper refuses) fails the view unless it has a value to keep.
            this.#log.warn({ zk: this.#connect, path, err: e.message }, `cannot read ${path} in ZooKeeper: ${e.message}`);
            if (!known) set(failed(e));
          };
          try {
            read(client, zk, watcher, (st) => live() && publish(st), fail, () => live() && entry.refresh());
          } catch (e) {
            // The client refuses malformed paths synchronously.
            set(failed(e));
          }
        },
      };
      this.#active.add(entry);
      this.#start();
      entry.refresh();
      return {
        close: () => {
          this.#active.delete(entry);
          // Forgotten once unobserved (member znodes come and go); a later use makes a new view.
          if (cache.get(path) === v) cache.delete(path);
        },
      };
    });
    cache.set(path, v);
    return v;
  }

  /** Loads the client library on first use and opens the session. */
  #start(): void {
    if (this.#loading || this.#closed) return;
    this.#loading = true;
    void import('node-zookeeper-client').then(
      (zk) => {
        this.#zk = zk;
        this.#newSession();
      },
      (e: unknown) => this.#log.error({ err: errorMessage(e) }, `cannot load the ZooKeeper client: ${errorMessage(e)}`),
    );
  }

  #newSession(): void {
    const zk = this.#zk;
    if (this.#closed || zk === undefined) return;
    const gen = ++this.#gen;
    this.#connected = false;
    const old = this.#client;
    const client = zk.createClient(this.#connect, { sessionTimeout: this.#sessionTimeoutMs, spinDelay: 200, retries: 0 });
    this.#client = client;
    if (old !== undefined) void closeZkClient(old);
    this.#armWatchdog(gen);
    client.on('state', (state: Zk.State) => {
      if (gen !== this.#gen) return;
      if (state === zk.State.SYNC_CONNECTED) {
        clearTimeout(this.#watchdog);
        this.#connected = true;
        this.#sessionBackoff = undefined;
        this.#log.debug({ zk: this.#connect }, 'connected to ZooKeeper');
        for (const w of [...this.#active]) w.refresh();
      } else if (state === zk.State.DISCONNECTED) {
        this.#connected = false;
        this.#log.warn({ zk: this.#connect }, 'disconnected from ZooKeeper; serversets keep their last members');
        this.#armWatchdog(gen);
      } else if (state === zk.State.EXPIRED || state === zk.State.AUTH_FAILED) {
        this.#connected = false;
        clearTimeout(this.#watchdog);
        this.#log.warn({ zk: this.#connect }, `ZooKeeper session ${state === zk.State.EXPIRED ? 'expired' : 'authentication failed'}; reading again in a new session`);
        this.#scheduleSession();
      }
    });
    client.connect();
  }

  #scheduleSession(): void {
    clearTimeout(this.#sessionRetry);
    this.#sessionBackoff ??= this.#backoff.stream();
    this.#sessionRetry = setTimeout(() => this.#newSession(), this.#sessionBackoff.nextMs()).unref();
  }

  /** A session that has not connected for a session timeout is expired by the server anyway: start a new one. */
  #armWatchdog(gen: number): void {
    clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => {
      if (gen !== this.#gen || this.#closed) return;
      this.#log.warn({ zk: this.#connect }, `no ZooKeeper connection for ${this.#sessionTimeoutMs} ms; starting a new session`);
      this.#newSession();
    }, this.#sessionTimeoutMs).unref();
  }
}

function asError(err: Error | Zk.Exception): Error {
  return err instanceof Error ? err : Object.assign(new Error(err.toString()), { getCode: () => err.getCode() });
}
