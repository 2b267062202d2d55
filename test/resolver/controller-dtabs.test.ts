// The HTTP controller's dtab API over the real in-memory store: every endpoint and every row of
// the spec's state table, with exact statuses, headers and bodies.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { versionTag } from '../../src/resolver/interfaces/http-controller.js';
import { parseIfMatch, versionOfTag } from '../../src/resolver/interfaces/if-match.js';
import { type ControllerFixture, request, startController } from './helpers.js';

const SEED = { yeezus: '/yeezy => /yeezus', tlop: '/yeezy => /pablo' };
const V1 = 'AAAAAAAAAAE=';
const V2 = 'AAAAAAAAAAI=';
const INVALID_CT = 'Valid content types are: application/json, application/dtab, text/plain\n';

/** A fresh controller per test, so state-table rows do not leak into each other. */
async function withController(f: (fx: ControllerFixture) => Promise<void>): Promise<void> {
  const fx = await startController(SEED);
  try {
    await f(fx);
  } finally {
    await fx.close();
  }
}

async function stored(fx: ControllerFixture, ns: string): Promise<{ dtab: string; etag: string } | undefined> {
  const v = await fx.store.observe(ns).toPromise(AbortSignal.timeout(1000));
  return v && { dtab: v.dtab.show, etag: versionTag(v.version) };
}

const send = (fx: ControllerFixture, method: string, ns: string, body: string, headers: Record<string, string>) =>
  request(`${fx.url}/api/1/dtabs/${ns}`, { method, body, headers });

describe('GET /api/1/dtabs', () => {
  let fx: ControllerFixture;
  before(async () => {
    fx = await startController(SEED);
  });
  after(() => fx.close());

  test('lists the namespaces sorted, as a newline-terminated JSON array', async () => {
    for (const path of ['/api/1/dtabs', '/api/1/dtabs/']) {
      const r = await request(`${fx.url}${path}`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/json');
      assert.equal(r.text, '["tlop","yeezus"]\n');
    }
  });

  test('a path that only starts like the collection is not found', async () => {
    const r = await request(`${fx.url}/api/1/dtabsexpialidocious`);
    assert.equal(r.status, 404);
  });

  test('other methods on the collection are refused with 405 and Allow', async () => {
    const r = await request(`${fx.url}/api/1/dtabs`, { method: 'POST', body: '' });
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET, HEAD');
  });
});

describe('GET and HEAD /api/1/dtabs/<ns>', () => {
  let fx: ControllerFixture;
  before(async () => {
    fx = await startController(SEED);
  });
  after(() => fx.close());

  test('JSON by default, with the version as ETag (base64 of the 8-byte counter)', async () => {
    const r = await request(`${fx.url}/api/1/dtabs/yeezus`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.headers.get('etag'), V1);
    assert.equal(r.text, '[{"prefix":"/yeezy","dst":"/yeezus"}]\n');
  });

  for (const type of ['application/dtab', 'text/plain']) {
    test(`Accept: ${type}, application/json answers in ${type}`, async () => {
      const r = await request(`${fx.url}/api/1/dtabs/yeezus`, { headers: { accept: `${type}, application/json` } });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), type);
      assert.equal(r.headers.get('etag'), V1);
      assert.equal(r.text, '/yeezy=>/yeezus\n');
    });
  }

  test('the first acceptable type wins; unknown types fall back to JSON', async () => {
    let r = await request(`${fx.url}/api/1/dtabs/tlop`, { headers: { accept: 'application/xml, application/json;q=0.5, application/dtab' } });
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.text, '[{"prefix":"/yeezy","dst":"/pablo"}]\n');
    r = await request(`${fx.url}/api/1/dtabs/tlop`, { headers: { accept: '*/*' } });
    assert.equal(r.headers.get('content-type'), 'application/json');
  });

  test('an absent namespace is 404 for GET (any Accept) and HEAD', async () => {
    let r = await request(`${fx.url}/api/1/dtabs/graduation`, { headers: { accept: 'application/dtab, application/json' } });
    assert.equal(r.status, 404);
    r = await request(`${fx.url}/api/1/dtabs/graduation`, { method: 'HEAD' });
    assert.equal(r.status, 404);
    assert.equal(r.text, '');
  });

  test('HEAD answers the ETag without a body', async () => {
    const r = await request(`${fx.url}/api/1/dtabs/yeezus`, { method: 'HEAD' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('etag'), V1);
    assert.equal(r.text, '');
  });

  test('a namespace must be one path segment', async () => {
    assert.equal((await request(`${fx.url}/api/1/dtabs/yeezus/extra`)).status, 404);
    assert.equal((await request(`${fx.url}/api/1/dtabs/a%2Fb`)).status, 404);
    assert.equal((await request(`${fx.url}/api/1/dtabs/%E0%A4%A`)).status, 404);
  });

  test('a percent-encoded namespace is decoded', async () => {
    await fx.store.create('new ns', (await import('../../src/naming/index.js')).readDtab('/a=>/b'));
    const r = await request(`${fx.url}/api/1/dtabs/new%20ns`, { headers: { accept: 'application/dtab' } });
    assert.equal(r.status, 200);
    assert.equal(r.text, '/a=>/b\n');
  });
});

