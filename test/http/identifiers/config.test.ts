// Identifier configuration: kinds, defaults and errors through the config module, and Linkerd's
// lazy composition of identifier lists.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, kindSlot, lookupKind, validate } from '../../../src/config/index.js';
import { readPath } from '../../../src/naming/index.js';
import {
  type HttpIdentifier,
  type Identification,
  type IdentifierContext,
  type IdentifyRequest,
  composeIdentifiers,
  identifierFromConfig,
} from '../../../src/protocol/http/identifiers/index.js';

const ctx: IdentifierContext = { dstPrefix: readPath('/svc'), routerLabel: 'http' };
const req = (url: string, headers: IdentifyRequest['headers'] = {}): IdentifyRequest => ({ method: 'GET', url, httpVersion: '1.1', headers });
const name = (r: Identification): string => (r.kind === 'identified' ? r.dst.show : r.kind === 'redirect' ? `redirect: ${r.location}` : `unidentified: ${r.reason}`);

function configError(f: () => unknown): ConfigError {
  try {
    f();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('identifier kinds in the config registry', () => {
  it('registers the http kinds, the orchestrator ones included', () => {
    for (const kind of ['io.prx.methodAndHost', 'io.prx.path', 'io.prx.header', 'io.prx.header.token', 'io.prx.static', 'io.prx.orch.meshctl', 'io.prx.ingress']) {
      assert.ok(lookupKind('identifier', kind), kind);
    }
  });

  it('fills the defaults', () => {
    const slot = kindSlot('identifier');
    assert.deepEqual(validate(slot, { kind: 'io.prx.path' }), { kind: 'io.prx.path', segments: 1, consume: false });
    assert.deepEqual(validate(slot, { kind: 'io.prx.methodAndHost' }), { kind: 'io.prx.methodAndHost', httpUriInDst: false });
    assert.deepEqual(validate(slot, { kind: 'io.prx.header' }), { kind: 'io.prx.header', header: 'prx-name' });
    assert.deepEqual(validate(slot, { kind: 'io.prx.header.token' }), { kind: 'io.prx.header.token', header: 'Host' });
    assert.deepEqual(validate(slot, { kind: 'io.prx.static', path: '/a/b' }), { kind: 'io.prx.static', path: '/a/b' });
  });

  it('reports bad values, one line each', () => {
    const slot = kindSlot('identifier');
    assert.deepEqual(configError(() => validate(slot, { kind: 'io.prx.path', segments: 0 })).lines, [
      'segments: expected a positive integer, got 0',
    ]);
    assert.deepEqual(configError(() => validate(slot, { kind: 'io.prx.path', segments: 1.5, consume: 'yes' })).lines.length, 2);
    assert.deepEqual(configError(() => validate(slot, { kind: 'io.prx.static' })).lines, ['path: required key is missing']);
    assert.match(configError(() => validate(slot, { kind: 'io.prx.static', path: 'users' })).lines[0] ?? '', /^path: invalid path: '\/' expected but 'u' found at '\[u\]sers'/);
    assert.deepEqual(configError(() => validate(slot, { kind: 'io.prx.header', header: '' })).lines.length, 1);
    assert.match(configError(() => validate(slot, { kind: 'io.prx.header.token', headr: 'x' })).lines[0] ?? '', /^headr: unknown key/);
  });
});

describe('identifierFromConfig', () => {
  it('defaults to io.prx.header.token on Host', () => {
    const id = identifierFromConfig(undefined, ctx);
    assert.equal(name(id.identify(req('/', { host: 'users' }))), '/svc/users');
    assert.equal(name(id.identify(req('/'))), 'unidentified: Host header is absent');
  });

  it('builds one kind object with its defaults and the router prefix', () => {
    const id = identifierFromConfig({ kind: 'io.prx.path' }, { dstPrefix: readPath('/http'), routerLabel: 'r' });
    assert.equal(name(id.identify(req('/a/b'))), '/http/a');
    const consume = identifierFromConfig({ kind: 'io.prx.path', segments: 2, consume: true }, ctx).identify(req('/a/b/c?d'));
    assert.deepEqual(consume.kind === 'identified' && [consume.dst.show, consume.url], ['/svc/a/b', '/c?d']);
    const fixed = identifierFromConfig({ kind: 'io.prx.static', path: '/users' }, ctx);
    assert.equal(name(fixed.identify(req('/x'))), '/svc/users');
  });

  it('composes a list, first identification wins, else the last reason', () => {
    const id = identifierFromConfig(
      [{ kind: 'io.prx.header', header: 'x-name' }, { kind: 'io.prx.path', segments: 2 }],
      ctx,
    );
    assert.equal(name(id.identify(req('/a/b', { 'x-name': '/from/header' }))), '/svc/from/header');
    assert.equal(name(id.identify(req('/a/b'))), '/svc/a/b');
    assert.equal(name(id.identify(req('/a'))), 'unidentified: not enough segments in path');
  });

  it('refuses unknown kinds listing the known ones, bad values and empty lists', () => {
    const unknown = configError(() => identifierFromConfig({ kind: 'io.prx.nope' }, ctx));
    assert.equal(unknown.code, 'PRX_ERR_CONFIG_UNKNOWN_KIND');
    assert.deepEqual(unknown.lines, [
      'kind: unknown identifier kind "io.prx.nope" (known kinds: io.prx.header, io.prx.header.token, io.prx.ingress, io.prx.methodAndHost, io.prx.orch.meshctl, io.prx.path, io.prx.static)',
    ]);
    assert.deepEqual(configError(() => identifierFromConfig([{ kind: 'io.prx.path' }, { kind: 'io.prx.path', segments: 0 }], ctx)).lines, [
      '[1].segments: expected a positive integer, got 0',
    ]);
    assert.deepEqual(configError(() => identifierFromConfig([], ctx)).lines, ['expected at least one identifier']);
  });
});

describe('composeIdentifiers', () => {
  /** An identifier that records calls and answers `result`. */
  function probe(result: Identification): HttpIdentifier & { calls: number } {
    return {
      calls: 0,
      identify() {
        this.calls++;
        return result;
      },
    };
  }
  const hit = (p: string): Identification => ({ kind: 'identified', dst: readPath(p) });
  const miss = (reason: string): Identification => ({ kind: 'unidentified', reason });

  it('is lazy: later identifiers are not called once one identifies', () => {
    const a = probe(hit('/a'));
    const b = probe(hit('/b'));
    assert.equal(name(composeIdentifiers([a, b]).identify(req('/'))), '/a');
    assert.deepEqual([a.calls, b.calls], [1, 0]);
  });

  it('tries in order and returns the last reason when none identifies', () => {
    const a = probe(miss('first'));
    const b = probe(miss('second'));
    const c = probe(hit('/c'));
    assert.equal(name(composeIdentifiers([a, b, c]).identify(req('/'))), '/c');
    assert.equal(name(composeIdentifiers([a, b]).identify(req('/'))), 'unidentified: second');
    assert.deepEqual([a.calls, b.calls, c.calls], [2, 2, 1]);
  });

  it('a single identifier is used as is; an empty list identifies nothing', () => {
    const a = probe(hit('/a'));
    assert.equal(composeIdentifiers([a]), a);
    assert.equal(name(composeIdentifiers([]).identify(req('/'))), 'unidentified: no identifiers are configured');
  });

  it('copies the list, so later changes to it do not leak in', () => {
    const list: HttpIdentifier[] = [probe(miss('x'))];
    list.push(probe(miss('y')));
    const composed = composeIdentifiers(list);
    list.push(probe(hit('/late')));
    assert.equal(name(composed.identify(req('/'))), 'unidentified: y');
  });
});
