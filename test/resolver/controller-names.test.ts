// The HTTP controller's name views without `watch`: bind, addr, resolve, delegate, bound-names,
// against a namer the test drives and the real in-memory store.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  AddrNeg, BoundName, Path, Pending, Var, address, addrBound, addrFailed, alt, failed, leaf, ok, union, weighted,
} from '../../src/naming/index.js';
import { pickBound, stripTransformerPrefix } from '../../src/resolver/naming.js';
import { type ControllerFixture, request, startController } from './helpers.js';

const NS = { default: '/svc => /#/test', other: '/svc => /$/inet/10.0.0.9/80' };
const BOUND_FOO = '{"type":"bound","addrs":[{"ip":"127.0.0.1","port":1,"meta":{}}],"meta":{}}';
const LEAF_FOO = `{"type":"leaf","bound":{"addr":${BOUND_FOO},"id":"/#/test/foo","path":"/"}}`;

let fx: ControllerFixture;
before(async () => {
  fx = await startController(NS, { answerTimeoutMs: 300 });
});
after(() => fx.close());
beforeEach(() => {
  fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
});

const get = (path: string, params: Record<string, string> = {}) =>
  request(`${fx.url}${path}?${new URLSearchParams(params).toString()}`);

describe('GET /api/1/bind/<ns>', () => {
  test('a bound leaf with its address, no path fields, newline-terminated JSON', async () => {
    const r = await get('/api/1/bind/default', { path: '/svc/foo' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.text, `${LEAF_FOO}\n`);
  });

  test('the residual path is the bound path; Neg when nothing binds', async () => {
    let r = await get('/api/1/bind/default', { path: '/svc/foo/bar/baz' });
    assert.equal(r.text, `{"type":"leaf","bound":{"addr":${BOUND_FOO},"id":"/#/test/foo","path":"/bar/baz"}}\n`);
    r = await get('/api/1/bind/default', { path: '/svc/missing' });
    assert.equal(r.text, '{"type":"neg"}\n');
  });

  test('the dtab parameter is appended to the namespace dtab (its entries win)', async () => {
    const r = await get('/api/1/bind/other', { path: '/svc/foo', dtab: '/svc=>/#/test' });
    assert.equal(r.text, `${LEAF_FOO}\n`);
    const own = await get('/api/1/bind/other', { path: '/svc/foo' });
    assert.equal(
      own.text,
      '{"type":"leaf","bound":{"addr":{"type":"bound","addrs":[{"ip":"10.0.0.9","port":80,"meta":{}}],"meta":{}},"id":"/$/inet/10.0.0.9/80","path":"/foo"}}\n',
    );
  });

  test('an absent namespace binds through the namers alone', async () => {
    const r = await get('/api/1/bind/nowhere', { path: '/#/test/foo' });
    assert.equal(r.text, `${LEAF_FOO}\n`);
  });

  test('alt and union trees, with weights, and fail/empty leaves', async () => {
    fx.namer.bind('bar', addrBound([address('127.0.0.2', 2, 3)]));
    const r = await get('/api/1/bind/default', { path: '/x', dtab: '/x=>/#/test/foo & 2*/#/test/bar;/y=>/$/nil' });
    assert.deepEqual(JSON.parse(r.text), {
      type: 'union',
      union: [
        {
          weight: 1,
          tree: {
            type: 'leaf',
            bound: {
              addr: { type: 'bound', addrs: [{ ip: '127.0.0.1', port: 1, meta: {} }], meta: { namer_nametree_weight: 1 } },
              id: '/#/test/foo',
              path: '/',
            },
          },
        },
        {
          weight: 2,
          tree: {
            type: 'leaf',
            bound: {
              // A weight other than 1 shows as Linkerd's endpoint_addr_weight; the union weight as
              // Finagle's nametree weight.
              addr: { type: 'bound', addrs: [{ ip: '127.0.0.2', port: 2, meta: { endpoint_addr_weight: 3 } }], meta: { namer_nametree_weight: 2 } },
              id: '/#/test/bar',
              path: '/',
            },
          },
        },
      ],
    });
    const a = await get('/api/1/bind/default', { path: '/x', dtab: '/x=>/$/fail' });
    assert.equal(a.text, '{"type":"fail"}\n');
    const e = await get('/api/1/bind/default', { path: '/x', dtab: '/x=>/$/nil' });
    assert.equal(e.text, '{"type":"empty"}\n');
  });

  test('invalid path or dtab → 400 with the parse message', async () => {
    let r = await get('/api/1/bind/default', { path: 'invalid' });
    assert.deepEqual([r.status, r.text], [400, "Invalid path: invalid / '/' expected but 'i' found at '[i]nvalid'\n"]);
    r = await request(`${fx.url}/api/1/bind/default`);
    assert.deepEqual([r.status, r.text], [400, "Invalid path:  / '/' expected but end of input found at '[]'\n"]);
    r = await get('/api/1/bind/default', { path: '/svc/foo', dtab: 'nope' });
    assert.deepEqual([r.status, r.text], [400, "Invalid dtab: '/' expected but 'n' found at '[n]ope'\n"]);
  });

  test('a namer failure → 500 with its message; an unanswered bind → 503 after the answer timeout', async () => {
    fx.namer.set('broken', failed(new Error('backend down')));
    let r = await get('/api/1/bind/default', { path: '/svc/broken' });
    assert.deepEqual([r.status, r.text], [500, 'backend down\n']);
    fx.namer.set('slow', Pending);
    r = await get('/api/1/bind/default', { path: '/svc/slow' });
    assert.deepEqual([r.status, r.text], [503, 'Request timed out.\n']);
    assert.equal(fx.namer.observers, 0);
  });

  test('a leaf whose address is pending is shown once it is known', async () => {
    const addr = fx.namer.bind('later', { kind: 'pending' });
    const pending = get('/api/1/bind/default', { path: '/svc/later' });
    setTimeout(() => addr.update(addrBound([address('127.0.0.3', 3)])), 50);
    const r = await pending;
    const tree = JSON.parse(r.text) as { bound: { addr: { addrs: { ip: string }[] } } };
    assert.equal(tree.bound.addr.addrs[0]?.ip, '127.0.0.3');
  });

  test('the namespace must be in the path; other methods → 405', async () => {
    assert.equal((await get('/api/1/bind/', { path: '/svc/foo' })).status, 404);
    assert.equal((await get('/api/1/bind', { path: '/svc/foo' })).status, 404);
    const r = await request(`${fx.url}/api/1/bind/default?path=/svc/foo`, { method: 'DELETE' });
    assert.equal(r.status, 405);
  });
});

describe('GET /api/1/addr/<ns>', () => {
  test('the address set of a concrete name; Neg for an unknown one', async () => {
    let r = await get('/api/1/addr/default', { path: '/#/test/foo' });
    assert.deepEqual([r.status, r.headers.get('content-type'), r.text], [200, 'application/json', `${BOUND_FOO}\n`]);
    r = await get('/api/1/addr/default', { path: '/#/test/nope' });
    assert.equal(r.text, '{"type":"neg"}\n');
    r = await get('/api/1/addr/default', { path: '/$/inet/10.1.2.3/99' });
    assert.equal(r.text, '{"type":"bound","addrs":[{"ip":"10.1.2.3","port":99,"meta":{}}],"meta":{}}\n');
  });

  test('leading transformer segments are stripped', async () => {
    const r = await get('/api/1/addr/default', { path: '/%/io.prx.port/4141/#/test/foo' });
    assert.equal(r.text, `${BOUND_FOO}\n`);
  });

  test('a failed address is shown; Fail, trees of several names and unanswered names are errors', async () => {
    fx.namer.bind('bad', addrFailed(new Error('no endpoints file')));
    let r = await get('/api/1/addr/default', { path: '/#/test/bad' });
    assert.equal(r.text, '{"type":"failed","cause":"no endpoints file"}\n');
    // (A bound Alt collapses to its first usable branch; a Union keeps its branches.)
    fx.namer.set('both', ok(union(weighted(1, leaf(Path.of('#', 'test', 'foo'))), weighted(1, leaf(Path.of('#', 'test', 'bad'))))));
    r = await get('/api/1/addr/default', { path: '/#/test/both' });
    assert.deepEqual([r.status, r.text], [500, '/#/test/both is not a concrete bound id\n']);
    r = await get('/api/1/addr/default', { path: '/$/fail' });
    assert.deepEqual([r.status, r.text], [500, 'name tree failed\n']);
    fx.namer.bind('waiting', { kind: 'pending' });
    r = await get('/api/1/addr/default', { path: '/#/test/waiting' });
    assert.deepEqual([r.status, r.text], [503, 'Request timed out.\n']);
  });

  test('invalid path → 400', async () => {
    const r = await get('/api/1/addr/default', { path: 'invalid' });
    assert.deepEqual([r.status, r.text], [400, "Invalid path: invalid / '/' expected but 'i' found at '[i]nvalid'\n"]);
  });
});

describe('GET /api/1/resolve/<ns>', () => {
  test('bind then the address of the first usable name; Neg when none', async () => {
    let r = await get('/api/1/resolve/default', { path: '/svc/foo' });
    assert.equal(r.text, `${BOUND_FOO}\n`);
    r = await get('/api/1/resolve/default', { path: '/svc/x', dtab: '/svc/x=>/#/test/none | /#/test/foo' });
    assert.equal(r.text, `${BOUND_FOO}\n`);
    r = await get('/api/1/resolve/default', { path: '/svc/none' });
    assert.equal(r.text, '{"type":"neg"}\n');
    r = await get('/api/1/resolve/default', { path: 'x' });
    assert.equal(r.status, 400);
  });
});

describe('GET /api/1/delegate[/<ns>]', () => {
  test('the delegation tree through the stored dtab plus the dtab parameter', async () => {
    const r = await get('/api/1/delegate/default', { path: '/svc/foo', dtab: '/svc/bar=>/$/fail' });
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.text), {
      type: 'delegate',
      path: '/svc/foo',
      delegate: {
        type: 'leaf',
        path: '/#/test/foo',
        dentry: { prefix: '/svc', dst: '/#/test' },
        bound: { addr: JSON.parse(BOUND_FOO) as unknown, id: '/#/test/foo', path: '/' },
      },
    });
  });

  test('without a namespace in the path it takes ?namespace= like the delegator', async () => {
    const r = await get('/api/1/delegate', { namespace: 'default', path: '/svc/nope' });
    assert.deepEqual(JSON.parse(r.text), {
      type: 'delegate',
      path: '/svc/nope',
      delegate: { type: 'neg', path: '/#/test/nope', dentry: { prefix: '/svc', dst: '/#/test' } },
    });
    const missing = await get('/api/1/delegate', { path: '/svc/nope' });
    assert.deepEqual([missing.status, missing.text], [400, 'Malformed delegation request: the namespace parameter is required\n']);
  });

  test('namer errors are exception nodes; bad input → 400', async () => {
    fx.namer.set('boom', failed(new Error('kaboom')));
    const r = await get('/api/1/delegate/default', { path: '/svc/boom' });
    const tree = JSON.parse(r.text) as { delegate: { type: string; message: string } };
    assert.deepEqual([tree.delegate.type, tree.delegate.message], ['exception', 'kaboom']);
    assert.equal((await get('/api/1/delegate/default', { path: 'x' })).status, 400);
    assert.equal((await get('/api/1/delegate/default', { path: '/x', dtab: '/x=>' })).status, 400);
  });
});

