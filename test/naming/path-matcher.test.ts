// PathMatcher: Linkerd's PathMatcherTest vectors, the spec's capture rules, bad patterns, properties.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Path, PathMatcher, PathPatternError, readPath, substituteVars } from '../../src/naming/index.js';

const extract = (pattern: string, path: string) => PathMatcher.parse(pattern).match(readPath(path));

describe('PathMatcher: Linkerd vectors', () => {
  it('matches exactly and by prefix, not a different or shorter path', () => {
    assert.deepEqual(extract('/foo/bar', '/foo/bar'), {});
    assert.deepEqual(extract('/foo/bar', '/foo/bar/bas'), {});
    assert.equal(extract('/foo/bar', '/foo/goo'), undefined);
    assert.equal(extract('/foo/bar', '/foo'), undefined);
  });

  it('matches wildcards, one segment each', () => {
    assert.deepEqual(extract('/foo/*/*', '/foo/hi/there'), {});
    assert.equal(extract('/foo/*/*', '/foo/hi'), undefined);
  });

  it('captures whole segments and parts of segments', () => {
    assert.deepEqual(extract('/foo/{A}', '/foo/bar/bas'), { A: 'bar' });
    assert.deepEqual(extract('/foo/bar/{A}:http', '/foo/bar/bas:http'), { A: 'bas' });
    assert.deepEqual(extract('/foo/{A}/*/{B}', '/foo/boo/bar/bas'), { A: 'boo', B: 'bas' });
    assert.deepEqual(extract('/foo/bar/{A}.com/{B}', '/foo/bar/foo.com/80'), { A: 'foo', B: '80' });
    assert.deepEqual(extract('/foo/bar/{A}-{B}/{C}', '/foo/bar/foo-com/80'), { A: 'foo', B: 'com', C: '80' });
    assert.deepEqual(extract('/foo/bar/{A}.{B}/{C}', '/foo/bar/foo.com/80'), { A: 'foo', B: 'com', C: '80' });
    assert.deepEqual(extract('/foo/bar/{A}.{B}.{C}/{D}', '/foo/bar/www.foo.com/80'), { A: 'www', B: 'foo', C: 'com', D: '80' });
    assert.deepEqual(extract('/foo/{A}/*/{B}:http', '/foo/boo/bar/bas:http'), { A: 'boo', B: 'bas' });
  });

  it('captures greedily: {A}-{B} on foo-bar-baz, {foo}{bar} on a whole segment', () => {
    assert.deepEqual(extract('/foo/bar/{A}-{B}', '/foo/bar/foo-bar-baz'), { A: 'foo-bar', B: 'baz' });
    assert.deepEqual(extract('/x/{foo}-{bar}', '/x/a-b-c'), { foo: 'a-b', bar: 'c' });
    assert.deepEqual(extract('/x/{foo}{bar}', '/x/a-b-c'), { foo: 'a-b-c', bar: '' });
  });

  it('fails when a capture segment does not fit', () => {
    assert.equal(extract('/foo/{A}/bar', '/foo/bar/bad'), undefined);
    assert.equal(extract('/foo/{A}:http', '/foo/bar/bas:http'), undefined);
    // Anchored: the literal text must cover the whole element, not a part of it.
    assert.equal(extract('/foo/{A}.com', '/foo/x.com.au'), undefined);
    assert.equal(extract('/foo/x{A}', '/foo/yxz'), undefined);
  });

  it('substitutes captures into templates', () => {
    const m = PathMatcher.parse('/foo/{A}/*/{B}');
    assert.equal(m.substitute(readPath('/foo/boo/bar/bas'), '/{A}/and/{B}'), '/boo/and/bas');
    assert.equal(m.substitute(readPath('/goo/boo/bar/bas'), '/{A}/and/{B}'), undefined);
  });
});

