// Client TLS through the router to real https backends: plain commonName + caCertPath (also with
// a static prefix's {captures}), io.prx.noValidation, and io.prx.boundPath with its `strict`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { request } from 'undici';
import { makeCerts, startBackend, startRouter, tempFsNamer, type Backend, type RouterUnderTest, type TempFsNamer, type TestCerts } from './harness.js';

interface CertPair {
  readonly cert: string;
  readonly key: string;
}

/** A server certificate for `cn` (CN and DNS SAN) signed by the harness's test CA. */
function signedBy(certs: TestCerts, cn: string): CertPair {
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: certs.dir, stdio: 'pipe' });
  };
  writeFileSync(join(certs.dir, `${cn}.ext`), `subjectAltName=DNS:${cn}\n`);
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${cn}`, '-keyout', `${cn}.key`, '-out', `${cn}.csr`);
  ssl('x509', '-req', '-in', `${cn}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${cn}.ext`, '-out', `${cn}.crt`);
  return { cert: join(certs.dir, `${cn}.crt`), key: join(certs.dir, `${cn}.key`) };
}

/** A self-signed certificate for `cn`: no CA vouches for it. */
function selfSigned(certs: TestCerts, cn: string): CertPair {
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${cn}`, '-addext', `subjectAltName=DNS:${cn}`, '-keyout', `${cn}.key`, '-out', `${cn}.crt`],
    { cwd: certs.dir, stdio: 'pipe' },
  );
  return { cert: join(certs.dir, `${cn}.crt`), key: join(certs.dir, `${cn}.key`) };
}

interface TlsBackend {
  readonly port: number;
  /** Requests served, each with whether it came over TLS and the SNI name the client sent. */
  readonly seen: { encrypted: boolean; servername: string | false }[];
  close(): Promise<void>;
}