describe('GET /api/1/bound-names', () => {
  test('the names the enumerating namers serve, as JSON', async () => {
    fx.namer.names.update(ok([Path.of('#', 'test', 'foo'), Path.of('#', 'test', 'bar')]));
    const r = await get('/api/1/bound-names');
    assert.deepEqual([r.status, r.headers.get('content-type'), r.text], [200, 'application/json', '["/#/test/bar","/#/test/foo"]\n']);
    assert.equal((await get('/api/1/bound-names/x')).status, 404);
  });
});

test('unknown URIs → 404', async () => {
  for (const path of ['/', '/api/2/dtabs', '/api/1/', '/api/1/nothing/default']) {
    const r = await request(`${fx.url}${path}`);
    assert.equal(r.status, 404, path);
  }
});

test('requests are counted by status', async () => {
  await get('/api/1/bound-names');
  const requests = fx.registry.resolve(['io.prx.httpController', 'requests'])?.metric;
  assert.ok(requests && requests.kind === 'counter' && requests.value > 0);
});

describe('naming helpers', () => {
  test('stripTransformerPrefix drops everything before the first # or $', () => {
    assert.equal(stripTransformerPrefix(Path.of('%', 'io.prx.port', '4141', '#', 'fs', 'x')).show, '/#/fs/x');
    assert.equal(stripTransformerPrefix(Path.of('%', 'a', '$', 'inet', '1.2.3.4', '80')).show, '/$/inet/1.2.3.4/80');
    assert.equal(stripTransformerPrefix(Path.of('#', 'fs', 'x')).show, '/#/fs/x');
    assert.equal(stripTransformerPrefix(Path.of('%', 'only')).show, '/%/only');
  });

  test('pickBound: Alt takes the first branch that yields a name; Union picks by weight', () => {
    const b = (n: string): BoundName => new BoundName(Path.of('#', n), Var.value(AddrNeg));
    assert.equal(pickBound(alt({ type: 'neg' }, leaf(b('a')), leaf(b('b'))))?.idStr, '/#/a');
    const u = union(weighted(1, leaf(b('a'))), weighted(3, leaf(b('b'))));
    assert.equal(pickBound(u, () => 0.2)?.idStr, '/#/a');
    assert.equal(pickBound(u, () => 0.3)?.idStr, '/#/b');
    assert.equal(pickBound({ type: 'fail' }), undefined);
    assert.equal(pickBound(leaf(new BoundName('string-id', Var.value(AddrNeg)))), undefined);
  });
});
