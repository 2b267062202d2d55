// Issue #4 item 5: service policy — classified retries (Linkerd's retryTest numbers), the
// prx-retryable upgrade, chunked requests never retried, the retry budget and backoff,
// totalTimeoutMs, and io.prx.static service and client configs chosen by prefix.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { after, before, beforeEach, describe, it } from 'node:test';
import { request } from 'undici';
import { histogramCount, startBackend, startRouter, type Backend, type RouterUnderTest } from './harness.js';

/**
 * A backend that fails the first attempt of each request (500, or `firstStatus`), identified by
 * its `x-id` header, and answers 200 to every later attempt. Records the bodies it received.
 */
interface Flaky extends Backend {
  attempts: Map<string, number>;
  bodies: string[];
  firstHeaders: Record<string, string>;
  firstStatus: number;
}

async function startFlaky(): Promise<Flaky> {
  const state = { attempts: new Map<string, number>(), bodies: [] as string[], firstHeaders: {} as Record<string, string>, firstStatus: 500 };
  // The handler reads the returned object, so tests can change firstStatus/firstHeaders.
  const ref: { self?: Flaky } = {};
  const b = await startBackend('flaky', (req: IncomingMessage, res: ServerResponse) => {
    const state = ref.self as Flaky;
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      state.bodies.push(body);
      const id = String(req.headers['x-id']);
      const n = (state.attempts.get(id) ?? 0) + 1;
      state.attempts.set(id, n);
      if (n === 1) {
        res.writeHead(state.firstStatus, { 'content-type': 'text/plain', ...state.firstHeaders });
        res.end('first attempt failed');
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`ok after ${n} attempts`);
      }
    });
  });
  ref.self = Object.assign(b, state);
  return ref.self;
}

let flaky: Flaky;
let seq = 0;
before(async () => {
  flaky = await startFlaky();
});
after(() => flaky.close());
beforeEach(() => {
  flaky.firstHeaders = {};
  flaky.firstStatus = 500;
});

async function send(rt: RouterUnderTest, method: string, opts: { host?: string; body?: string | Readable } = {}): Promise<{ status: number; body: string; id: string }> {
  const id = `r${++seq}`;
  const r = await request(`${rt.url}/`, { method, headers: { host: opts.host ?? 'dog', 'x-id': id }, body: opts.body ?? null });
  return { status: r.statusCode, body: await r.body.text(), id };
}

const SERVER = (rt: RouterUnderTest): string => `rt/http/server/127.0.0.1/${rt.port}`;