describe('state table: POST (create)', () => {
  const bodies: Record<string, string> = {
    'application/json': '[{"prefix":"/yeezy","dst":"/kanye"}]',
    'application/json; charset=utf-8': '[{"prefix":"/yeezy","dst":"/kanye"}]',
    'text/plain': '/yeezy => /kanye',
    'application/dtab': '/yeezy => /kanye',
    'Application/DTAB;charset=UTF-8': '/yeezy => /kanye',
  };
  for (const [type, body] of Object.entries(bodies)) {
    test(`absent + well-formed (${type}) → present, 204`, () =>
      withController(async (fx) => {
        const r = await send(fx, 'POST', 'graduation', body, { 'content-type': type });
        assert.equal(r.status, 204);
        assert.equal(r.text, '');
        assert.deepEqual(await stored(fx, 'graduation'), { dtab: '/yeezy=>/kanye', etag: V1 });
        const get = await request(`${fx.url}/api/1/dtabs/graduation`);
        assert.equal(get.headers.get('etag'), V1);
      }));
  }

  test('absent + malformed dtab → stays absent, 400 with the parse error', () =>
    withController(async (fx) => {
      const r = await send(fx, 'POST', 'graduation', '/yeezy => kanye', { 'content-type': 'application/dtab' });
      assert.equal(r.status, 400);
      assert.equal(r.text, "simple expected but 'k' found at '/yeezy => [k]anye'\n");
      assert.equal(await stored(fx, 'graduation'), undefined);
    }));

  test('JSON with null dentries → 400 "The dtab contains invalid dentries"', () =>
    withController(async (fx) => {
      const body = '[{"prefix":"/a","dst":"/b"},null]';
      const r = await send(fx, 'POST', 'graduation', body, { 'content-type': 'application/json' });
      assert.equal(r.status, 400);
      assert.equal(r.text, `The dtab contains invalid dentries: ${body}\n`);
      assert.equal(await stored(fx, 'graduation'), undefined);
    }));

  test('malformed JSON bodies → 400 naming the problem', () =>
    withController(async (fx) => {
      const json = { 'content-type': 'application/json' };
      let r = await send(fx, 'POST', 'g', '{"prefix":"/a"}', json);
      assert.deepEqual([r.status, r.text], [400, 'Invalid JSON dtab: expected an array of dentries\n']);
      r = await send(fx, 'POST', 'g', '[{"prefix":"/a"}]', json);
      assert.deepEqual([r.status, r.text], [400, 'Invalid JSON dtab: dentry 0: expected an object {"prefix": "<prefix>", "dst": "<name tree>"}\n']);
      r = await send(fx, 'POST', 'g', '[{"prefix":"a","dst":"/b"}]', json);
      assert.deepEqual([r.status, r.text], [400, "'/' expected but 'a' found at '[a]'\n"]);
      r = await send(fx, 'POST', 'g', '[{"prefix":', json);
      assert.equal(r.status, 400);
      assert.match(r.text, /^Invalid JSON: /);
      assert.equal(await stored(fx, 'g'), undefined);
    }));

  test('no or unknown Content-Type → 400 Invalid Content-Type', () =>
    withController(async (fx) => {
      // fetch adds text/plain to a string body; a Blob without type sends no Content-Type at all.
      let r = await request(`${fx.url}/api/1/dtabs/graduation`, { method: 'POST', body: new Blob(['/yeezy => /kanye']) });
      assert.deepEqual([r.status, r.text], [400, `Invalid Content-Type "". ${INVALID_CT}`]);
      r = await send(fx, 'POST', 'graduation', '/yeezy => /kanye', { 'content-type': 'application/xml' });
      assert.deepEqual([r.status, r.text], [400, `Invalid Content-Type "application/xml". ${INVALID_CT}`]);
      assert.equal(await stored(fx, 'graduation'), undefined);
    }));

  test('present → 409, unchanged', () =>
    withController(async (fx) => {
      const r = await send(fx, 'POST', 'yeezus', '/yeezy => /kanye', { 'content-type': 'application/dtab' });
      assert.deepEqual([r.status, r.text], [409, 'Dtab namespace yeezus already exists\n']);
      assert.deepEqual(await stored(fx, 'yeezus'), { dtab: '/yeezy=>/yeezus', etag: V1 });
    }));

  test('a namespace the store cannot hold → 400', () =>
    withController(async (fx) => {
      // (`..`, even percent-encoded, is resolved away by URL normalisation before it gets here.)
      const control = await send(fx, 'PUT', 'a%01b', '/a => /b', { 'content-type': 'application/dtab' });
      assert.deepEqual([control.status, control.text], [400, 'invalid dtab namespace "a\\u0001b": must not contain control characters\n']);
    }));

  test('a body over 1 MiB → 413', () =>
    withController(async (fx) => {
      const r = await send(fx, 'POST', 'big', `/a => /b ${'#'.repeat(1024 * 1024 + 1)}`, { 'content-type': 'application/dtab' });
      assert.equal(r.status, 413);
      assert.equal(await stored(fx, 'big'), undefined);
    }));
});

