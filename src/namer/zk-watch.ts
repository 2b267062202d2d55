import type * as Zk from 'node-zookeeper-client';
import type { Logger } from '../core/log.js';
import { Pending, type State, Var, failed, ok } from '../naming/index.js';
import type { Backoff } from '../service/policy/index.js';
import { zkCodeOf } from './zk-call.js';
import { type ZkModule, ZkSession } from './zk-session.js';

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
  readonly #log: Logger;
  readonly #session: ZkSession;
  readonly #active = new Set<Watched>();
  readonly #children = new Map<string, Var<State<string[] | null>>>();
  readonly #data = new Map<string, Var<State<Buffer | null>>>();
  readonly #exists = new Map<string, Var<State<boolean>>>();

  constructor(connect: string, sessionTimeoutMs: number, log: Logger, backoff: Backoff) {
    this.#connect = connect;
    this.#log = log;
    this.#session = new ZkSession({
      connect,
      sessionTimeoutMs,
      backoff,
      log,
      whileDisconnected: 'serversets keep their last members',
      inNewSession: 'reading again in a new session',
      loadFailed: 'cannot load the ZooKeeper client',
      connected: () => {
        for (const w of [...this.#active]) w.refresh();
      },
    });
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
    this.#active.clear();
    void this.#session.close();
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
          const session = this.#session;
          const client = session.client;
          const zk = session.zk;
          if (!this.#active.has(entry) || client === undefined || zk === undefined || !session.connected) return;
          const mine = ++seq;
          const gen = session.gen;
          const live = (): boolean => mine === seq && gen === session.gen && this.#active.has(entry);
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
      this.#session.start();
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

}

function asError(err: Error | Zk.Exception): Error {
  return err instanceof Error ? err : Object.assign(new Error(err.toString()), { getCode: () => err.getCode() });
}
