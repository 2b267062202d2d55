// Each HTTP identifier kind against Linkerd's test vectors (PathIdentifierTest,
// MethodAndHostIdentifierTest, HeaderIdentifierTest) and the edge cases around them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Path, readPath } from '../../../src/naming/index.js';
import {
  HeaderIdentifier,
  HeaderTokenIdentifier,
  type HttpIdentifier,
  type Identification,
  type IdentifyRequest,
  MethodAndHostIdentifier,
  PathIdentifier,
  StaticIdentifier,
} from '../../../src/protocol/http/identifiers/index.js';

function req(url: string, headers: IdentifyRequest['headers'] = {}, method = 'GET', httpVersion = '1.1'): IdentifyRequest {
  return { method, url, httpVersion, headers };
}

/** The name as text, the rewritten URL when there is one, or `unidentified: <reason>`. */
function outcome(id: HttpIdentifier, r: IdentifyRequest): string {
  const res: Identification = id.identify(r);
  if (res.kind === 'unidentified') return `unidentified: ${res.reason}`;
  if (res.kind === 'redirect') return `redirect: ${res.location}`;
  return res.url === undefined ? res.dst.show : `${res.dst.show} ${res.url}`;
}

const http = readPath('/http');

describe('io.prx.path', () => {
  const two = new PathIdentifier(http, 2, false);
  const consume = new PathIdentifier(http, 2, true);

  it("Linkerd's vectors", () => {
    assert.equal(outcome(two, req('/mysvc/subsvc')), '/http/mysvc/subsvc');
    assert.equal(outcome(two, req('/mysvc/subsvc/some/path?other=stuff')), '/http/mysvc/subsvc');
    assert.equal(outcome(two, req('/mysvc?other=stuff')), 'unidentified: not enough segments in path');
    assert.equal(outcome(consume, req('/mysvc/subsvc/some/path?other=stuff')), '/http/mysvc/subsvc /some/path?other=stuff');
    assert.equal(outcome(consume, req('/mysvc/subsvc')), '/http/mysvc/subsvc /');
  });

  it('consume keeps the query and a trailing slash', () => {
    assert.equal(outcome(consume, req('/mysvc/subsvc?x=1&y=/a/b')), '/http/mysvc/subsvc /?x=1&y=/a/b');
    assert.equal(outcome(consume, req('/mysvc/subsvc/')), '/http/mysvc/subsvc /');
    assert.equal(outcome(consume, req('/a/b/c/d/')), '/http/a/b /c/d/');
    assert.equal(outcome(consume, req('/a/b//c')), '/http/a/b //c');
  });

  it('without consume the URL is not rewritten', () => {
    const res = two.identify(req('/a/b/c'));
    assert.equal(res.kind === 'identified' && res.url, undefined);
  });

  it('takes one segment by default and ignores the query', () => {
    const one = new PathIdentifier(readPath('/svc'), 1, false);
    assert.equal(outcome(one, req('/users/42?q=/x/y')), '/svc/users');
    assert.equal(outcome(one, req('/users')), '/svc/users');
    assert.equal(outcome(one, req('/users/')), '/svc/users');
  });

  it('counts segments as Linkerd does: trailing empty ones do not count, inner ones are refused', () => {
    const one = new PathIdentifier(readPath('/svc'), 1, false);
    for (const url of ['/', '', '?x=1', '/?x=1', '//', 'no-slash']) assert.equal(outcome(one, req(url)), 'unidentified: not enough segments in path', url);
    assert.equal(outcome(two, req('/a/')), 'unidentified: not enough segments in path');
    assert.equal(outcome(two, req('/a//')), 'unidentified: not enough segments in path');
    assert.equal(outcome(two, req('/a//b')), 'unidentified: empty segment in path');
    assert.equal(outcome(two, req('//b')), 'unidentified: empty segment in path');
    assert.equal(outcome(one, req('//b')), 'unidentified: empty segment in path');
    assert.equal(outcome(two, req('/a/b//')), '/http/a/b');
  });

  it('does not percent-decode, and keeps any bytes as one element', () => {
    const one = new PathIdentifier(readPath('/svc'), 1, false);
    assert.equal(outcome(one, req('/a%2Fb/c')), '/svc/a%2Fb');
    const res = one.identify(req('/caf\u00c3\u00a9/x')); // node hands the URL over byte-per-char
    assert.ok(res.kind === 'identified');
    assert.equal(res.dst.elemUtf8(1), 'caf\u00c3\u00a9');
    assert.ok(res.dst.equals(Path.utf8('svc', 'caf\u00c3\u00a9')));
  });

  it('refuses a segment count below one', () => {
    assert.throws(() => new PathIdentifier(http, 0, false), RangeError);
  });
});

