import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import { InMemoryDtabStore, inMemoryStorageSchema } from '../../../src/resolver/storage/in-memory.js';
import { dtabShown, dtabStoreContract, listed, testContext, current } from './contract.js';

dtabStoreContract('io.prx.inMemory', {
  open: () => Promise.resolve(new InMemoryDtabStore({}, testContext())),
  // One process, one map: a second client is the same store.
  peer: (s) => Promise.resolve(s),
});

describe('io.prx.inMemory', () => {
  it('serves the configured namespaces at version 1 and counts versions like namerd', async () => {
    const cfg = inMemoryStorageSchema.parse({ kind: 'io.prx.inMemory', namespaces: { default: '/svc => /#/io.prx.fs' } });
    const store = new InMemoryDtabStore(cfg.namespaces, testContext());
    const v1 = await dtabShown(store, 'default', '/svc=>/#/io.prx.fs');
    assert.equal(Buffer.from(v1.version).toString('base64'), 'AAAAAAAAAAE=');
    await store.update('default', readDtab('/svc=>/x'), v1.version);
    assert.equal(Buffer.from((await current(store, 'default')).version).toString('base64'), 'AAAAAAAAAAI=');
    await store.put('default', readDtab('/svc=>/y'));
    assert.equal(Buffer.from((await current(store, 'default')).version).toString('base64'), 'AAAAAAAAAAM=');
    await store.delete('default');
    await store.put('default', readDtab('/svc=>/z'));
    assert.equal(Buffer.from((await current(store, 'default')).version).toString('base64'), 'AAAAAAAAAAE=');
    assert.deepEqual([...(await listed(store, () => true))], ['default']);
    await store.close();
  });

  it('validates the configured dtabs and namespaces', () => {
    const bad = inMemoryStorageSchema.safeParse({ kind: 'io.prx.inMemory', namespaces: { ok: '/a => /b', broken: '/a =>' } });
    assert.equal(bad.success, false);
    const badNs = inMemoryStorageSchema.safeParse({ kind: 'io.prx.inMemory', namespaces: { 'a/b': '/a=>/b' } });
    assert.equal(badNs.success, false);
    assert.deepEqual(inMemoryStorageSchema.parse({ kind: 'io.prx.inMemory' }).namespaces, {});
  });
});
