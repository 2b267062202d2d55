import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import { StorageForbiddenError } from '../../../src/resolver/storage/errors.js';
import { current, dtabShown, dtabStoreContract, testContext } from './contract.js';
import { ZkDtabStore, zkStorageSchema } from '../../../src/resolver/storage/zk.js';
import type { DtabStore } from '../../../src/resolver/storage/types.js';
import { sharedZooKeeper } from '../../helpers/services.js';

const prefixes = new WeakMap<DtabStore, string>();
const extraStores: DtabStore[] = [];
after(async () => {
  await Promise.all(extraStores.map((s) => s.close()));
});
let n = 0;

async function openZk(pathPrefix: string): Promise<DtabStore> {
  const zk = await sharedZooKeeper();
  const cfg = zkStorageSchema.parse({ kind: 'io.prx.coord', zkAddrs: [{ host: zk.host, port: zk.port }], pathPrefix });
  const store = new ZkDtabStore(cfg, testContext());
  prefixes.set(store, pathPrefix);
  return store;
}

dtabStoreContract('io.prx.coord (ZooKeeper)', {
  open: () => openZk(`/prx-test-${process.pid}-c${++n}`),
  peer: (s) => openZk(prefixes.get(s) as string),
});

describe('io.prx.coord', () => {
  it('sets the configured ACLs on the nodes it creates and authenticates with authInfo', async () => {
    const pathPrefix = `/prx-test-${process.pid}-acl`;
    const digest = createHash('sha1').update('prx:secret').digest('base64');
    const owner = await openWith(pathPrefix, {
      authInfo: { scheme: 'digest', auth: 'prx:secret' },
      acls: [
        { scheme: 'digest', id: `prx:${digest}`, perms: 'crwda' },
        { scheme: 'world', id: 'anyone', perms: 'r' },
      ],
    });
    await owner.create('locked', readDtab('/a=>/b'));
    const v = await current(owner, 'locked');
    assert.equal(Buffer.from(v.version).toString('base64'), 'AAAAAA==', 'a new znode is version 0');
    const stranger = await openWith(pathPrefix, {});
    // world may read...
    assert.equal((await current(stranger, 'locked')).dtab.show, '/a=>/b');
    // ...but not write.
    await assert.rejects(stranger.update('locked', readDtab('/a=>/c'), v.version), StorageForbiddenError);
    await assert.rejects(stranger.delete('locked'), StorageForbiddenError);
    await owner.update('locked', readDtab('/a=>/c'), v.version);
    const v1 = await dtabShown(stranger, 'locked', '/a=>/c');
    assert.equal(Buffer.from(v1.version).toString('base64'), 'AAAAAQ==');
  });
});

async function openWith(pathPrefix: string, extra: Record<string, unknown>): Promise<DtabStore> {
  const zk = await sharedZooKeeper();
  const cfg = zkStorageSchema.parse({ kind: 'io.prx.coord', zkAddrs: [{ host: zk.host, port: zk.port }], pathPrefix, ...extra });
  const store = new ZkDtabStore(cfg, testContext());
  extraStores.push(store);
  return store;
}