/** A real https backend on 127.0.0.1 answering 200 with its name. */
async function startTlsBackend(name: string, pair: CertPair): Promise<TlsBackend> {
  const seen: TlsBackend['seen'] = [];
  const server: Server = createServer({ cert: readFileSync(pair.cert), key: readFileSync(pair.key) }, (req, res) => {
    const sock = req.socket as TLSSocket;
    seen.push({ encrypted: sock.encrypted, servername: sock.servername ?? false });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(name);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface Reply {
  readonly status: number;
  readonly body: string;
  readonly err: string | undefined;
}

async function get(rt: RouterUnderTest, host: string): Promise<Reply> {
  const r = await request(`${rt.url}/`, { headers: { host } });
  const err = r.headers['prx-err'];
  return { status: r.statusCode, body: await r.body.text(), err: typeof err === 'string' ? decodeURIComponent(err.replaceAll('+', ' ')) : undefined };
}

/** A proxied failure: a 502 carrying `prx-err`, whose text must match `why`. */
function assertFailed(r: Reply, why: RegExp): void {
  assert.equal(r.status, 502, `expected a 502, got ${r.status}: ${r.body}`);
  assert.ok(r.err !== undefined, 'prx-err is set');
  assert.match(r.err, why);
}

/** The routers' warnings (JSON lines), which say why a handshake failed. */
const warnings: string[] = [];
const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });

/**
 * A failed handshake: a connection failure in Linkerd's words (the request was requeued until it
 * could not be), and a warning whose reason matches `why`.
 */
function assertTlsFailed(r: Reply, why: RegExp): void {
  assertFailed(r, /^Unable to establish connection to 127\.0\.0\.1:\d+\./);
  const seen = warnings.splice(0);
  assert.ok(
    seen.some((l) => l.includes('TLS handshake with endpoint failed') && why.test(l)),
    `a warning matching ${String(why)} among ${JSON.stringify(seen)}`,
  );
}

let certs: TestCerts;
let backendA: TlsBackend; // CA-signed, CN a.test
let backendB: TlsBackend; // CA-signed, CN b.test
let loner: TlsBackend; // self-signed, CN loner.test
let lonerCa: string; // loner's certificate: a CA file that does not vouch for a.test or b.test
let plain: Backend;
let fs: TempFsNamer;

before(async () => {
  certs = makeCerts();
  backendA = await startTlsBackend('A', signedBy(certs, 'a.test'));
  backendB = await startTlsBackend('B', signedBy(certs, 'b.test'));
  const lonerPair = selfSigned(certs, 'loner.test');
  lonerCa = lonerPair.cert;
  loner = await startTlsBackend('loner', lonerPair);
  plain = await startBackend('plain');
  fs = tempFsNamer({
    a: `127.0.0.1 ${backendA.port}\n`,
    b: `127.0.0.1 ${backendB.port}\n`,
    // A name whose address serves b.test's certificate: boundPath must expect a.test there.
    mislabelled: `127.0.0.1 ${backendB.port}\n`,
    // One address with the expected certificate (a.test) and one without.
    mixed: `127.0.0.1 ${backendA.port}\n127.0.0.1 ${backendB.port}\n`,
  });
});

after(async () => {
  await Promise.all([backendA.close(), backendB.close(), loner.close(), plain.close()]);
  fs.close();
  rmSync(certs.dir, { recursive: true, force: true });
});

/** A router whose /svc/<x> goes to /#/io.prx.fs/<x>, with `client` as given. */
function fsRouter(client: Record<string, unknown>): Promise<RouterUnderTest> {
  return startRouter({ dtab: '/svc=>/#/io.prx.fs', client }, { namers: [fs.mounted], log });
}

async function withRouter(rt: Promise<RouterUnderTest>, body: (rt: RouterUnderTest) => Promise<void>): Promise<void> {
  const r = await rt;
  warnings.length = 0;
  try {
    await body(r);
  } finally {
    await r.close();
  }
}

describe('client tls: commonName + caCertPath', () => {
  it('reaches the backend whose certificate names commonName and chains to the CA', async () => {
    const before = backendA.seen.length;
    await withRouter(fsRouter({ tls: { commonName: 'a.test', caCertPath: certs.caCert } }), async (rt) => {
      const r = await get(rt, 'a');
      assert.equal(r.status, 200);
      assert.equal(r.body, 'A');
    });
    assert.deepEqual(backendA.seen.slice(before), [{ encrypted: true, servername: 'a.test' }]);
  });

  it('fails when the certificate does not name commonName', async () => {
    const before = backendB.seen.length;
    await withRouter(fsRouter({ tls: { commonName: 'a.test', caCertPath: certs.caCert } }), async (rt) => {
      assertTlsFailed(await get(rt, 'b'), /a\.test/);
    });
    assert.equal(backendB.seen.length, before, 'no request reached the backend');
  });

  it('fails when caCertPath does not hold the CA that signed the certificate', async () => {
    const before = backendA.seen.length;
    await withRouter(fsRouter({ tls: { commonName: 'a.test', caCertPath: lonerCa } }), async (rt) => {
      assertTlsFailed(await get(rt, 'a'), /certificate/i);
    });
    assert.equal(backendA.seen.length, before);
  });

  it('fails without caCertPath: the system roots do not vouch for the test CA', async () => {
    await withRouter(fsRouter({ tls: { commonName: 'a.test' } }), async (rt) => {
      assertTlsFailed(await get(rt, 'a'), /certificate/i);
    });
  });

  it('substitutes a static prefix\'s {captures} into commonName, per client', async () => {
    const client = { kind: 'io.prx.static', configs: [{ prefix: '/#/io.prx.fs/{svc}', tls: { commonName: '{svc}.test', caCertPath: certs.caCert } }] };
    await withRouter(fsRouter(client), async (rt) => {
      assert.deepEqual([(await get(rt, 'a')).body, (await get(rt, 'b')).body], ['A', 'B']);
      // The name says b.test's address belongs to "mislabelled": mislabelled.test is not on its certificate.
      assertTlsFailed(await get(rt, 'mislabelled'), /mislabelled\.test/);
    });
  });

  it('without commonName, the certificate must name the request\'s Host', async () => {
    const before = backendA.seen.length;
    await withRouter(startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backendA.port}`, client: { tls: { caCertPath: certs.caCert } } }, { log }), async (rt) => {
      const r = await get(rt, 'a.test');
      assert.deepEqual([r.status, r.body], [200, 'A']);
      assertTlsFailed(await get(rt, 'b.test'), /b\.test/);
    });
    assert.deepEqual(backendA.seen.slice(before), [{ encrypted: true, servername: 'a.test' }]);
  });

  it('a handshake that fails verification is requeued on another endpoint: the request never went out', async () => {
    const a0 = backendA.seen.length;
    const b0 = backendB.seen.length;
    await withRouter(fsRouter({ tls: { commonName: 'a.test', caCertPath: certs.caCert }, loadBalancer: { kind: 'roundRobin' } }), async (rt) => {
      const replies = [];
      for (let i = 0; i < 6; i++) replies.push(await get(rt, 'mixed'));
      assert.deepEqual(
        replies.map((r) => `${r.status} ${r.body}`),
        Array<string>(6).fill('200 A'),
      );
      const client = `rt/http/client/#/io.prx.fs/mixed`;
      assert.ok((rt.metric(`${client}/retries/requeues`) ?? 0) >= 1, 'requeued away from the endpoint whose certificate failed');
    });
    assert.equal(backendA.seen.length - a0, 6);
    assert.equal(backendB.seen.length, b0, 'no request reached the endpoint that failed verification');
  });

  it('a plaintext backend behind a TLS client fails instead of being spoken to in clear', async () => {
    const before = plain.requests.length;
    const rt = startRouter({ dtab: `/svc/p=>/$/inet/127.0.0.1/${plain.port}`, client: { tls: { commonName: 'a.test', caCertPath: certs.caCert } } }, { log });
    await withRouter(rt, async (r) => {
      assertTlsFailed(await get(r, 'p'), /wrong version number/i);
    });
    assert.equal(plain.requests.length, before, 'the plaintext backend saw no request');
  });
});