describe('io.prx.methodAndHost', () => {
  const https = readPath('/https');
  const noUri = new MethodAndHostIdentifier(https, false);
  const withUri = new MethodAndHostIdentifier(https, true);
  const prefix = readPath('/prefix');

  it("Linkerd's vectors", () => {
    assert.equal(outcome(noUri, req('/some/path?other=stuff')), 'unidentified: HTTP/1.1 request missing hostname');
    assert.equal(outcome(noUri, req('/some/path?other=stuff', { host: 'domain' })), '/https/1.1/GET/domain');
    assert.equal(outcome(withUri, req('/some/path?other=stuff', { host: 'domain' })), '/https/1.1/GET/domain/some/path');
    assert.equal(outcome(new MethodAndHostIdentifier(prefix, false), req('/drum/bass', {}, 'POST', '1.0')), '/prefix/1.0/POST');
    assert.equal(outcome(new MethodAndHostIdentifier(prefix, true), req('/drum/bass', {}, 'POST', '1.0')), '/prefix/1.0/POST/drum/bass');
  });

  it('lower-cases the host and keeps its port', () => {
    assert.equal(outcome(noUri, req('/', { host: 'DoMaiN' })), '/https/1.1/GET/domain');
    assert.equal(outcome(noUri, req('/', { host: 'Example.COM:8080' }, 'DELETE')), '/https/1.1/DELETE/example.com:8080');
  });

  it('HTTP/1.0 ignores Host; an empty Host counts as missing; other versions are refused', () => {
    assert.equal(outcome(noUri, req('/', { host: 'web' }, 'GET', '1.0')), '/https/1.0/GET');
    assert.equal(outcome(noUri, req('/', { host: '' })), 'unidentified: HTTP/1.1 request missing hostname');
    assert.equal(outcome(noUri, req('/', { host: 'web' }, 'GET', '2.0')), 'unidentified: Unknown HTTP version HTTP/2.0');
  });

  it('reads the URI as a path, so text outside the grammar is refused with the parser reason', () => {
    assert.equal(outcome(withUri, req('/', { host: 'h' })), '/https/1.1/GET/h');
    assert.equal(outcome(withUri, req('/a/', { host: 'h' })), "unidentified: label char expected but end of input found at '/a/[]'");
    assert.equal(outcome(withUri, req('/a b', { host: 'h' })), "unidentified: end of input expected but 'b' found at '/a [b]'");
  });
});

describe('io.prx.header', () => {
  const id = new HeaderIdentifier(http, 'my-header');

  it("Linkerd's vectors", () => {
    assert.equal(outcome(id, req('/', { 'my-header': '/a/b/c' })), '/http/a/b/c');
    assert.equal(outcome(id, req('/')), 'unidentified: my-header header is absent');
  });

  it('finds the header whatever the configured case; takes the first of several values', () => {
    const upper = new HeaderIdentifier(http, 'My-Header');
    assert.equal(outcome(upper, req('/', { 'my-header': '/x' })), '/http/x');
    assert.equal(outcome(upper, req('/', {})), 'unidentified: My-Header header is absent');
    assert.equal(outcome(id, req('/', { 'my-header': ['/first', '/second'] })), '/http/first');
  });

  it('an empty header is absent; / names the prefix itself; a non-path gives the parse reason', () => {
    assert.equal(outcome(id, req('/', { 'my-header': '' })), 'unidentified: my-header header is absent');
    assert.equal(outcome(id, req('/', { 'my-header': [] })), 'unidentified: my-header header is absent');
    assert.equal(outcome(id, req('/', { 'my-header': '/' })), '/http');
    assert.equal(outcome(id, req('/', { 'my-header': 'a/b' })), "unidentified: '/' expected but 'a' found at '[a]/b'");
    assert.equal(outcome(id, req('/', { 'my-header': '/a/' })), "unidentified: label char expected but end of input found at '/a/[]'");
  });
});

describe('io.prx.header.token', () => {
  const host = new HeaderTokenIdentifier(readPath('/svc'), 'Host');

  it('names by the header value as one segment', () => {
    assert.equal(outcome(host, req('/x', { host: 'users' })), '/svc/users');
    assert.equal(outcome(new HeaderTokenIdentifier(http, 'my-header'), req('/', { 'my-header': 'foo' })), '/http/foo');
    const res = host.identify(req('/', { host: 'a/b' }));
    assert.ok(res.kind === 'identified' && res.dst.equals(Path.utf8('svc', 'a/b')));
  });

  it('keeps the value verbatim (no lower-casing) and takes the first of several', () => {
    assert.equal(outcome(host, req('/', { host: 'Web:8080' })), '/svc/Web:8080');
    assert.equal(outcome(host, req('/', { host: ['one', 'two'] })), '/svc/one');
  });

  it('absent or empty: `<Header> header is absent`', () => {
    assert.equal(outcome(host, req('/')), 'unidentified: Host header is absent');
    assert.equal(outcome(host, req('/', { host: '' })), 'unidentified: Host header is absent');
    assert.equal(outcome(new HeaderTokenIdentifier(http, 'X-Svc'), req('/', { host: 'h' })), 'unidentified: X-Svc header is absent');
  });
});

describe('io.prx.static', () => {
  it('names every request the same, whatever it carries', () => {
    const id = new StaticIdentifier(readPath('/svc'), readPath('/users/v2'));
    assert.equal(outcome(id, req('/anything', { host: 'x' }, 'POST', '1.0')), '/svc/users/v2');
    assert.equal(id.identify(req('/')), id.identify(req('/other')));
  });
});
