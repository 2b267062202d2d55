// Issue #4 items 8 and 9: the access log line of a routed request, and the stats names of the
// server, service, client and binding-cache scopes (reference §4.2).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { histogramCount, metricNames, startBackend, startRouter, type Backend } from './harness.js';

let backend: Backend;
before(async () => {
  backend = await startBackend('stats', (req, res) => {
    req.resume();
    req.on('end', () => {
      const status = req.url === '/fail' ? 500 : 200;
      const body = status === 200 ? 'twelve bytes' : 'failed';
      res.writeHead(status, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
    });
  });
});
after(() => backend.close());

describe('http access log', () => {
  it('writes one Linkerd-format line per request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-access-'));
    const path = join(dir, 'access.log');
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`, httpAccessLog: path });
    try {
      const r = await request(`${rt.url}/a/b?c=1`, { headers: { host: 'web.example', 'user-agent': 'prx-test/1.0', referer: 'http://ref.example/' } });
      assert.equal(await r.body.text(), 'twelve bytes');
      const f = await request(`${rt.url}/fail`, { method: 'POST', headers: { host: 'web.example' }, body: 'x' });
      await f.body.text();
      await rt.close();
      const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l !== '');
      assert.equal(lines.length, 2);
      assert.match(
        lines[0] as string,
        /^web\.example 127\.0\.0\.1 - - \[\d{2}\/\d{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000\] "GET \/a\/b\?c=1 HTTP\/1\.1" 200 12 "http:\/\/ref\.example\/" "prx-test\/1\.0"$/,
      );
      assert.match(lines[1] as string, /^web\.example 127\.0\.0\.1 - - \[[^\]]+\] "POST \/fail HTTP\/1\.1" 500 6 "-" "[^"]*"$/);
      const day = new Date();
      const stamp = `${String(day.getUTCDate()).padStart(2, '0')}/${String(day.getUTCMonth() + 1).padStart(2, '0')}/${day.getUTCFullYear()}`;
      assert.ok((lines[0] as string).includes(`[${stamp}:`), 'today, UTC, numeric month');
    } finally {
      await rt.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no access log file without httpAccessLog', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-access-'));
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'x' } });
      await r.body.text();
      assert.equal(rt.router.accessLog, undefined);
    } finally {
      await rt.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('http stats names', () => {
  it('server, service, client and bindcache scopes carry the reference’s names', async () => {
    const rt = await startRouter({ dtab: `/svc/dog=>/$/inet/127.0.0.1/${backend.port}`, originator: true });
    try {
      for (const path of ['/', '/', '/fail']) {
        const r = await request(`${rt.url}${path}`, { headers: { host: 'dog' } });
        await r.body.text();
      }
      const nope = await request(`${rt.url}/`, { headers: { host: 'cat' } });
      await nope.body.text();
      const server = `rt/http/server/127.0.0.1/${rt.port}`;
      const service = 'rt/http/service/svc/dog';
      const client = `rt/http/client/$/inet/127.0.0.1/${backend.port}`;
      const expect: Record<string, number> = {
        [`${server}/requests`]: 4,
        [`${server}/success`]: 2,
        [`${server}/failures`]: 2,
        [`${server}/status/200`]: 2,
        [`${server}/status/2XX`]: 2,
        [`${server}/status/500`]: 1,
        [`${server}/status/502`]: 1,
        [`${server}/status/5XX`]: 2,
        [`${server}/pending`]: 0,
        [`${server}/load`]: 0,
        [`${service}/requests`]: 3,
        [`${service}/success`]: 2,
        [`${service}/failures`]: 1,
        [`${service}/retries/total`]: 0,
        [`${service}/retries/budget_exhausted`]: 0,
        [`${client}/requests`]: 3,
        [`${client}/success`]: 2,
        [`${client}/failures`]: 1,
        [`${client}/status/200`]: 2,
        [`${client}/status/500`]: 1,
        [`${client}/status/5XX`]: 1,
        [`${client}/service/svc/dog/requests`]: 3,
        [`${client}/service/svc/dog/success`]: 2,
        [`${client}/retries/requeues`]: 0,
        [`${client}/loadbalancer/size`]: 1,
        [`${client}/loadbalancer/available`]: 1,
        [`${client}/loadbalancer/busy`]: 0,
        [`${client}/loadbalancer/closed`]: 0,
        [`${client}/loadbalancer/load`]: 0,
        [`${client}/loadbalancer/meanweight`]: 1,
        [`${client}/loadbalancer/updates`]: 1,
        [`${client}/loadbalancer/adds`]: 1,
        [`${client}/loadbalancer/removes`]: 0,
        [`${client}/failure_accrual/removals`]: 0,
        [`${client}/failure_accrual/revivals`]: 0,
        [`${client}/connections`]: 1,
        'rt/http/bindcache/path/misses': 2,
        'rt/http/bindcache/client/misses': 1,
        'rt/http/originator': 1,
      };
      const actual: Record<string, number | undefined> = {};
      for (const name of Object.keys(expect)) actual[name] = rt.metric(name);
      assert.deepEqual(actual, expect);
      assert.ok((rt.metric(`${server}/connections`) ?? 0) >= 1);
      assert.ok((rt.metric(`${service}/retries/budget`) ?? -1) >= 0);
      assert.equal(histogramCount(rt, `${server}/request_latency_ms`), 4);
      assert.equal(histogramCount(rt, `${service}/request_latency_ms`), 3);
      assert.equal(histogramCount(rt, `${client}/request_latency_ms`), 3);
      assert.equal(histogramCount(rt, `${service}/retries/per_request`), 3);
      // The name that bound to nothing has service stats but no client.
      assert.equal(rt.metric('rt/http/service/svc/cat/failures'), 1);
      assert.deepEqual(
        metricNames(rt, 'rt/http/client').filter((n) => n.endsWith('/requests') && !n.includes('/service/')),
        [`${client}/requests`],
      );
    } finally {
      await rt.close();
    }
  });
});
