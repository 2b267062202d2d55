import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundName, type Path, Var, AddrPending, showTree } from '../../src/naming/index.js';
import { JsonStreamSplitter, parseAddr, parseBoundTree } from '../../src/interpreter/index.js';
import { showAddr } from './helpers.js';

const bound = (id: Path | string, residual: Path) => new BoundName(id, Var.value(AddrPending), residual);
const show = (json: unknown) =>
  showTree(parseBoundTree(json, bound), (b) => `${typeof b.id === 'string' ? 'str:' : ''}${b.idStr}${b.residual.isEmpty ? '' : ' ' + b.residual.show}`);

test('bind documents: leaves, alt, union, neg/fail/empty, delegation-shaped nodes', () => {
  const leaf = (id: string, path = '/') => ({ type: 'leaf', bound: { addr: { type: 'bound', addrs: [], meta: {} }, id, path } });
  assert.equal(show(leaf('/#/io.prx.fs/foo')), '/#/io.prx.fs/foo');
  assert.equal(show(leaf('/#/io.prx.fs/foo', '/a/b')), '/#/io.prx.fs/foo /a/b');
  assert.equal(show({ type: 'leaf', bound: { id: '/$/inet/127.1/80' } }), '/$/inet/127.1/80');
  assert.equal(show({ type: 'alt', alt: [{ type: 'neg' }, leaf('/#/a')] }), '~ | /#/a');
  assert.equal(show({ type: 'union', union: [{ weight: 3, tree: leaf('/#/a') }, { weight: 1, tree: leaf('/#/b') }] }), '3.00*/#/a & /#/b');
  assert.equal(show({ type: 'neg' }), '~');
  assert.equal(show({ type: 'fail' }), '!');
  assert.equal(show({ type: 'empty' }), '$');
  assert.equal(show({ type: 'delegate', path: '/svc/a', delegate: leaf('/#/a') }), '/#/a');
  assert.equal(show({ type: 'transformation', name: 'io.prx.port', tree: leaf('/%/io.prx.port/1/#/a') }), '/%/io.prx.port/1/#/a');
  assert.equal(show(leaf('opaque id')), 'str:opaque id');
});

test('bind documents of the wrong shape are errors naming the document', () => {
  for (const bad of [null, [], 'x', { type: 'nope' }, { type: 'leaf' }, { type: 'leaf', bound: { id: 5 } }, { type: 'alt' },
    { type: 'union', union: [{ tree: { type: 'neg' } }] }, { type: 'leaf', bound: { id: '/a', path: 'rel' } }]) {
    assert.throws(() => parseBoundTree(bad, bound), { code: 'PRX_ERR_RESOLVER_HTTP', message: /^malformed .* from the resolver: / }, JSON.stringify(bad));
  }
  assert.throws(() => parseBoundTree({ type: 'exception', message: 'boom' }, bound), { code: 'PRX_ERR_RESOLVER_HTTP', message: 'boom' });
});

test('addr documents: bound (weights from endpoint_addr_weight), neg, pending, failed', () => {
  const a = parseAddr({
    type: 'bound',
    addrs: [
      { ip: '127.0.0.1', port: 8080, meta: {} },
      { ip: '::1', port: 9090, meta: { endpoint_addr_weight: 2.5, nodeName: 'n1' } },
    ],
    meta: { authority: 'x' },
  });
  assert.equal(showAddr(a), '127.0.0.1:8080*1 ::1:9090*2.5');
  assert.ok(a.kind === 'bound');
  assert.deepEqual(a.addresses[1]?.meta, { nodeName: 'n1' });
  assert.deepEqual(a.meta, { authority: 'x' });
  assert.equal(parseAddr({ type: 'neg' }).kind, 'neg');
  assert.equal(parseAddr({ type: 'pending' }).kind, 'pending');
  assert.equal(showAddr(parseAddr({ type: 'failed', cause: 'no such service' })), 'failed: no such service');
  for (const bad of [{}, { type: 'bound' }, { type: 'bound', addrs: [{ ip: '1.2.3.4' }] }, { type: 'bound', addrs: [{ ip: '1.2.3.4', port: 70000 }] }]) {
    assert.throws(() => parseAddr(bad), { code: 'PRX_ERR_RESOLVER_HTTP' }, JSON.stringify(bad));
  }
});

test('the stream splitter finds documents across chunks and error lines between them', () => {
  const s = new JsonStreamSplitter();
  const items: unknown[] = [];
  const feed = (chunk: string) => items.push(...s.push(chunk));
  feed('{"type":"ne');
  assert.equal(items.length, 0);
  feed('g"}\n{"type":"leaf","bound":{"id":"/a}\\"{","path":"/"}}\n[1,');
  feed('2]\n');
  feed('Invalid path: nope / simple expected');
  assert.equal(items.length, 3, 'the error line is not complete before its newline');
  feed('\n');
  feed('  {"a":1}{"b":2}');
  items.push(...s.end());
  assert.deepEqual(items, [
    { json: { type: 'neg' }, text: '{"type":"neg"}' },
    { json: { type: 'leaf', bound: { id: '/a}"{', path: '/' } }, text: '{"type":"leaf","bound":{"id":"/a}\\"{","path":"/"}}' },
    { json: [1, 2], text: '[1,2]' },
    { error: 'Invalid path: nope / simple expected' },
    { json: { a: 1 }, text: '{"a":1}' },
    { json: { b: 2 }, text: '{"b":2}' },
  ]);
  const t = new JsonStreamSplitter();
  assert.deepEqual(t.push('{"a":'), []);
  assert.deepEqual(t.end(), [{ error: 'truncated JSON from the resolver: {"a":' }]);
  const u = new JsonStreamSplitter();
  assert.deepEqual(u.push('{"a":tru}\n'), [{ error: 'malformed JSON from the resolver: {"a":tru}' }]);
  assert.deepEqual(u.push('stream closed'), []);
  assert.deepEqual(u.end(), [{ error: 'stream closed' }]);
});

test('the stream splitter takes heartbeats (bare newlines) between documents and before an error line as nothing', () => {
  const s = new JsonStreamSplitter();
  assert.deepEqual(s.push('\n'), []);
  assert.deepEqual(s.push('\n\n'), []);
  assert.deepEqual(s.push('{"type":"neg"}\n'), [{ json: { type: 'neg' }, text: '{"type":"neg"}' }]);
  assert.deepEqual(s.push('\n'), []);
  // A heartbeat can arrive in the same read as the next document, or split it from its newline.
  assert.deepEqual(s.push('\n{"type":"pending"}'), [{ json: { type: 'pending' }, text: '{"type":"pending"}' }]);
  assert.deepEqual(s.push('\n\n\n'), []);
  assert.deepEqual(s.push('\nnamer exploded\n'), [{ error: 'namer exploded' }]);
  assert.deepEqual(s.end(), []);
});