describe('http service policy: retries', () => {
  it('retryableRead5XX: a GET whose first attempt is 500 is retried to 200 (Linkerd’s numbers)', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}`,
      service: { responseClassifier: { kind: 'io.prx.http.retryableRead5XX' } },
    });
    try {
      const r = await send(rt, 'GET');
      assert.equal(r.status, 200);
      assert.equal(r.body, 'ok after 2 attempts');
      const client = `rt/http/client/$/inet/127.0.0.1/${flaky.port}`;
      assert.equal(rt.metric(`${SERVER(rt)}/requests`), 1);
      assert.equal(rt.metric(`${SERVER(rt)}/success`), 1);
      assert.equal(rt.metric(`${SERVER(rt)}/failures`), 0);
      assert.equal(rt.metric(`${client}/requests`), 2);
      assert.equal(rt.metric(`${client}/success`), 1);
      assert.equal(rt.metric(`${client}/failures`), 1);
      assert.equal(rt.metric(`${client}/status/500`), 1);
      assert.equal(rt.metric(`${client}/status/200`), 1);
      assert.equal(rt.metric('rt/http/service/svc/dog/requests'), 1);
      assert.equal(rt.metric('rt/http/service/svc/dog/success'), 1);
      assert.equal(rt.metric('rt/http/service/svc/dog/retries/total'), 1);
      assert.equal(histogramCount(rt, 'rt/http/service/svc/dog/retries/per_request'), 1);
      for (const m of ['HEAD', 'OPTIONS', 'TRACE']) assert.equal((await send(rt, m)).status, 200, `${m} retried`);
      assert.equal(rt.metric('rt/http/service/svc/dog/retries/total'), 4);
    } finally {
      await rt.close();
    }
  });

  it('retryableRead5XX does not retry a POST; nonRetryable5XX (default) retries nothing', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}`,
      service: { responseClassifier: { kind: 'io.prx.http.retryableRead5XX' } },
    });
    const dflt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}` });
    try {
      const r = await send(rt, 'POST', { body: 'payload' });
      assert.equal(r.status, 500);
      assert.equal(r.body, 'first attempt failed');
      assert.equal(flaky.attempts.get(r.id), 1);
      assert.equal(rt.metric(`${SERVER(rt)}/failures`), 1);
      assert.equal(rt.metric(`rt/http/client/$/inet/127.0.0.1/${flaky.port}/requests`), 1);
      assert.equal(rt.metric('rt/http/service/svc/dog/retries/total'), 0);
      const g = await send(dflt, 'GET');
      assert.equal(g.status, 500);
      assert.equal(flaky.attempts.get(g.id), 1);
    } finally {
      await rt.close();
      await dflt.close();
    }
  });

  it('retryableAll5XX retries a POST and replays its body; retryableIdempotent5XX retries PUT, not POST', async () => {
    const all = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}`,
      service: { responseClassifier: { kind: 'io.prx.http.retryableAll5XX' } },
    });
    const idem = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}`,
      service: { responseClassifier: { kind: 'io.prx.http.retryableIdempotent5XX' } },
    });
    try {
      const before = flaky.bodies.length;
      const r = await send(all, 'POST', { body: 'same body twice' });
      assert.equal(r.status, 200);
      assert.deepEqual(flaky.bodies.slice(before), ['same body twice', 'same body twice']);
      assert.equal((await send(idem, 'PUT', { body: 'x' })).status, 200);
      assert.equal((await send(idem, 'DELETE')).status, 200);
      assert.equal((await send(idem, 'POST', { body: 'x' })).status, 500);
    } finally {
      await all.close();
      await idem.close();
    }
  });

  it('a response with prx-retryable: true is retried even under nonRetryable5XX (any method)', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}` });
    try {
      flaky.firstStatus = 502;
      flaky.firstHeaders = { 'prx-retryable': 'true', 'prx-err': 'Max+waiters+exceeded' };
      const r = await send(rt, 'POST', { body: 'once more' });
      assert.equal(r.status, 200);
      assert.equal(flaky.attempts.get(r.id), 2);
      assert.equal(rt.metric('rt/http/service/svc/dog/retries/total'), 1);
    } finally {
      await rt.close();
    }
  });

  it('a chunked request is never retried', async () => {
    const rt = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}`,
      service: { responseClassifier: { kind: 'io.prx.http.retryableAll5XX' } },
    });
    try {
      const before = flaky.bodies.length;
      const r = await send(rt, 'POST', { body: Readable.from([Buffer.from('chunk-1 '), Buffer.from('chunk-2')]) });
      assert.equal(r.status, 500);
      assert.equal(flaky.attempts.get(r.id), 1);
      assert.deepEqual(flaky.bodies.slice(before), ['chunk-1 chunk-2']);
      assert.equal(rt.metric('rt/http/service/svc/dog/retries/total'), 0);
    } finally {
      await rt.close();
    }
  });

  it('an exhausted retry budget stops retries (budget_exhausted counted); backoff delays the retry', async () => {
    const none = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}`,
      service: {
        responseClassifier: { kind: 'io.prx.http.retryableRead5XX' },
        retries: { budget: { minRetriesPerSec: 0, percentCanRetry: 0 } },
      },
    });
    const slow = await startRouter({
      dtab: `/svc=>/$/inet/127.0.0.1/${flaky.port}`,
      service: {
        responseClassifier: { kind: 'io.prx.http.retryableRead5XX' },
        retries: { backoff: { kind: 'constant', ms: 200 } },
      },
    });
    try {
      const r = await send(none, 'GET');
      assert.equal(r.status, 500);
      assert.equal(none.metric('rt/http/service/svc/dog/retries/budget_exhausted'), 1);
      assert.equal(none.metric('rt/http/service/svc/dog/retries/total'), 0);
      const started = performance.now();
      const s = await send(slow, 'GET');
      const took = performance.now() - started;
      assert.equal(s.status, 200);
      assert.ok(took >= 190, `the retry waited for the backoff (${Math.round(took)} ms)`);
    } finally {
      await none.close();
      await slow.close();
    }
  });
});

