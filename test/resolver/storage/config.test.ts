// Storage kinds as the config sees them: registration, defaults, experimental gating, the namer
// TLS object, and TLS against a live (fake Consul) HTTPS server with real certificates.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { kindSlot, kindsOf } from '../../../src/config/index.js';
import { readDtab } from '../../../src/naming/index.js';
import {
  ConsulDtabStore,
  InMemoryDtabStore,
  StorageUnavailableError,
  consulStorageSchema,
  etcdStorageSchema,
  namerTlsSchema,
  openDtabStore,
  zkStorageSchema,
} from '../../../src/resolver/storage/index.js';
import { FakeConsul } from './fake-consul.js';
import { current, dtabShown, testContext } from './contract.js';

const storage = kindSlot('storage');

function issues(value: unknown): string {
  const r = storage.safeParse(value);
  return r.success ? '' : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
}

describe('storage kinds in the config', () => {
  it('registers all five kinds', () => {
    assert.deepEqual(kindsOf('storage'), ['io.prx.coord', 'io.prx.inMemory', 'io.prx.kvstore', 'io.prx.kvstore2', 'io.prx.orch']);
  });

  it('refuses io.prx.kvstore2 unless experimental: true, and fills its defaults', () => {
    assert.match(issues({ kind: 'io.prx.kvstore2' }), /experimental/);
    const cfg = storage.parse({ kind: 'io.prx.kvstore2', experimental: true });
    assert.deepEqual(cfg, { kind: 'io.prx.kvstore2', experimental: true, host: 'localhost', port: 2379, pathPrefix: '/namerd/dtabs' });
  });

  it('validates io.prx.coord: zkAddrs required, perms within crwda without repeats', () => {
    assert.match(issues({ kind: 'io.prx.coord' }), /zkAddrs/);
    assert.match(issues({ kind: 'io.prx.coord', zkAddrs: [] }), /at least one/);
    const base = { kind: 'io.prx.coord', zkAddrs: [{ host: '127.0.0.1', port: 2181 }] };
    assert.match(issues({ ...base, acls: [{ scheme: 'world', id: 'anyone', perms: 'crwdx' }] }), /crwda/);
    assert.match(issues({ ...base, acls: [{ scheme: 'world', id: 'anyone', perms: 'rr' }] }), /at most once/);
    assert.match(issues({ ...base, authInfo: { scheme: 'digest' } }), /authInfo\.auth/);
    const cfg = zkStorageSchema.parse({ ...base, acls: [{ scheme: 'world', id: 'anyone', perms: 'rca' }] });
    assert.equal(cfg.pathPrefix, '/dtabs');
    assert.equal(cfg.sessionTimeoutMs, 10_000);
  });

  it('validates the namer TLS object', () => {
    assert.equal(namerTlsSchema.safeParse({}).success, false, 'commonName required');
    assert.equal(namerTlsSchema.safeParse({ disableValidation: true }).success, true);
    assert.equal(namerTlsSchema.safeParse({ disableValidation: true, clientAuth: { certPath: '/c', keyPath: '/k' } }).success, false);
    assert.deepEqual(namerTlsSchema.parse({ commonName: 'x' }), { commonName: 'x', disableValidation: false, trustCerts: [] });
    const etcdNoValidation = etcdStorageSchema.safeParse({ kind: 'io.prx.kvstore2', experimental: true, tls: { disableValidation: true } });
    assert.equal(etcdNoValidation.success, false, 'gRPC cannot skip the host-name check');
  });

  it('opens the store a config describes', async () => {
    const store = openDtabStore(storage.parse({ kind: 'io.prx.inMemory', namespaces: { default: '/a=>/b' } }), testContext());
    assert.ok(store instanceof InMemoryDtabStore);
    await dtabShown(store, 'default', '/a=>/b');
    await store.close();
  });
});

describe('io.prx.kvstore over TLS', () => {
  let dir: string;
  let files: Record<'ca' | 'cert' | 'key' | 'clientCert' | 'clientKey', string>;
  const fakes: FakeConsul[] = [];
  const stores: ConsulDtabStore[] = [];

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'prx-storage-tls-'));
    const ssl = (...args: string[]): void => {
      execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    };
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=prx test CA');
    for (const [name, cn] of [
      ['server', 'consul.prx.test'],
      ['client', 'prx-resolver'],
    ] as const) {
      ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
      writeFileSync(join(dir, `${name}.ext`), `subjectAltName=DNS:${cn}\n`);
      ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`);
      // clientAuth keys must be PKCS#8.
      ssl('pkcs8', '-topk8', '-nocrypt', '-in', `${name}.key`, '-out', `${name}.p8`);
    }
    files = {
      ca: join(dir, 'ca.pem'),
      cert: join(dir, 'server.pem'),
      key: join(dir, 'server.p8'),
      clientCert: join(dir, 'client.pem'),
      clientKey: join(dir, 'client.p8'),
    };
  });

  after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await Promise.all(fakes.map((f) => f.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  async function serve(clientCa: boolean): Promise<FakeConsul> {
    const tls = { cert: readFileSync(files.cert), key: readFileSync(files.key), ...(clientCa ? { ca: readFileSync(files.ca) } : {}) };
    const f = await new FakeConsul({ tls }).start();
    fakes.push(f);
    return f;
  }

  function open(f: FakeConsul, tls: Record<string, unknown>): ConsulDtabStore {
    const cfg = consulStorageSchema.parse({ kind: 'io.prx.kvstore', host: '127.0.0.1', port: f.port, failFast: true, backoff: { kind: 'constant', ms: 50 }, tls });
    const s = new ConsulDtabStore(cfg, testContext());
    stores.push(s);
    return s;
  }

  it('trusts the configured CA for the configured common name, and nothing else', async () => {
    const f = await serve(false);
    const good = open(f, { commonName: 'consul.prx.test', trustCertsBundle: files.ca });
    await good.create('ns', readDtab('/a=>/tls'));
    assert.equal((await current(good, 'ns')).dtab.show, '/a=>/tls');
    const wrongName = open(f, { commonName: 'other.prx.test', trustCertsBundle: files.ca });
    await assert.rejects(wrongName.put('x', readDtab('/a=>/b')), (e: Error) => e instanceof StorageUnavailableError && /other\.prx\.test|altnames/i.test(e.message));
    const untrusted = open(f, { commonName: 'consul.prx.test' });
    await assert.rejects(untrusted.put('x', readDtab('/a=>/b')), StorageUnavailableError);
    // disableValidation skips the name check only: the chain must still be trusted.
    const noName = open(f, { disableValidation: true, trustCerts: [files.ca] });
    await dtabShown(noName, 'ns', '/a=>/tls');
  });

  it('presents the client certificate when the server asks for one', async () => {
    const f = await serve(true);
    const withCert = open(f, { commonName: 'consul.prx.test', trustCertsBundle: files.ca, clientAuth: { certPath: files.clientCert, keyPath: files.clientKey } });
    await withCert.create('ns', readDtab('/a=>/mtls'));
    await dtabShown(withCert, 'ns', '/a=>/mtls');
    const without = open(f, { commonName: 'consul.prx.test', trustCertsBundle: files.ca });
    await assert.rejects(without.put('x', readDtab('/a=>/b')), StorageUnavailableError);
  });
});
