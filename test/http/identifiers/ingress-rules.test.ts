// The io.prx.ingress routing table: which Ingress rule names a request (host, path types,
// precedence, default backends, classes), without any API in between.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readPath } from '../../../src/naming/index.js';
import { IngressTable, hostOnly, servesIngress } from '../../../src/protocol/http/identifiers/ingress-rules.js';
import type { IngressObject, IngressPath } from '../../../src/protocol/orch/types.js';

type PathType = NonNullable<IngressPath['pathType']>;

function backend(service: string, port: string | number) {
  return { service: { name: service, port: typeof port === 'number' ? { number: port } : { name: port } } };
}

function ingress(
  name: string,
  rules: { host?: string; paths: [string | undefined, PathType | undefined, string, string | number][] }[],
  extra: { namespace?: string; annotations?: Record<string, string>; className?: string; defaultBackend?: [string, string | number] } = {},
): IngressObject {
  return {
    metadata: { name, namespace: extra.namespace ?? 'default', ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      ...(extra.className !== undefined ? { ingressClassName: extra.className } : {}),
      ...(extra.defaultBackend ? { defaultBackend: backend(...extra.defaultBackend) } : {}),
      rules: rules.map((r) => ({
        ...(r.host !== undefined ? { host: r.host } : {}),
        http: {
          paths: r.paths.map(([path, pathType, svc, port]) => ({
            ...(path !== undefined ? { path } : {}),
            ...(pathType !== undefined ? { pathType } : {}),
            backend: backend(svc, port),
          })),
        },
      })),
    },
  };
}

function table(ingresses: IngressObject[], opts: { ignoreDefaultBackends?: boolean; ingressClass?: string } = {}): IngressTable {
  return new IngressTable(ingresses, { ingressClass: opts.ingressClass ?? 'prx', ignoreDefaultBackends: opts.ignoreDefaultBackends ?? false, dstPrefix: readPath('/svc') });
}

function named(t: IngressTable, host: string | undefined, path: string): string {
  return t.match(host, path)?.dst.show ?? 'none';
}