describe('state table: PUT (update)', () => {
  const dtab = { 'content-type': 'application/dtab' };

  test('present + well-formed without If-Match → replaced with a new version, 204', () =>
    withController(async (fx) => {
      const r = await send(fx, 'PUT', 'yeezus', '/yeezy => /kanye', dtab);
      assert.deepEqual([r.status, r.text], [204, '']);
      assert.deepEqual(await stored(fx, 'yeezus'), { dtab: '/yeezy=>/kanye', etag: V2 });
    }));

  test('present + If-Match equal to the current version → replaced, 204', () =>
    withController(async (fx) => {
      const r = await send(fx, 'PUT', 'yeezus', '[{"prefix":"/yeezy","dst":"/kanye"}]', { 'content-type': 'application/json', 'if-match': V1 });
      assert.equal(r.status, 204);
      assert.deepEqual(await stored(fx, 'yeezus'), { dtab: '/yeezy=>/kanye', etag: V2 });
      // A quoted ETag is accepted too.
      const again = await send(fx, 'PUT', 'yeezus', '/yeezy => /ye', { ...dtab, 'if-match': `"${V2}"` });
      assert.equal(again.status, 204);
      assert.equal((await stored(fx, 'yeezus'))?.dtab, '/yeezy=>/ye');
    }));

  for (const stale of [V2, 'yolo']) {
    test(`present + If-Match ${stale} (not the current version) → unchanged, 412`, () =>
      withController(async (fx) => {
        const r = await send(fx, 'PUT', 'yeezus', '/yeezy => /kanye', { ...dtab, 'if-match': stale });
        assert.deepEqual([r.status, r.text], [412, `Dtab namespace yeezus has changed: version ${stale} is not its current version\n`]);
        assert.deepEqual(await stored(fx, 'yeezus'), { dtab: '/yeezy=>/yeezus', etag: V1 });
      }));
  }

  test('present + malformed → unchanged, 400', () =>
    withController(async (fx) => {
      const r = await send(fx, 'PUT', 'yeezus', '/yeezy =>', { ...dtab, 'if-match': V1 });
      assert.deepEqual([r.status, r.text], [400, "simple expected but end of input found at '/yeezy =>[]'\n"]);
      assert.deepEqual(await stored(fx, 'yeezus'), { dtab: '/yeezy=>/yeezus', etag: V1 });
      const ct = await send(fx, 'PUT', 'yeezus', '/yeezy => /kanye', { 'content-type': 'image/png' });
      assert.deepEqual([ct.status, ct.text], [400, `Invalid Content-Type "image/png". ${INVALID_CT}`]);
    }));

  test('absent + If-Match → stays absent, 404', () =>
    withController(async (fx) => {
      const r = await send(fx, 'PUT', 'graduation', '/yeezy => /kanye', { ...dtab, 'if-match': V1 });
      assert.deepEqual([r.status, r.text], [404, 'Dtab namespace graduation does not exist\n']);
      assert.equal(await stored(fx, 'graduation'), undefined);
    }));

  test('absent without If-Match → stays absent, 404 (the spec; namerd upserted here)', () =>
    withController(async (fx) => {
      const r = await send(fx, 'PUT', 'graduation', '/yeezy => /kanye', dtab);
      assert.deepEqual([r.status, r.text], [404, 'Dtab namespace graduation does not exist\n']);
      assert.equal(await stored(fx, 'graduation'), undefined);
    }));
});

