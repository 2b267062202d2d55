import assert from 'node:assert/strict';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { validate } from '../../../src/config/index.js';
import {
  ForwardedHeader,
  forwardedHeaderConfig,
  randomObfuscatedLabel,
  uriScheme,
  type ForwardedHeaderConfig,
} from '../../../src/protocol/http/headers/forwarded.js';
import type { HeaderMap } from '../../../src/protocol/http/headers/types.js';

const RANDOM_LABEL = /^_[A-Za-z0-9]{6}$/;

function adder(config: unknown, routerLabel = 'http'): ForwardedHeader {
  return new ForwardedHeader(validate(forwardedHeaderConfig, config), { routerLabel });
}

describe('addForwardedHeader config', () => {
  it('defaults both labelers to requestRandom', () => {
    assert.deepEqual(validate(forwardedHeaderConfig, {}), { by: { kind: 'requestRandom' }, for: { kind: 'requestRandom' } });
  });

  it('accepts every labeler kind and requires a static label', () => {
    const cfg: ForwardedHeaderConfig = validate(forwardedHeaderConfig, { by: { kind: 'static', label: 'x' }, for: { kind: 'ip:port' } });
    assert.deepEqual(cfg, { by: { kind: 'static', label: 'x' }, for: { kind: 'ip:port' } });
    for (const kind of ['ip', 'ip:port', 'connectionRandom', 'requestRandom', 'router']) validate(forwardedHeaderConfig, { by: { kind } });
    assert.throws(() => validate(forwardedHeaderConfig, { by: { kind: 'static' } }), /by\.label: required key is missing/);
    assert.throws(() => validate(forwardedHeaderConfig, { for: { kind: 'random' } }), /for\.kind: expected one of/);
    assert.throws(() => validate(forwardedHeaderConfig, { by: { kind: 'ip', label: 'x' } }), /by\.label/);
    assert.throws(() => validate(forwardedHeaderConfig, { via: {} }), /via/);
  });
});