describe('client tls: io.prx.noValidation', () => {
  it('accepts a self-signed certificate that names nobody in particular', async () => {
    const before = loner.seen.length;
    await withRouter(startRouter({ dtab: `/svc/l=>/$/inet/127.0.0.1/${loner.port}`, client: { tls: { kind: 'io.prx.noValidation' } } }, { log }), async (rt) => {
      const r = await get(rt, 'l');
      assert.equal(r.status, 200);
      assert.equal(r.body, 'loner');
    });
    assert.deepEqual(loner.seen.slice(before).map((s) => s.encrypted), [true]);
  });

  it('the same backend fails under validation (the control for the case above)', async () => {
    await withRouter(startRouter({ dtab: `/svc/l=>/$/inet/127.0.0.1/${loner.port}`, client: { tls: { commonName: 'loner.test', caCertPath: certs.caCert } } }, { log }), async (rt) => {
      assertTlsFailed(await get(rt, 'l'), /certificate/i);
    });
  });
});

describe('client tls: io.prx.boundPath', () => {
  const names = [{ prefix: '/#/io.prx.fs/{svc}', commonNamePattern: '{svc}.test' }];

  /** /svc/<x> by the fs namer, except /svc/p which goes straight to the plaintext backend. */
  function boundPathRouter(tls: Record<string, unknown>): Promise<RouterUnderTest> {
    return startRouter(
      { dtab: `/svc=>/#/io.prx.fs; /svc/p=>/$/inet/127.0.0.1/${plain.port}`, client: { tls: { kind: 'io.prx.boundPath', caCertPath: certs.caCert, ...tls } } },
      { namers: [fs.mounted], log },
    );
  }

  it('expects the name its prefix captures make of each bound id', async () => {
    const a0 = backendA.seen.length;
    const b0 = backendB.seen.length;
    await withRouter(boundPathRouter({ names }), async (rt) => {
      const [ra, rb] = [await get(rt, 'a'), await get(rt, 'b')];
      assert.deepEqual([ra.status, ra.body, rb.status, rb.body], [200, 'A', 200, 'B']);
    });
    assert.deepEqual(backendA.seen.slice(a0), [{ encrypted: true, servername: 'a.test' }]);
    assert.deepEqual(backendB.seen.slice(b0), [{ encrypted: true, servername: 'b.test' }]);
  });

  it('fails when the bound address serves another name\'s certificate', async () => {
    await withRouter(boundPathRouter({ names }), async (rt) => {
      assertTlsFailed(await get(rt, 'mislabelled'), /mislabelled\.test/);
    });
  });

  it('the first matching names entry wins', async () => {
    const first = [{ prefix: '/#/io.prx.fs/b', commonNamePattern: 'b.test' }, ...names];
    await withRouter(boundPathRouter({ names: first }), async (rt) => {
      assert.equal((await get(rt, 'mislabelled')).status, 502);
      assert.equal((await get(rt, 'b')).body, 'B');
    });
    const firstWrong = [{ prefix: '/#/io.prx.fs/b', commonNamePattern: 'a.test' }, ...names];
    await withRouter(boundPathRouter({ names: firstWrong }), async (rt) => {
      assertTlsFailed(await get(rt, 'b'), /a\.test/);
    });
  });

  it('strict (the default): a bound id no prefix matches gets no client, so requests to it fail', async () => {
    const before = plain.requests.length;
    await withRouter(boundPathRouter({ names }), async (rt) => {
      const r = await get(rt, 'p');
      assertFailed(r, new RegExp(`no names prefix matches /\\$/inet/127\\.0\\.0\\.1/${plain.port}`));
      // Every request fails the same way (no half-built client is left behind), and others still work.
      assertFailed(await get(rt, 'p'), /no names prefix matches/);
      assert.equal((await get(rt, 'a')).body, 'A');
    });
    await withRouter(boundPathRouter({ names, strict: true }), async (rt) => {
      assertFailed(await get(rt, 'p'), /no names prefix matches/);
    });
    assert.equal(plain.requests.length, before, 'the plaintext backend saw no request');
  });

  it('strict: false: a bound id no prefix matches is spoken to in plaintext', async () => {
    const before = plain.requests.length;
    await withRouter(boundPathRouter({ names, strict: false }), async (rt) => {
      const r = await get(rt, 'p');
      assert.equal(r.status, 200);
      assert.equal(r.body, 'plain');
      // Matching ids keep their TLS and name checks.
      assert.equal((await get(rt, 'a')).body, 'A');
      assertTlsFailed(await get(rt, 'mislabelled'), /mislabelled\.test/);
    });
    assert.equal(plain.requests.length, before + 1);
  });

  it('rejects a non-boolean strict in the config', async () => {
    await assert.rejects(boundPathRouter({ names, strict: 'no' }), /strict/);
  });
});
