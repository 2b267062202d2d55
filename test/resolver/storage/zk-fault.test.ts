// ZooKeeper going away under a running store: health reports it, readers keep the last good
// values, writes fail as unavailable, and after the restart (same port, same data) the session
// and its watches resume with no acknowledged write missing. A client cut off for longer than
// its session timeout gets a new session and re-reads everything.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { readDtab } from '../../../src/naming/index.js';
import { StorageUnavailableError } from '../../../src/resolver/storage/errors.js';
import { ZkDtabStore, zkStorageSchema } from '../../../src/resolver/storage/zk.js';
import { jittered } from '../../../src/service/policy/index.js';
import { type ServiceHandle, startZooKeeper } from '../../helpers/services.js';
import { absent, current, dtabShown, listed, racingCreates, testContext, until } from './contract.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';

const d = readDtab;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const handles: ServiceHandle[] = [];
const proxies: TcpProxy[] = [];
const stores: ZkDtabStore[] = [];

function open(port: number, pathPrefix: string, sessionTimeoutMs = 4000): ZkDtabStore {
  const cfg = zkStorageSchema.parse({ kind: 'io.prx.coord', zkAddrs: [{ host: '127.0.0.1', port }], pathPrefix, sessionTimeoutMs });
  const s = new ZkDtabStore(cfg, testContext(), { retryBackoff: jittered(20, 200), requestTimeoutMs: 1000 });
  stores.push(s);
  return s;
}

after(async () => {
  await Promise.all(proxies.map((p) => p.cut()));
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(handles.map((h) => h.destroy()));
});

describe('io.prx.coord faults (real ZooKeeper)', () => {
  it('survives a stop and restart of ZooKeeper mid-watch without losing acknowledged writes', async () => {
    // tickTime 200 ms: sessions of 0.4–4 s.
    const zk = await startZooKeeper({ ZK_TICK_TIME: '200' });
    handles.push(zk);
    const watcher = open(zk.port, '/fault');
    const writer = open(zk.port, '/fault');
    await writer.create('base', d('/a=>/0'));
    await dtabShown(watcher, 'base', '/a=>/0');

    const writes = racingCreates(writer);
    await sleep(200);
    await zk.stop();
    await until(() => !watcher.health().ok, 10_000, 'the watcher to notice');
    assert.match(watcher.health().detail ?? '', /disconnected/);
    assert.equal((await current(watcher, 'base')).dtab.show, '/a=>/0');
    await assert.rejects(writer.put('base', d('/a=>/down')), StorageUnavailableError);
    await zk.restart();
    await until(() => watcher.health().ok, 20_000, 'the watcher to recover');
    await sleep(200);
    await writes.stop();
    const { acked } = writes;
    assert.ok(acked.length > 0 && writes.failures() > 0, `acked ${acked.length}, failed ${writes.failures()}`);
    const names = await listed(watcher, (n) => acked.every((a) => n.has(a)), 15_000);
    assert.ok(names.has('base'));
    // Watches are armed again: another client's change arrives.
    const other = open(zk.port, '/fault');
    const v = await current(other, 'base');
    await other.update('base', d('/a=>/after'), v.version);
    await dtabShown(watcher, 'base', '/a=>/after');
  });

  it('starts a new session after its session expired while cut off, and re-reads everything', async () => {
    const zk = await startZooKeeper({ ZK_TICK_TIME: '200' });
    handles.push(zk);
    const proxy = await new TcpProxy('127.0.0.1', zk.port).start();
    proxies.push(proxy);
    const watcher = open(proxy.port, '/expiry', 1000);
    const writer = open(zk.port, '/expiry');
    await writer.create('ns', d('/a=>/1'));
    await writer.create('gone', d('/g=>/1'));
    await dtabShown(watcher, 'ns', '/a=>/1');
    await dtabShown(watcher, 'gone', '/g=>/1');
    await proxy.cut();
    await until(() => !watcher.health().ok, 10_000, 'the watcher to notice the cut');
    const v = await current(writer, 'ns');
    await writer.update('ns', d('/a=>/2'), v.version);
    await writer.delete('gone');
    await writer.create('new', d('/n=>/1'));
    // Well past the 1 s session: ZooKeeper expires it.
    await sleep(3000);
    await proxy.restore();
    await dtabShown(watcher, 'ns', '/a=>/2', 20_000);
    await dtabShown(watcher, 'new', '/n=>/1');
    await absent(watcher, 'gone');
    await until(() => watcher.health().ok, 10_000, 'health');
    // The new session's watches work.
    await writer.put('ns', d('/a=>/3'));
    await dtabShown(watcher, 'ns', '/a=>/3');
  });
});
