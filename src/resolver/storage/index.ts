// The resolver's dtab storage: the DtabStore interface, its errors, and the storage kinds.
// Importing this module registers every kind (io.prx.inMemory, io.prx.kvstore2, io.prx.coord,
// io.prx.kvstore, io.prx.orch); the client libraries of etcd and ZooKeeper load only when such a
// store is created.
import { BugError } from '../../core/errors.js';
import { type KindConfig, lookupKind } from '../../config/index.js';
import type { DtabStore, StorageContext } from './types.js';

export type { DtabStore, StorageContext, VersionedDtab } from './types.js';
export * from './errors.js';
export { InMemoryDtabStore, inMemoryStorageSchema, type InMemoryStorageConfig } from './in-memory.js';
export { EtcdDtabStore, etcdStorageSchema, type EtcdStorageConfig, type EtcdStoreOptions } from './etcd.js';
export { ZkDtabStore, zkStorageSchema, type ZkStorageConfig, type ZkStoreOptions } from './zk.js';
export { ConsulDtabStore, consulStorageSchema, type ConsulStorageConfig } from './consul.js';
export { K8sDtabStore, k8sStorageSchema, type K8sStorageConfig, type K8sStoreOptions } from './k8s.js';
export { namerTlsSchema, type NamerTlsConfig } from '../../config/index.js';

/** Creates the store a validated `storage` config object (from `kindSlot('storage')`) describes. */
export function openDtabStore(cfg: KindConfig, ctx: StorageContext): DtabStore {
  const def = lookupKind('storage', cfg.kind);
  // The config was validated against the registry, so its kind is registered.
  if (def === undefined) throw new BugError(`storage kind ${cfg.kind} is not registered`);
  return (def.create as (c: KindConfig, x: StorageContext) => DtabStore)(cfg, ctx);
}
