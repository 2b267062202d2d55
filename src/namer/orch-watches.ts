import type { OrchApiClient } from '../protocol/orch/client.js';
import type { OrchApiError } from '../protocol/orch/errors.js';
import { Informer } from '../protocol/orch/informer.js';
import type { OrchObject, OrchResource } from '../protocol/orch/types.js';
import { MutableVar, Var } from '../naming/index.js';
import type { Backoff } from '../service/policy/index.js';

/** One watched object as the namer sees it: absent until listed, kept through errors. */
export interface WatchedObject<T> {
  /** A list has succeeded at least once: `object` is the truth (undefined = does not exist). */
  readonly synced: boolean;
  readonly object: T | undefined;
  /** The last list or watch failure, cleared by the next success. */
  readonly error: Error | undefined;
}

/** What `/namer_state/…` shows of one watch. */
export interface WatchInfo {
  readonly resource: string;
  readonly namespace: string;
  readonly name: string;
  readonly labelSelector?: string;
  readonly synced: boolean;
  readonly exists: boolean;
  readonly resourceVersion: string;
  readonly error?: string;
  /** Lookups observing it now. */
  readonly users: number;
  /** When its last user left (ISO time), while it waits out the idle TTL. */
  readonly idleSince?: string;
}

interface Entry {
  readonly resource: OrchResource;
  readonly namespace: string;
  readonly name: string;
  readonly labelSelector: string | undefined;
  /** Undefined only for an entry handed out after close (it never syncs). */
  readonly informer: Informer<OrchObject> | undefined;
  readonly value: MutableVar<WatchedObject<OrchObject>>;
  users: number;
  idleTimer: NodeJS.Timeout | undefined;
  idleSince: number | undefined;
}

const UNSYNCED: WatchedObject<never> = Object.freeze({ synced: false, object: undefined, error: undefined });

export interface ObjectWatchesOptions {
  /** How long a watch nobody observes stays open (a name looked up again soon reuses it). */
  readonly idleTtlMs: number;
  readonly backoff?: Backoff;
  /** A list or watch failure (already retried with backoff by the informer). */
  readonly onError?: (what: string, e: OrchApiError) => void;
}

/**
 * One list+watch per object (`fieldSelector=metadata.name=…`), shared by every lookup that reads
 * the object and closed `idleTtlMs` after the last of them leaves. The informer keeps the watch
 * current (resourceVersion, bookmarks, relist on 410 Gone, backoff); the last good object stays
 * in force while it retries.
 */
export class ObjectWatches {
  readonly #client: OrchApiClient;
  readonly #opts: ObjectWatchesOptions;
  readonly #entries = new Map<string, Entry>();
  /** Bumped on every change of any watched object (the namers' enumeration follows it). */
  readonly changes = new MutableVar(0);
  #closed = false;

  constructor(client: OrchApiClient, opts: ObjectWatchesOptions) {
    this.#client = client;
    this.#opts = opts;
  }

  /** The object `namespace/name` of `resource` (matching `labelSelector`, when given), watched while observed. */
  object<T extends OrchObject>(resource: OrchResource, namespace: string, name: string, labelSelector?: string): Var<WatchedObject<T>> {
    const key = `${resource.group}/${resource.plural}\u0000${namespace}\u0000${name}\u0000${labelSelector ?? ''}`;
    return Var.async<WatchedObject<T>>(UNSYNCED, (set) => {
      const entry = this.#acquire(key, resource, namespace, name, labelSelector);
      const sub = (entry.value as unknown as MutableVar<WatchedObject<T>>).observe(set);
      return {
        close: () => {
          sub.close();
          this.#release(key, entry);
        },
      };
    });
  }

  /** Watches open now (in use or waiting out their idle TTL). */
  get size(): number {
    return this.#entries.size;
  }

  /** Every watch, for the admin. */
  info(): WatchInfo[] {
    return [...this.#entries.values()].map((e) => {
      const v = e.value.current;
      return {
        resource: e.resource.kind,
        namespace: e.namespace,
        name: e.name,
        ...(e.labelSelector === undefined ? {} : { labelSelector: e.labelSelector }),
        synced: v.synced,
        exists: v.object !== undefined,
        resourceVersion: e.informer?.state.resourceVersion ?? '',
        // The informer's own error clears as soon as a watch reopens, before any object changes.
        ...(e.informer?.state.error === undefined ? {} : { error: e.informer.state.error.message }),
        users: e.users,
        ...(e.idleSince === undefined ? {} : { idleSince: new Date(e.idleSince).toISOString() }),
      };
    });
  }

  /** The current objects of every watch of `resource` (for enumeration). */
  objects<T extends OrchObject>(resource: OrchResource): { namespace: string; name: string; labelSelector: string | undefined; object: T | undefined }[] {
    return [...this.#entries.values()]
      .filter((e) => e.resource === resource)
      .map((e) => ({ namespace: e.namespace, name: e.name, labelSelector: e.labelSelector, object: e.value.current.object as T | undefined }));
  }

  /** Ends every watch. */
  close(): void {
    this.#closed = true;
    for (const e of this.#entries.values()) this.#end(e);
    this.#entries.clear();
  }

  #acquire(key: string, resource: OrchResource, namespace: string, name: string, labelSelector: string | undefined): Entry {
    if (this.#closed) {
      const value = new MutableVar<WatchedObject<OrchObject>>(UNSYNCED);
      return { resource, namespace, name, labelSelector, informer: undefined, value, users: 1, idleTimer: undefined, idleSince: undefined };
    }
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const value = new MutableVar<WatchedObject<OrchObject>>(UNSYNCED);
      const what = `${resource.kind} ${namespace}/${name}${labelSelector === undefined ? '' : ` (${labelSelector})`}`;
      const informer = new Informer<OrchObject>(
        this.#client,
        resource,
        { namespace, name, ...(labelSelector === undefined ? {} : { labelSelector }), ...(this.#opts.backoff ? { backoff: this.#opts.backoff } : {}) },
        (objects) => {
          value.update({ synced: true, object: objects.get(`${namespace}/${name}`), error: undefined });
          this.changes.update(this.changes.current + 1);
        },
        (e) => {
          const prev = value.current;
          value.update({ ...prev, error: e });
          this.#opts.onError?.(what, e);
        },
      );
      entry = { resource, namespace, name, labelSelector, informer, value, users: 0, idleTimer: undefined, idleSince: undefined };
      this.#entries.set(key, entry);
    }
    entry.users++;
    if (entry.idleTimer !== undefined) {
      clearTimeout(entry.idleTimer);
      entry.idleTimer = undefined;
    }
    entry.idleSince = undefined;
    return entry;
  }

  #release(key: string, entry: Entry): void {
    entry.users--;
    if (entry.users > 0 || this.#closed) return;
    const drop = (): void => {
      if (this.#entries.get(key) !== entry || entry.users > 0) return;
      this.#entries.delete(key);
      this.#end(entry);
      this.changes.update(this.changes.current + 1);
    };
    if (this.#opts.idleTtlMs <= 0) {
      drop();
      return;
    }
    entry.idleSince = Date.now();
    entry.idleTimer = setTimeout(drop, this.#opts.idleTtlMs);
    entry.idleTimer.unref();
  }

  #end(entry: Entry): void {
    if (entry.idleTimer !== undefined) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    entry.informer?.close();
  }
}