describe('state table: DELETE', () => {
  test('present → absent, 204; absent → 404', () =>
    withController(async (fx) => {
      let r = await request(`${fx.url}/api/1/dtabs/yeezus`, { method: 'DELETE' });
      assert.deepEqual([r.status, r.text], [204, '']);
      assert.equal(await stored(fx, 'yeezus'), undefined);
      assert.equal((await request(`${fx.url}/api/1/dtabs/yeezus`)).status, 404);
      r = await request(`${fx.url}/api/1/dtabs/yeezus`, { method: 'DELETE' });
      assert.deepEqual([r.status, r.text], [404, 'Dtab namespace yeezus does not exist\n']);
      assert.equal((await request(`${fx.url}/api/1/dtabs`)).text, '["tlop"]\n');
    }));

  test('other methods on a namespace → 405 with Allow', () =>
    withController(async (fx) => {
      const r = await request(`${fx.url}/api/1/dtabs/yeezus`, { method: 'PATCH', body: '' });
      assert.equal(r.status, 405);
      assert.equal(r.headers.get('allow'), 'GET, HEAD, POST, PUT, DELETE');
    }));
});

describe('ETags', () => {
  test('round-trip: versionTag and versionOfTag; If-Match parses strictly', () => {
    const v = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 1]);
    assert.equal(versionTag(v), V1);
    assert.deepEqual(versionOfTag(V1), v);
    for (const near of [`${V1}x`, V1.slice(0, -1), `A${V1}`, 'yolo!']) assert.equal(versionOfTag(near), undefined, near);
    assert.deepEqual(parseIfMatch(V1), { kind: 'versions', versions: [v] });
    assert.deepEqual(parseIfMatch(`"${V1}"`), { kind: 'versions', versions: [v] });
    assert.deepEqual(parseIfMatch(`W/"${V1}"`), { kind: 'versions', versions: [] });
    assert.deepEqual(parseIfMatch(' * '), { kind: 'any' });
  });
});
