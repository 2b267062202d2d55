import { dtabStoreContract, testContext } from './contract.js';
import { EtcdDtabStore, etcdStorageSchema } from '../../../src/resolver/storage/etcd.js';
import type { DtabStore } from '../../../src/resolver/storage/types.js';
import { sharedEtcd } from '../../helpers/services.js';

const prefixes = new WeakMap<DtabStore, string>();
let n = 0;

async function openEtcd(pathPrefix: string): Promise<DtabStore> {
  const etcd = await sharedEtcd();
  const cfg = etcdStorageSchema.parse({ kind: 'io.prx.kvstore2', experimental: true, host: etcd.host, port: etcd.port, pathPrefix });
  const store = new EtcdDtabStore(cfg, testContext());
  prefixes.set(store, pathPrefix);
  return store;
}

dtabStoreContract('io.prx.kvstore2 (etcd v3)', {
  open: () => openEtcd(`/prx-test/${process.pid}/c${++n}`),
  peer: (s) => openEtcd(prefixes.get(s) as string),
});
