// io.prx.orch.meshctl on real http and h2 routers: names from a fake v1 pilot (discovery
// `/v1/routes`, apiserver route rules), real backends behind the dtab, rules matched on headers and
// URI with precedence, rewrites seen by the backend, redirects, live rule changes, a control plane
// that is down or answers garbage.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { eventually, startBackend, startRouter, type Backend, type RouterUnderTest } from '../../router/harness.js';
import { h2Connect, h2Request, startH2Backend, startH2Router, type H2Backend, type H2RouterUnderTest } from '../../router/h2/harness.js';
import { startFakePilot, type FakePilot, type RuleConfig } from './fakes.js';

const REVIEWS = 'reviews.default.svc.cluster.local';
const VHOSTS = [
  { name: `${REVIEWS}|http`, domains: ['reviews', 'reviews:9080', REVIEWS] },
  { name: 'ratings.default.svc.cluster.local|http', domains: ['ratings'] },
];

const rule = (name: string, spec: Record<string, unknown>): RuleConfig => ({ type: 'route-rule', name, spec: { destination: REVIEWS, ...spec } });

const RULES: RuleConfig[] = [
  rule('reviews-jason', { precedence: 2, match: { httpHeaders: { cookie: { regex: '^(.*?;)?(user=jason)(;.*)?$' } } }, route: [{ tags: { version: 'v2' } }] }),
  rule('reviews-api', { precedence: 1, match: { httpHeaders: { uri: { prefix: '/api/' } } }, rewrite: { uri: '/v2/', authority: 'reviews-v2.internal' }, route: [{ tags: { version: 'v2' }, weight: 100 }] }),
  rule('reviews-old', { precedence: 1, match: { httpHeaders: { uri: { exact: '/old' } } }, redirect: { uri: '/new', authority: 'reviews.example' } }),
  rule('reviews-post', { precedence: 1, match: { httpHeaders: { method: { exact: 'POST' }, 'x-canary': { prefix: 'y' } } }, route: [{ tags: { version: 'v3' } }] }),
  // Names a caller, which a proxy outside the caller cannot know: never applies.
  rule('reviews-from-productpage', { precedence: 10, match: { source: 'productpage.default.svc.cluster.local' }, route: [{ tags: { version: 'v9' } }] }),
  // Another destination's rule: never applies to reviews.
  { type: 'route-rule', name: 'ratings-all', spec: { destination: 'ratings.default.svc.cluster.local', precedence: 5, route: [{ tags: { version: 'v1' } }] } },
  // Unusable: a bad regex. Logged and skipped; the others stay in force.
  rule('reviews-broken', { precedence: 50, match: { httpHeaders: { 'x-broken': { regex: '(' } } } }),
];

