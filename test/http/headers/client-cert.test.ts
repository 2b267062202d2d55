import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, createServer, type PeerCertificate } from 'node:tls';
import {
  applyClientCertHeader,
  certificateIdentity,
  clientCertHeaderValue,
} from '../../../src/protocol/http/headers/client-cert.js';
import { DerError } from '../../../src/protocol/http/headers/der.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

interface Generated {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly der: Buffer;
  /** OpenSSL's SHA-256 fingerprint, colons removed: an independent oracle for the hash. */
  readonly fingerprint: string;
}

let dir: string;

/** A self-signed P-256 certificate made by the openssl CLI. */
function generate(name: string, subject: string, extra: string[] = []): Generated {
  const keyPath = join(dir, `${name}.key`);
  const certPath = join(dir, `${name}.pem`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '1', '-subj', subject, ...extra],
    { stdio: 'pipe' },
  );
  const out = execFileSync('openssl', ['x509', '-in', certPath, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' });
  const fingerprint = (out.trim().split('=')[1] ?? '').replaceAll(':', '');
  const cert = readFileSync(certPath);
  return { key: readFileSync(keyPath), cert, der: new X509Certificate(cert).raw, fingerprint };
}

let full: Generated;
let padded: Generated;
let bare: Generated;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'prx-xfcc-'));
  full = generate('full', '/C=US/O=Acme, Inc./OU=a\\+b=c;d<e>"q"/emailAddress=ops@example.com/CN=client one+UID=u1', [
    '-multivalue-rdn',
    '-addext',
    'subjectAltName=DNS:a.example,URI:spiffe://example.org/ns/x,IP:127.0.0.1,DNS:b.example,email:x@y.z',
  ]);
  padded = generate('padded', '/CN= #lead and trail  /O=\\/slash');
  bare = generate('bare', '/CN=bare');
});

after(() => rmSync(dir, { recursive: true, force: true }));

describe('x-forwarded-client-cert value', () => {
  it('is Hash;SAN/DNS in certificate order;Subject in Java RFC 2253 form', () => {
    assert.match(full.fingerprint, /^[0-9A-F]{64}$/);
    assert.equal(
      clientCertHeaderValue(full.der),
      `Hash=${full.fingerprint};DNS=a.example;SAN=spiffe://example.org/ns/x;DNS=b.example;` +
        // DER sorts the members of a multi-valued RDN by encoding; Java prints them in that order.
        'Subject="UID=u1+CN=client one,1.2.840.113549.1.9.1=#160f6f7073406578616d706c652e636f6d,' +
        'OU=a\\+b\\=c\\;d\\<e\\>\\"q\\",O=Acme\\, Inc.,C=US"',
    );
  });

  it('escapes leading and trailing spaces and every # as Java does', () => {
    assert.equal(certificateIdentity(padded.der).subject, 'O=/slash,CN=\\ \\#lead and trail\\ \\ ');
  });

  it('agrees with openssl on a plain subject and has no SAN entries without the extension', () => {
    const openssl = execFileSync('openssl', ['x509', '-in', join(dir, 'bare.pem'), '-noout', '-subject', '-nameopt', 'RFC2253'], { encoding: 'utf8' });
    assert.equal(openssl.trim(), 'subject=CN=bare');
    assert.equal(clientCertHeaderValue(bare.der), `Hash=${bare.fingerprint};Subject="CN=bare"`);
    assert.deepEqual(certificateIdentity(bare.der).altNames, []);
  });

  it('refuses bytes that are not a certificate', () => {
    assert.throws(() => certificateIdentity(Buffer.from([0x30, 0x05, 0x02, 0x01])), DerError);
    assert.throws(() => certificateIdentity(Buffer.from('not der')), DerError);
  });
});

describe('applyClientCertHeader', () => {
  it('removes a client-sent header when forwarding is off or there is no certificate', () => {
    for (const [cert, enabled] of [[{ raw: full.der }, false], [undefined, true], [null, true], [{}, true]] as const) {
      const h: HeaderMap = { 'x-forwarded-client-cert': 'Hash=forged', host: 'a' };
      applyClientCertHeader(h, cert, enabled);
      assert.deepEqual(h, { host: 'a' });
    }
  });

  it('sets the header from the certificate a real TLS client presented', async () => {
    const server = createServer({ key: bare.key, cert: bare.cert, requestCert: true, rejectUnauthorized: false });
    const peer = new Promise<PeerCertificate>((resolve) =>
      server.on('secureConnection', (socket) => {
        resolve(socket.getPeerCertificate());
        socket.end();
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = connect({ host: '127.0.0.1', port, key: full.key, cert: full.cert, rejectUnauthorized: false });
    client.on('error', () => {});
    try {
      const cert = await peer;
      const h: HeaderMap = { 'x-forwarded-client-cert': 'Hash=forged' };
      applyClientCertHeader(h, cert, true);
      assert.equal(h['x-forwarded-client-cert'], clientCertHeaderValue(full.der));
      assert.match(h['x-forwarded-client-cert'], new RegExp(`^Hash=${full.fingerprint};DNS=a\\.example;SAN=spiffe://`));
      // The same certificate object again: same value (served from the per-certificate cache).
      const again: HeaderMap = {};
      applyClientCertHeader(again, cert, true);
      assert.equal(again['x-forwarded-client-cert'], h['x-forwarded-client-cert']);
    } finally {
      client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