describe('PathMatcher: patterns', () => {
  it('/ matches every path', () => {
    const m = PathMatcher.parse('/');
    assert.deepEqual(m.match(Path.empty), {});
    assert.deepEqual(m.match(readPath('/a/b')), {});
    assert.deepEqual(m.variables, []);
  });

  it('matches the configured-namer form and lists its variables', () => {
    const m = PathMatcher.parse('/#/io.prx.fs/{service}');
    assert.deepEqual(m.match(readPath('/#/io.prx.fs/users/v2')), { service: 'users' });
    assert.equal(m.matches(readPath('/#/io.prx.fs')), false);
    assert.equal(m.matches(readPath('/$/inet/127.1/80')), false);
    assert.deepEqual(PathMatcher.parse('/{a}/*/{b}-{c}').variables, ['a', 'b', 'c']);
    assert.equal(PathMatcher.parse('/svc/{x}').toString(), '/svc/{x}');
  });

  it('treats regex characters in literal text literally', () => {
    assert.deepEqual(extract('/a/{x}.b$c', '/a/q.b$c'), { x: 'q' });
    assert.equal(extract('/a/{x}.b', '/a/qXb'), undefined);
    assert.equal(extract('/a.b', '/aXb'), undefined);
  });

  it('matches elements in their shown form, as Linkerd does', () => {
    const path = Path.utf8('svc', 'a b');
    assert.deepEqual(PathMatcher.parse('/svc/{name}').match(path), { name: '\\x61\\x20\\x62' });
  });

  it('a repeated variable keeps its last capture; __proto__ is a plain key', () => {
    assert.deepEqual(extract('/{a}/{a}', '/x/y'), { a: 'y' });
    const vars = extract('/{__proto__}', '/x');
    assert.ok(vars);
    assert.equal(Object.hasOwn(vars, '__proto__'), true);
    assert.equal(Object.getPrototypeOf(vars), Object.prototype);
  });

  it('returns frozen captures', () => {
    const vars = extract('/{a}', '/x');
    assert.ok(vars && Object.isFrozen(vars));
    assert.ok(Object.isFrozen(extract('/a', '/a')));
  });

  it('rejects malformed patterns with PRX_ERR_PATH_PATTERN', () => {
    const bad: [string, RegExp][] = [
      ['', /must start with "\/"/],
      ['svc/x', /must start with "\/"/],
      ['/svc/', /segment 2 \(""\)/],
      ['//x', /segment 1 \(""\)/],
      ['/a/**', /segment 2 \("\*\*"\)/],
      ['/a*b', /segment 1/],
      ['/{unclosed', /segment 1/],
      ['/{}', /segment 1/],
      ['/{9lives}', /segment 1/],
      ['/a b', /segment 1/],
      ['/x}', /segment 1/],
    ];
    for (const [pattern, message] of bad) {
      assert.throws(
        () => PathMatcher.parse(pattern),
        (e: unknown) => e instanceof PathPatternError && e.code === 'PRX_ERR_PATH_PATTERN' && message.test(e.message) && e.pattern === pattern,
        pattern,
      );
    }
  });
});

describe('substituteVars', () => {
  it('replaces known references, keeps unknown ones, does not rescan values', () => {
    assert.equal(substituteVars('{service}.example.com', { service: 'users' }), 'users.example.com');
    assert.equal(substituteVars('{a}-{b}-{a}', { a: '1', b: '2' }), '1-2-1');
    assert.equal(substituteVars('{missing}.x', { a: '1' }), '{missing}.x');
    assert.equal(substituteVars('{a}', { a: '{b}', b: 'no' }), '{b}');
    assert.equal(substituteVars('plain', {}), 'plain');
    assert.equal(PathMatcher.substitute('{toString}', {}), '{toString}');
  });
});

describe('PathMatcher: properties', () => {
  const label = fc.stringMatching(/^[A-Za-z0-9_:.#$%-]{1,8}$/);
  const labels = fc.array(label, { minLength: 0, maxLength: 5 });

  it('a path matches its own show as a pattern, and every extension of it', () => {
    fc.assert(
      fc.property(labels, labels, (a, b) => {
        const m = PathMatcher.parse(Path.of(...a).show);
        const changed = a.map((x, i) => (i === a.length - 1 ? x + 'x' : x));
        return m.matches(Path.of(...a)) && m.matches(Path.of(...a, ...b)) && (a.length === 0 || !m.matches(Path.of(...changed, ...b)));
      }),
    );
  });

  it('captures of {x} segments are the elements, and substitute rebuilds the path', () => {
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 5 }), labels, (a, rest) => {
        const pattern = '/' + a.map((_, i) => `{v${i}}`).join('/');
        const template = '/' + a.map((_, i) => `{v${i}}`).join('/');
        const path = Path.of(...a, ...rest);
        return PathMatcher.parse(pattern).substitute(path, template) === Path.of(...a).show;
      }),
    );
  });

  it('{A}-{B} splits at the last dash', () => {
    const part = fc.stringMatching(/^[A-Za-z0-9_.]{0,6}$/);
    fc.assert(
      fc.property(fc.array(part, { minLength: 2, maxLength: 5 }), (parts) => {
        const elem = parts.join('-');
        const vars = PathMatcher.parse('/{A}-{B}').match(Path.of(elem === '' ? '-' : elem));
        const want = { A: parts.slice(0, -1).join('-'), B: parts[parts.length - 1] };
        return elem === '' || (vars !== undefined && vars['A'] === want.A && vars['B'] === want.B);
      }),
    );
  });

  it('* matches any one element and nothing shorter', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 }), labels, (stars, elems) => {
        const m = PathMatcher.parse(stars === 0 ? '/' : '/' + Array(stars).fill('*').join('/'));
        return m.matches(Path.of(...elems)) === elems.length >= stars;
      }),
    );
  });
});