describe('Forwarded values (AddForwardedHeaderTest)', () => {
  it('by=_http;for=8.8.8.8 with the router and ip labelers', () => {
    const conn = adder({ by: { kind: 'router' }, for: { kind: 'ip' } }).forConnection(
      { address: '127.0.0.1', port: 4140 },
      { address: '8.8.8.8', port: 5555 },
    );
    assert.equal(conn.value({}, '/'), 'by=_http;for=8.8.8.8');
  });

  it('by=_cowabunga;for=unknown;host=buoyant.pizza for a static label and a wildcard client', () => {
    const conn = adder({ by: { kind: 'static', label: 'cowabunga' }, for: { kind: 'ip' } }).forConnection(
      { address: '127.0.0.1', port: 4140 },
      { address: '0.0.0.0', port: 0 },
    );
    assert.equal(conn.value({ host: 'buoyant.pizza' }, '/'), 'by=_cowabunga;for=unknown;host=buoyant.pizza');
  });

  it('quotes IPv6 in brackets and ip:port values, and unmaps IPv4-mapped addresses', () => {
    const f = adder({ by: { kind: 'ip:port' }, for: { kind: 'ip' } });
    assert.equal(f.forConnection({ address: '::1', port: 4140 }, { address: '2001:db8:cafe::17', port: 1 }).value({}, '/'), 'by="[::1]:4140";for="[2001:db8:cafe::17]"');
    assert.equal(f.forConnection({ address: '192.0.2.43', port: 8080 }, { address: '::ffff:10.0.0.1', port: 1 }).value({}, '/'), 'by="192.0.2.43:8080";for=10.0.0.1');
    assert.equal(f.forConnection({ address: '::', port: 4140 }, { address: undefined }).value({}, '/'), 'by=unknown;for=unknown');
  });

  it('keeps a static label that already starts with _', () => {
    const conn = adder({ by: { kind: 'static', label: '_edge' }, for: { kind: 'router' } }, 'incoming').forConnection({}, {});
    assert.equal(conn.value({}, '/'), 'by=_edge;for=_incoming');
  });

  it('draws requestRandom labels per request and connectionRandom labels per connection', () => {
    const f = adder({ by: { kind: 'connectionRandom' }, for: { kind: 'requestRandom' } });
    const a = f.forConnection({ address: '127.0.0.1', port: 1 }, { address: '127.0.0.2', port: 2 });
    const b = f.forConnection({ address: '127.0.0.1', port: 1 }, { address: '127.0.0.2', port: 2 });
    const parse = (v: string): [string, string] => {
      const m = /^by=([^;]+);for=([^;]+)$/.exec(v);
      assert.ok(m, v);
      return [m[1] as string, m[2] as string];
    };
    const a1 = parse(a.value({}, '/'));
    const a2 = parse(a.value({}, '/'));
    const b1 = parse(b.value({}, '/'));
    for (const label of [...a1, ...a2, ...b1]) assert.match(label, RANDOM_LABEL);
    assert.equal(a1[0], a2[0]); // same connection, same `by`
    assert.notEqual(a1[0], b1[0]); // another connection, another `by`
    assert.notEqual(a1[1], a2[1]); // every request, a new `for`
  });

  it('labels a wildcard address unknown even for random labelers', () => {
    const conn = adder({}).forConnection({ address: '0.0.0.0' }, { address: '::' });
    assert.equal(conn.value({}, '/'), 'by=unknown;for=unknown');
  });

  it('adds proto from an absolute URI only', () => {
    const conn = adder({ by: { kind: 'router' }, for: { kind: 'router' } }).forConnection({}, {});
    assert.equal(conn.value({ host: 'a' }, 'http://a/b?c'), 'by=_http;for=_http;host=a;proto=http');
    assert.equal(conn.value({}, 'HTTPS://a/'), 'by=_http;for=_http;proto=HTTPS');
    assert.equal(conn.value({}, '/relative'), 'by=_http;for=_http');
    assert.equal(conn.value({}, '*'), 'by=_http;for=_http');
    assert.equal(uriScheme('localhost:8080'), 'localhost'); // authority form reads as a scheme, as in Java
    assert.equal(uriScheme('http://bad host/'), undefined);
    assert.equal(uriScheme('1http://a/'), undefined);
  });

  it('appends one more Forwarded header, keeping earlier ones', () => {
    const conn = adder({ by: { kind: 'router' }, for: { kind: 'ip' } }).forConnection({}, { address: '10.1.1.1' });
    const h: HeaderMap = { forwarded: 'for=192.0.2.60;proto=http;by=203.0.113.43' };
    conn.add(h, '/');
    assert.deepEqual(h['forwarded'], ['for=192.0.2.60;proto=http;by=203.0.113.43', 'by=_http;for=10.1.1.1']);
    conn.add(h, '/');
    assert.equal((h['forwarded']).length, 3);
    const fresh: HeaderMap = {};
    conn.add(fresh, '/');
    assert.equal(fresh['forwarded'], 'by=_http;for=10.1.1.1');
  });

  it('makes obfuscated labels from the random source', () => {
    assert.equal(randomObfuscatedLabel(() => 0), '_000000');
    assert.equal(randomObfuscatedLabel(() => 0.999999), '_zzzzzz');
  });
});

describe('Forwarded on a real connection', () => {
  it('labels the server and client sockets with ip:port', async (t) => {
    const f = adder({ by: { kind: 'ip:port' }, for: { kind: 'ip:port' } });
    let seen: { value: string; local: string; remote: string } | undefined;
    const server = createServer((req, res) => {
      const s = req.socket;
      const conn = f.forConnection({ address: s.localAddress, port: s.localPort }, { address: s.remoteAddress, port: s.remotePort });
      const headers = req.headers as IncomingHttpHeaders & HeaderMap;
      conn.add(headers, req.url ?? '/');
      seen = { value: headers['forwarded'] as string, local: `${s.localAddress}:${s.localPort}`, remote: `${s.remoteAddress}:${s.remotePort}` };
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/x', headers: { host: 'svc.example' } }, (res) => res.resume().on('end', resolve))
        .on('error', reject)
        .end();
    });
    assert.ok(seen);
    assert.equal(seen.local, `127.0.0.1:${port}`);
    assert.equal(seen.value, `by="${seen.local}";for="${seen.remote}";host=svc.example`);
  });
});