describe('http service policy: timeouts and static configs', () => {
  let silent: Backend;
  const hung: ServerResponse[] = [];
  let fine: Backend;
  before(async () => {
    silent = await startBackend('silent', (req, res) => {
      req.resume();
      hung.push(res);
    });
    fine = await startBackend('fine');
  });
  after(async () => {
    for (const r of hung) r.destroy();
    await silent.close();
    await fine.close();
  });

  it('totalTimeoutMs → 503 with prx-err and the timeout text', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${silent.port}`, service: { totalTimeoutMs: 250 } });
    try {
      const started = performance.now();
      const r = await request(`${rt.url}/`, { headers: { host: 'dog' } });
      const body = await r.body.text();
      const took = performance.now() - started;
      assert.equal(r.statusCode, 503);
      assert.equal(
        body,
        'exceeded 250.milliseconds to /svc/dog while waiting for a response for the request, including retries (if applicable). Remote Info: Not Available',
      );
      assert.ok(r.headers['prx-err']);
      assert.ok(took >= 240 && took < 2000, `took ${took} ms`);
      assert.equal(rt.metric(`${SERVER(rt)}/status/503`), 1);
    } finally {
      await rt.close();
    }
  });

  it('io.prx.static service configs: matching prefixes layer, later ones win', async () => {
    const rt = await startRouter({
      dtab: `/svc/retry=>/$/inet/127.0.0.1/${flaky.port};/svc/plain=>/$/inet/127.0.0.1/${flaky.port};/svc/slow=>/$/inet/127.0.0.1/${silent.port}`,
      service: {
        kind: 'io.prx.static',
        configs: [
          { prefix: '/svc', responseClassifier: { kind: 'io.prx.http.retryableRead5XX' }, totalTimeoutMs: 5000 },
          { prefix: '/svc/plain', responseClassifier: { kind: 'io.prx.http.nonRetryable5XX' } },
          { prefix: '/svc/*', totalTimeoutMs: 200 },
        ],
      },
    });
    try {
      assert.equal((await send(rt, 'GET', { host: 'retry' })).status, 200);
      assert.equal(rt.metric('rt/http/service/svc/retry/retries/total'), 1);
      assert.equal((await send(rt, 'GET', { host: 'plain' })).status, 500);
      assert.equal(rt.metric('rt/http/service/svc/plain/retries/total'), 0);
      const started = performance.now();
      const s = await send(rt, 'GET', { host: 'slow' });
      assert.equal(s.status, 503);
      assert.match(s.body, /^exceeded 200\.milliseconds to \/svc\/slow /);
      assert.ok(performance.now() - started < 2000);
    } finally {
      await rt.close();
    }
  });

  it('io.prx.static client configs by prefix, with * segments, later ones winning', async () => {
    const rt = await startRouter({
      dtab: `/svc/slow=>/$/inet/127.0.0.1/${silent.port};/svc/fine=>/$/inet/127.0.0.1/${fine.port}`,
      client: {
        kind: 'io.prx.static',
        configs: [
          { prefix: '/$/inet/*/*', requestAttemptTimeoutMs: 10000 },
          { prefix: `/$/inet/127.0.0.1/${silent.port}`, requestAttemptTimeoutMs: 200 },
        ],
      },
    });
    try {
      const s = await send(rt, 'GET', { host: 'slow' });
      assert.equal(s.status, 503);
      assert.match(s.body, new RegExp(`^exceeded 200\\.milliseconds to /\\$/inet/127\\.0\\.0\\.1/${silent.port} `));
      const f = await send(rt, 'GET', { host: 'fine' });
      assert.equal(f.status, 200);
      assert.equal(f.body, 'fine');
    } finally {
      await rt.close();
    }
  });
});
