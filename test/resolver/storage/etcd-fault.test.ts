// etcd going away under a running store: health reports it, readers keep the last good values,
// writes fail as unavailable, and after the restart (same port, same data) the watch resumes and
// no acknowledged write is missing. A cut connection whose resume revision was compacted away
// meanwhile lists again.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import { EtcdDtabStore, etcdStorageSchema } from '../../../src/resolver/storage/etcd.js';
import { StorageUnavailableError } from '../../../src/resolver/storage/errors.js';
import { jittered } from '../../../src/service/policy/index.js';
import { type ServiceHandle, startEtcd } from '../../helpers/services.js';
import { current, dtabShown, listed, racingCreates, testContext, until } from './contract.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';

const d = readDtab;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const handles: ServiceHandle[] = [];
const proxies: TcpProxy[] = [];
const stores: EtcdDtabStore[] = [];

function open(port: number, pathPrefix: string): EtcdDtabStore {
  const cfg = etcdStorageSchema.parse({ kind: 'io.prx.kvstore2', experimental: true, host: '127.0.0.1', port, pathPrefix });
  const s = new EtcdDtabStore(cfg, testContext(), { retryBackoff: jittered(20, 200), requestTimeoutMs: 2000 });
  stores.push(s);
  return s;
}

after(async () => {
  await Promise.all(proxies.map((p) => p.cut()));
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(handles.map((h) => h.destroy()));
});

describe('io.prx.kvstore2 faults (real etcd)', () => {
  it('survives a stop and restart of etcd mid-watch without losing acknowledged writes', async () => {
    const etcd = await startEtcd();
    handles.push(etcd);
    const watcher = open(etcd.port, '/fault');
    const writer = open(etcd.port, '/fault');
    await writer.create('base', d('/a=>/0'));
    await dtabShown(watcher, 'base', '/a=>/0');

    const writes = racingCreates(writer);
    await sleep(150);
    await etcd.stop();
    await until(() => !watcher.health().ok, 10_000, 'the watcher to notice');
    assert.ok(watcher.health().detail, 'health says why');
    // Readers keep the last good value.
    assert.equal((await current(watcher, 'base')).dtab.show, '/a=>/0');
    await assert.rejects(writer.put('base', d('/a=>/down')), StorageUnavailableError);
    await sleep(300);
    await etcd.restart();
    await until(() => watcher.health().ok, 20_000, 'the watcher to recover');
    await sleep(150);
    await writes.stop();
    const { acked } = writes;
    assert.ok(acked.length > 0 && writes.failures() > 0, `acked ${acked.length}, failed ${writes.failures()}`);
    const names = await listed(watcher, (n) => acked.every((a) => n.has(a)), 15_000);
    assert.ok(names.has('base'));
    // The resumed watch delivers changes made by others after the restart.
    const other = open(etcd.port, '/fault');
    await other.put('base', d('/a=>/after'));
    await dtabShown(watcher, 'base', '/a=>/after');
  });

  it('lists again when the revision to resume from was compacted while cut off', async () => {
    const etcd = await startEtcd();
    handles.push(etcd);
    const proxy = await new TcpProxy('127.0.0.1', etcd.port).start();
    proxies.push(proxy);
    const watcher = open(proxy.port, '/compact');
    const writer = open(etcd.port, '/compact');
    await writer.create('ns', d('/a=>/1'));
    await writer.create('gone', d('/g=>/1'));
    await dtabShown(watcher, 'ns', '/a=>/1');
    await dtabShown(watcher, 'gone', '/g=>/1');
    await proxy.cut();
    await until(() => !watcher.health().ok, 10_000, 'the watcher to notice the cut');
    await writer.put('ns', d('/a=>/2'));
    await writer.delete('gone');
    await writer.put('ns', d('/a=>/3'));
    // Compact everything up to now: resuming from the watcher's revision is impossible.
    const range = (await (await fetch(`${etcd.address}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: 'eA==' }) })).json()) as {
      header: { revision: string };
    };
    const compacted = await fetch(`${etcd.address}/v3/kv/compaction`, {
      method: 'POST',
      body: JSON.stringify({ revision: range.header.revision, physical: true }),
    });
    assert.equal(compacted.status, 200, await compacted.text());
    await proxy.restore();
    await dtabShown(watcher, 'ns', '/a=>/3', 20_000);
    await listed(watcher, (n) => !n.has('gone'));
    await until(() => watcher.health().ok, 10_000, 'health');
    // And it watches again from the new listing.
    await writer.put('ns', d('/a=>/4'));
    await dtabShown(watcher, 'ns', '/a=>/4');
  });
});
