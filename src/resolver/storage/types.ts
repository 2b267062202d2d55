import type { Logger } from 'pino';
import type { Activity, Dtab } from '../../naming/index.js';
import type { StatsReceiver } from '../../service/stats/index.js';

/** A dtab with its storage version. */
export interface VersionedDtab {
  readonly dtab: Dtab;
  /** opaque version; the ETag is its base64 */
  readonly version: Uint8Array;
}

/**
 * Where the resolver keeps its dtabs, one per namespace (namerd's `DtabStore`). Reads are
 * activities kept current by the backend's watch; writes are compare-and-set where the backend
 * allows it.
 */
export interface DtabStore {
  /** Namespaces, kept current (watch). */
  list(): Activity<ReadonlySet<string>>;
  /** One namespace's dtab, kept current; `undefined` while it does not exist. Changes dedup'd by version. */
  observe(ns: string): Activity<VersionedDtab | undefined>;
  /** DtabNamespaceExistsError if present. */
  create(ns: string, dtab: Dtab): Promise<void>;
  /** DtabVersionMismatchError / DtabNamespaceAbsentError. */
  update(ns: string, dtab: Dtab, version: Uint8Array): Promise<void>;
  /** Upsert. */
  put(ns: string, dtab: Dtab): Promise<void>;
  /** DtabNamespaceAbsentError; with a version, only if still at it (else DtabVersionMismatchError). */
  delete(ns: string, version?: Uint8Array): Promise<void>;
  close(): Promise<void>;
  /** For the admin: health of the backend connection (last error, connected?). */
  readonly health: () => { readonly ok: boolean; readonly detail?: string };
}

/** What a storage factory receives besides its config. */
export interface StorageContext {
  readonly log: Logger;
  readonly stats: StatsReceiver;
}
