import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readPath } from '../../src/naming/index.js';
import { HeaderTokenIdentifier, IdentificationCache } from '../../src/protocol/http/identifiers/index.js';

const req = (host: string) => ({ method: 'GET', url: '/', httpVersion: '1.1', headers: { host } });

test('identification cache: a repeated value names the same frozen Path; another value another', () => {
  const id = new HeaderTokenIdentifier(readPath('/svc'), 'Host');
  const a = id.identify(req('users'));
  const b = id.identify(req('users'));
  assert.equal(a.kind, 'identified');
  assert.equal(a, b, 'the same identification, not a new Path per request');
  assert.ok(Object.isFrozen(a));
  const c = id.identify(req('orders'));
  assert.equal(c.kind === 'identified' && c.dst.show, '/svc/orders');
  assert.equal(a.kind === 'identified' && a.dst.show, '/svc/users');
});

test('identification cache: bounded (starts over when full) and long values are not kept', () => {
  const cache = new IdentificationCache();
  const id = { kind: 'identified' as const, dst: readPath('/svc/x') };
  cache.remember('first', id);
  for (let i = 0; i < 600; i++) cache.remember(`v${i}`, { kind: 'identified', dst: readPath(`/svc/v${i}`) });
  assert.equal(cache.get('first'), undefined, 'the oldest entries are gone once the cache started over');
  assert.ok(cache.get('v599') !== undefined);
  const long = 'x'.repeat(300);
  assert.equal(cache.remember(long, id), id);
  assert.equal(cache.get(long), undefined);
});

test('identification cache: io.prx.methodAndHost names per method and Host, HTTP/1.0 and odd methods afresh', async () => {
  const { MethodAndHostIdentifier } = await import('../../src/protocol/http/identifiers/index.js');
  const id = new MethodAndHostIdentifier(readPath('/svc'), false);
  const get = (host: string, method = 'GET', httpVersion = '1.1') => id.identify({ method, url: '/x', httpVersion, headers: { host } });
  const a = get('Users');
  assert.equal(a.kind === 'identified' && a.dst.show, '/svc/1.1/GET/users');
  assert.equal(get('Users'), a);
  const post = get('Users', 'POST');
  assert.equal(post.kind === 'identified' && post.dst.show, '/svc/1.1/POST/users');
  assert.notEqual(get('Users', 'BREW'), get('Users', 'BREW'), 'a method outside the standard ones is named afresh');
  const old = get('Users', 'GET', '1.0');
  assert.equal(old.kind === 'identified' && old.dst.show, '/svc/1.0/GET');
  assert.equal(id.identify({ method: 'GET', url: '/', httpVersion: '1.1', headers: {} }).kind, 'unidentified');
});