describe('io.prx.ingress rules', () => {
  it('Prefix paths match whole segments; a trailing slash on either side is ignored', () => {
    const t = table([ingress('web', [{ paths: [['/foo/bar', 'Prefix', 'bar', 'http'], ['/', 'Prefix', 'root', 80]] }])]);
    assert.equal(named(t, 'x', '/foo/bar'), '/svc/default/http/bar');
    assert.equal(named(t, 'x', '/foo/bar/'), '/svc/default/http/bar');
    assert.equal(named(t, 'x', '/foo/bar/baz'), '/svc/default/http/bar');
    assert.equal(named(t, 'x', '/foo/barbaz'), '/svc/default/80/root');
    assert.equal(named(t, 'x', '/foo'), '/svc/default/80/root');
    const slash = table([ingress('web', [{ paths: [['/foo/', 'Prefix', 'foo', 80]] }])]);
    assert.equal(named(slash, 'x', '/foo'), '/svc/default/80/foo');
    assert.equal(named(slash, 'x', '/foo/x'), '/svc/default/80/foo');
    assert.equal(named(slash, 'x', '/foox'), 'none');
  });

  it('Exact paths match only themselves; Exact beats a Prefix of the same path', () => {
    const t = table([ingress('web', [{ paths: [['/api', 'Prefix', 'prefix', 80], ['/api', 'Exact', 'exact', 80]] }])]);
    assert.equal(named(t, 'x', '/api'), '/svc/default/80/exact');
    assert.equal(named(t, 'x', '/api/'), '/svc/default/80/prefix');
    assert.equal(named(t, 'x', '/api/v1'), '/svc/default/80/prefix');
    const exact = table([ingress('web', [{ paths: [['/api', 'Exact', 'exact', 80]] }])]);
    assert.equal(named(exact, 'x', '/api/'), 'none');
    assert.equal(named(exact, 'x', '/API'), 'none');
  });

  it('ImplementationSpecific (and no pathType) is a plain text prefix, as Linkerd 1 read paths; no path matches all', () => {
    const t = table([ingress('web', [{ paths: [['/foo', 'ImplementationSpecific', 'foo', 80], ['/a.c', undefined, 'regexless', 80], [undefined, undefined, 'all', 80]] }])]);
    assert.equal(named(t, 'x', '/foobar'), '/svc/default/80/foo');
    assert.equal(named(t, 'x', '/a.c/d'), '/svc/default/80/regexless');
    assert.equal(named(t, 'x', '/abc'), '/svc/default/80/all', 'no regex: . is a dot');
    assert.equal(named(t, 'x', '/'), '/svc/default/80/all');
  });

  it('the longest matching path wins, whatever the order of the rules', () => {
    const t = table([
      ingress('a', [{ paths: [['/', 'Prefix', 'root', 80], ['/shop', 'Prefix', 'shop', 80]] }]),
      ingress('b', [{ paths: [['/shop/cart', 'Prefix', 'cart', 80]] }]),
    ]);
    assert.equal(named(t, 'x', '/shop/cart/1'), '/svc/default/80/cart');
    assert.equal(named(t, 'x', '/shop/list'), '/svc/default/80/shop');
    assert.equal(named(t, 'x', '/home'), '/svc/default/80/root');
  });

  it('hosts: exact (any case, any port) beats a one-label *. wildcard, which beats host-less rules', () => {
    const t = table([
      ingress('web', [
        { host: 'Foo.Example.com', paths: [['/', 'Prefix', 'exact', 80]] },
        { host: '*.example.com', paths: [['/', 'Prefix', 'wild', 80]] },
        { paths: [['/', 'Prefix', 'any', 80]] },
      ]),
    ]);
    assert.equal(named(t, 'foo.example.com', '/x'), '/svc/default/80/exact');
    assert.equal(named(t, 'FOO.example.com:8080', '/x'), '/svc/default/80/exact');
    assert.equal(named(t, 'bar.example.com', '/x'), '/svc/default/80/wild');
    assert.equal(named(t, 'baz.bar.example.com', '/x'), '/svc/default/80/any', 'a wildcard covers one label');
    assert.equal(named(t, 'example.com', '/x'), '/svc/default/80/any');
    assert.equal(named(t, undefined, '/x'), '/svc/default/80/any');
  });

  it('a host rule whose paths miss falls through to less specific hosts, then to the default backend', () => {
    const t = table([
      ingress('web', [{ host: 'a.test', paths: [['/api', 'Prefix', 'api', 80]] }, { paths: [['/static', 'Prefix', 'static', 80]] }], { defaultBackend: ['fallback', 'http'] }),
    ]);
    assert.equal(named(t, 'a.test', '/api/x'), '/svc/default/80/api');
    assert.equal(named(t, 'a.test', '/static/x'), '/svc/default/80/static');
    assert.equal(named(t, 'a.test', '/other'), '/svc/default/http/fallback');
    assert.equal(named(t, 'b.test', '/api'), '/svc/default/http/fallback');
    const ignoring = table(
      [ingress('web', [{ host: 'a.test', paths: [['/api', 'Prefix', 'api', 80]] }], { defaultBackend: ['fallback', 'http'] })],
      { ignoreDefaultBackends: true },
    );
    assert.equal(named(ignoring, 'a.test', '/other'), 'none');
    assert.equal(ignoring.defaultBackend, undefined);
  });

  it('the first default backend in namespace/name order serves; names carry each Ingress namespace', () => {
    const t = table([
      ingress('z', [], { namespace: 'b', defaultBackend: ['zz', 80] }),
      ingress('y', [], { namespace: 'a', defaultBackend: ['yy', 'grpc'] }),
      ingress('rules', [{ paths: [['/x', 'Exact', 'x', 9000]] }], { namespace: 'b' }),
    ]);
    assert.equal(named(t, 'h', '/other'), '/svc/a/grpc/yy');
    assert.equal(named(t, 'h', '/x'), '/svc/b/9000/x');
    assert.deepEqual(t.served, ['a/y', 'b/rules', 'b/z']);
  });

  it('classes: the annotation decides when present, else spec.ingressClassName; neither is served', () => {
    const annotated = (v: string) => ({ annotations: { 'kubernetes.io/ingress.class': v } });
    assert.equal(servesIngress(ingress('a', [], annotated('prx')), 'prx'), true);
    assert.equal(servesIngress(ingress('a', [], annotated('nginx')), 'prx'), false);
    assert.equal(servesIngress(ingress('a', [], { className: 'prx' }), 'prx'), true);
    assert.equal(servesIngress(ingress('a', [], { className: 'nginx' }), 'prx'), false);
    assert.equal(servesIngress(ingress('a', [], { ...annotated('prx'), className: 'nginx' }), 'prx'), true);
    assert.equal(servesIngress(ingress('a', [], { ...annotated('nginx'), className: 'prx' }), 'prx'), false);
    assert.equal(servesIngress(ingress('a', []), 'prx'), true);
    const t = table(
      [
        ingress('mine', [{ paths: [['/mine', 'Prefix', 'mine', 80]] }], { className: 'edge' }),
        ingress('theirs', [{ paths: [['/theirs', 'Prefix', 'theirs', 80]] }], annotated('nginx')),
      ],
      { ingressClass: 'edge' },
    );
    assert.equal(named(t, 'h', '/mine'), '/svc/default/80/mine');
    assert.equal(named(t, 'h', '/theirs'), 'none');
  });

  it('backends prx cannot name (a resource backend, no port) are skipped', () => {
    const odd: IngressObject = {
      metadata: { name: 'odd', namespace: 'default' },
      spec: {
        defaultBackend: {},
        rules: [{ http: { paths: [{ path: '/r', pathType: 'Prefix', backend: {} }, { path: '/n', pathType: 'Prefix', backend: { service: { name: 'noport' } } }] } }, { host: 'only.host' }],
      },
    };
    const t = table([odd]);
    assert.equal(named(t, 'h', '/r'), 'none');
    assert.equal(named(t, 'only.host', '/n'), 'none');
    assert.equal(t.defaultBackend, undefined);
  });

  it('hostOnly strips a port and keeps IPv6 literals whole', () => {
    assert.equal(hostOnly('Example.com:80'), 'example.com');
    assert.equal(hostOnly('[::1]:4140'), '[::1]');
    assert.equal(hostOnly('[::1]'), '[::1]');
    assert.equal(hostOnly('::1'), '::1');
    assert.equal(hostOnly('a.b'), 'a.b');
  });
});