describe('io.prx.orch.meshctl identifier (http router)', () => {
  let pilot: FakePilot;
  let v1: Backend;
  let v2: Backend;
  let ext: Backend;
  let rt: RouterUnderTest;

  before(async () => {
    pilot = await startFakePilot(VHOSTS, RULES);
    [v1, v2, ext] = await Promise.all([startBackend('v1'), startBackend('v2'), startBackend('ext')]);
    rt = await startRouter({
      identifier: { kind: 'io.prx.orch.meshctl', discoveryHost: '127.0.0.1', discoveryPort: pilot.discoveryPort, apiserverHost: '127.0.0.1', apiserverPort: pilot.apiserverPort },
      dtab: [
        '/svc/ext => /$/inet',
        `/svc/dest/${REVIEWS}/:: => /$/inet/127.0.0.1/${v1.port}`,
        `/svc/route => /$/inet/127.0.0.1/${v2.port}`,
        `/svc/dest/ratings.default.svc.cluster.local => /$/inet/127.0.0.1/${ext.port}`,
      ].join(';'),
    });
    await eventually(() => pilot.hits.discovery.length > 0 && pilot.hits.apiserver.length > 0, 10_000, 'the first polls');
    // The first answers are in once a request is identified.
    const until = Date.now() + 10_000;
    for (;;) {
      const r = await request(`${rt.url}/`, { headers: { host: 'reviews' } });
      await r.body.text();
      if (r.statusCode === 200) break;
      if (Date.now() > until) assert.fail(`still ${r.statusCode} after 10 s`);
      await new Promise((res) => setTimeout(res, 50));
    }
  });
  after(async () => {
    await rt.close();
    await Promise.all([pilot.close(), v1.close(), v2.close(), ext.close()]);
  });

  const get = async (path: string, headers: Record<string, string>, method = 'GET') => {
    const r = await request(`${rt.url}${path}`, { method: method as 'GET', headers });
    return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
  };

  it('polls the v1 discovery and apiserver paths', () => {
    assert.ok(pilot.hits.discovery.every((p) => p === '/v1/routes'));
    assert.ok(pilot.hits.apiserver.every((p) => p === '/v1alpha1/config/route-rule'));
  });

  it('names a request for a cluster no rule matches /svc/dest/<cluster>/::/<port>', async () => {
    const r = await get('/reviews/1', { host: 'reviews:9080' });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'v1');
    assert.equal(v1.requests.at(-1)?.headers['prx-dst-service'], `/svc/dest/${REVIEWS}/::/http`);
  });

  it('names a request a rule matches by header regex /svc/route/<rule>, and the source-conditioned and broken rules never apply', async () => {
    const r = await get('/reviews/1', { host: 'reviews', cookie: 'a=b;user=jason;c=d' });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'v2');
    assert.equal(v2.requests.at(-1)?.headers['prx-dst-service'], '/svc/route/reviews-jason');
    const broken = await get('/', { host: 'reviews', 'x-broken': '(' });
    assert.equal(broken.body, 'v1');
  });

  it('picks the rule of highest precedence when several match', async () => {
    const r = await get('/api/x', { host: 'reviews', cookie: 'user=jason' });
    assert.equal(v2.requests.at(-1)?.headers['prx-dst-service'], '/svc/route/reviews-jason');
    assert.equal(r.status, 200);
    // reviews-jason does not rewrite
    assert.equal(v2.requests.at(-1)?.url, '/api/x');
  });

  it('rewrites the matched URI prefix and the Host, keeping the query', async () => {
    const r = await get('/api/books/7?full=1', { host: 'reviews' });
    assert.equal(r.status, 200);
    const seen = v2.requests.at(-1);
    assert.equal(seen?.headers['prx-dst-service'], '/svc/route/reviews-api');
    assert.equal(seen?.url, '/v2/books/7?full=1');
    assert.equal(seen?.headers.host, 'reviews-v2.internal');
  });

  it('matches on the method and on other headers together', async () => {
    const post = await get('/', { host: 'reviews', 'x-canary': 'yes' }, 'POST');
    assert.equal(post.status, 200);
    assert.equal(v2.requests.at(-1)?.headers['prx-dst-service'], '/svc/route/reviews-post');
    const getReq = await get('/', { host: 'reviews', 'x-canary': 'yes' });
    assert.equal(getReq.body, 'v1');
  });

  it('answers a redirect rule with 302 and the new location, without routing', async () => {
    const before = v1.requests.length + v2.requests.length;
    const r = await get('/old', { host: 'reviews' });
    assert.equal(r.status, 302);
    assert.equal(r.headers['location'], 'http://reviews.example/new');
    assert.equal(v1.requests.length + v2.requests.length, before);
  });

  it('names a request for an authority no virtual host lists /svc/ext/<host>/<port>', async () => {
    const r = await get('/', { host: `127.0.0.1:${ext.port}` });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'ext');
    assert.equal(ext.requests.at(-1)?.headers['prx-dst-service'], `/svc/ext/127.0.0.1/${ext.port}`);
    // No port: 80, as Linkerd 1 named it (nothing listens there here: the name is what counts).
    const named = await get('/', { host: 'elsewhere.example' });
    assert.equal(named.status, 502);
    assert.match(named.body, /service name: \/svc\/ext\/elsewhere\.example\/80/);
  });

  it('refuses an authority it cannot parse with 400, and keeps serving', async () => {
    const r = await get('/', { host: 'a:b:c' });
    assert.equal(r.status, 400);
    assert.match(r.body, /unable to parse the authority/);
    assert.equal((await get('/', { host: 'reviews' })).status, 200);
  });

  it('applies rule changes at the next poll', async () => {
    const jason = () => get('/', { host: 'reviews', cookie: 'user=jason' });
    pilot.rules = RULES.filter((r) => r.name !== 'reviews-jason');
    await answers(jason, (r) => r.body === 'v1', 'the rule removed');
    pilot.rules = RULES;
    await answers(jason, (r) => r.body === 'v2', 'the rule back');
  });

  it('keeps the last good rules and clusters while the control plane is down or answers garbage', async () => {
    for (const breakIt of [() => (pilot.down = true), () => (pilot.raw = '{"not": "the v1 API"}'), () => (pilot.raw = 'not json')]) {
      breakIt();
      const polls = pilot.hits.apiserver.length;
      await eventually(() => pilot.hits.apiserver.length >= polls + 2, 15_000, 'polls of the broken control plane');
      const r = await get('/', { host: 'reviews', cookie: 'user=jason' });
      assert.equal(r.status, 200);
      assert.equal(r.body, 'v2');
      pilot.down = false;
      pilot.raw = undefined;
    }
  });
});

