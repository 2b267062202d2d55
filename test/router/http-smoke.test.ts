import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

describe('http router: end to end', () => {
  let a: Backend;
  let rt: RouterUnderTest;
  before(async () => {
    a = await startBackend('cat');
    rt = await startRouter({ dtab: `/svc/cat=>/$/inet/127.0.0.1/${a.port}` });
  });
  after(async () => {
    await rt.close();
    await a.close();
  });

  it('routes by Host through the dtab and sets the prx headers', async () => {
    const r = await request(`${rt.url}/hello?x=1`, { headers: { host: 'cat' } });
    assert.equal(r.statusCode, 200);
    assert.equal(await r.body.text(), 'cat');
    const seen = a.requests.at(-1);
    assert.ok(seen);
    assert.equal(seen.url, '/hello?x=1');
    assert.equal(seen.headers['prx-dst-service'], '/svc/cat');
    assert.equal(seen.headers['prx-dst-client'], `/$/inet/127.0.0.1/${a.port}`);
    assert.equal(seen.headers['prx-dst-residual'], undefined);
    assert.match(String(seen.headers['via']), /1\.1 prx/);
    assert.equal(r.headers['x-backend'], 'cat');
  });

  it('answers 502 with prx-err for a name that binds to nothing', async () => {
    const r = await request(`${rt.url}/`, { headers: { host: 'dog' } });
    assert.equal(r.statusCode, 502);
    const body = await r.body.text();
    assert.match(body, /^Unable to route request!/);
    assert.match(body, /service name: \/svc\/dog/);
    assert.ok(r.headers['prx-err']);
  });

  it('counts server, service and client stats', async () => {
    const r = await request(`${rt.url}/`, { headers: { host: 'cat' } });
    await r.body.text();
    const server = `rt/http/server/127.0.0.1/${rt.port}`;
    assert.ok((rt.metric(`${server}/requests`) ?? 0) >= 3);
    assert.ok((rt.metric('rt/http/service/svc/cat/requests') ?? 0) >= 2);
    assert.ok((rt.metric(`rt/http/client/$/inet/127.0.0.1/${a.port}/requests`) ?? 0) >= 2);
  });
});