/** Sends `send()` until its answer satisfies `ok` (a poll is 5 s: generous deadline). */
async function answers<T>(send: () => Promise<T>, ok: (r: T) => boolean, what: string): Promise<void> {
  const until = Date.now() + 20_000;
  for (;;) {
    if (ok(await send())) return;
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('io.prx.orch.meshctl identifier: before the control plane answers, and on h2', () => {
  let pilot: FakePilot;
  let backend: H2Backend;
  let rt: H2RouterUnderTest;

  before(async () => {
    pilot = await startFakePilot(VHOSTS, RULES);
    pilot.down = true;
    backend = await startH2Backend((stream, headers) => {
      stream.respond({ ':status': 200, 'x-dst': String(headers['prx-dst-service']), 'x-path': String(headers[':path']), 'x-authority': String(headers[':authority']) });
      stream.end('h2');
    });
    rt = await startH2Router({
      identifier: { kind: 'io.prx.orch.meshctl', discoveryHost: '127.0.0.1', discoveryPort: pilot.discoveryPort, apiserverHost: '127.0.0.1', apiserverPort: pilot.apiserverPort },
      dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
    });
  });
  after(async () => {
    await rt.close();
    await Promise.all([pilot.close(), backend.close()]);
  });

  const send = async (headers: Record<string, string>) => {
    const session = h2Connect(rt.port);
    try {
      return await h2Request(session, { ':method': 'GET', ':scheme': 'http', ...headers }).done;
    } finally {
      session.close();
    }
  };

  it('refuses requests until the control plane has answered once, then routes them', async () => {
    await eventually(() => pilot.hits.discovery.length > 0, 10_000, 'the first poll');
    const early = await send({ ':authority': 'reviews', ':path': '/' });
    // h2 refuses an unidentified stream (REFUSED_STREAM, 7), with the reason in the log.
    assert.equal(early.rstCode, 7);
    pilot.down = false;
    await answers(() => send({ ':authority': 'reviews', ':path': '/' }), (r) => Number(r.headers?.[':status']) === 200, 'the first good poll');
  });

  it('names h2 requests by :authority and rewrites :path and :authority', async () => {
    const plain = await send({ ':authority': 'reviews', ':path': '/x' });
    assert.equal(plain.headers?.['x-dst'], `/svc/dest/${REVIEWS}/::/http`);
    const rewritten = await send({ ':authority': 'reviews', ':path': '/api/y?z=1' });
    assert.equal(rewritten.headers?.['x-dst'], '/svc/route/reviews-api');
    assert.equal(rewritten.headers?.['x-path'], '/v2/y?z=1');
    assert.equal(rewritten.headers?.['x-authority'], 'reviews-v2.internal');
    const jason = await send({ ':authority': 'reviews', ':path': '/', cookie: 'user=jason' });
    assert.equal(jason.headers?.['x-dst'], '/svc/route/reviews-jason');
  });

  it('answers an h2 redirect rule with 302', async () => {
    const r = await send({ ':authority': 'reviews', ':path': '/old' });
    assert.equal(r.headers?.[':status'], 302);
    assert.equal(r.headers?.['location'], 'http://reviews.example/new');
  });
});

describe('io.prx.orch.meshctl identifier: polling follows the routers that use it', () => {
  it('shares one poller per control plane among routers, and stops polling when the last of them closes', async () => {
    const pilot = await startFakePilot(VHOSTS, RULES);
    const cfg = {
      identifier: { kind: 'io.prx.orch.meshctl', discoveryHost: '127.0.0.1', discoveryPort: pilot.discoveryPort, apiserverHost: '127.0.0.1', apiserverPort: pilot.apiserverPort },
      dtab: '/svc => /$/inet/127.0.0.1/9',
    };
    try {
      const a = await startRouter(cfg);
      const b = await startRouter(cfg);
      await eventually(() => pilot.hits.discovery.length >= 2, 15_000, 'a second poll');
      // One poller for both routers: over two intervals 2 or 3 polls (two pollers would make 4 to 6).
      const start = pilot.hits.discovery.length;
      await new Promise((r) => setTimeout(r, 10_400));
      assert.ok(pilot.hits.discovery.length - start <= 3, `${pilot.hits.discovery.length - start} polls in two intervals`);
      await a.close();
      await eventually(() => pilot.hits.discovery.length >= start + 2, 15_000, 'polling to go on for the other router');
      await b.close();
      const after = pilot.hits.discovery.length;
      await new Promise((r) => setTimeout(r, 6000));
      assert.equal(pilot.hits.discovery.length, after, 'polled after the last router closed');
    } finally {
      await pilot.close();
    }
  });
});
