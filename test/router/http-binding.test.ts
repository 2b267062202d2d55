// Issue #4 item 3: binding — request dtab overrides, invalid overrides, Neg, the binding timeout,
// the binding caches (eviction, one-shots, metric pruning) and live re-binding under load.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { eventually, metricNames, mount, pendingNamer, startBackend, startRouter, tempFsNamer, type Backend } from './harness.js';

let cat: Backend;
let dog: Backend;
before(async () => {
  cat = await startBackend('cat');
  dog = await startBackend('dog');
});
after(async () => {
  await cat.close();
  await dog.close();
});

describe('http router binding: dtab overrides and failures', () => {
  it('prx-dtab and prx-ctx-dtab override the router dtab; downstream sees only prx-ctx-dtab', async () => {
    const rt = await startRouter({ dtab: `/cat=>/$/inet/127.0.0.1/${cat.port};/dog=>/$/inet/127.0.0.1/${dog.port};/svc=>/cat` });
    try {
      const plain = await request(`${rt.url}/`, { headers: { host: 'pet' } });
      assert.equal(await plain.body.text(), 'cat');
      assert.equal(cat.requests.at(-1)?.headers['prx-ctx-dtab'], undefined);

      const user = await request(`${rt.url}/`, { headers: { host: 'pet', 'prx-dtab': '/svc=>/dog' } });
      assert.equal(await user.body.text(), 'dog');
      let seen = dog.requests.at(-1);
      assert.equal(seen?.headers['prx-ctx-dtab'], '/svc=>/dog');
      assert.equal(seen?.headers['prx-dtab'], undefined);

      // prx-dtab is appended after prx-ctx-dtab, so it wins; both travel on as one prx-ctx-dtab.
      const both = await request(`${rt.url}/`, { headers: { host: 'pet', 'prx-ctx-dtab': '/svc=>/dog', 'prx-dtab': '/svc=>/cat' } });
      assert.equal(await both.body.text(), 'cat');
      seen = cat.requests.at(-1);
      assert.equal(seen?.headers['prx-ctx-dtab'], '/svc=>/dog;/svc=>/cat');
      assert.equal(seen?.headers['prx-dtab'], undefined);

      const ctxOnly = await request(`${rt.url}/`, { headers: { host: 'pet', 'prx-ctx-dtab': '/svc=>/dog' } });
      assert.equal(await ctxOnly.body.text(), 'dog');
    } finally {
      await rt.close();
    }
  });

  it('an invalid prx-dtab or prx-ctx-dtab is 400 with the parser’s message, and nothing is forwarded', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${cat.port}` });
    try {
      const seen = cat.requests.length;
      for (const header of ['prx-dtab', 'prx-ctx-dtab']) {
        const r = await request(`${rt.url}/`, { headers: { host: 'pet', [header]: 'invalid-param' } });
        const body = await r.body.text();
        assert.equal(r.statusCode, 400);
        assert.equal(body, "'/' expected but 'i' found at '[i]nvalid-param'");
        assert.ok(r.headers['prx-err']);
      }
      assert.equal(cat.requests.length, seen);
    } finally {
      await rt.close();
    }
  });

  it('Neg is 502 with Linkerd’s "Unable to route request!" text listing both dtabs', async () => {
    const rt = await startRouter({ dtab: `/svc/cat=>/$/inet/127.0.0.1/${cat.port};/svc/bird=>~` });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'bird', 'prx-dtab': '/svc/fish=>/$/nil' } });
      const body = await r.body.text();
      assert.equal(r.statusCode, 502);
      assert.equal(
        body,
        'Unable to route request!\n\nservice name: /svc/bird\ndtab:\n\nbase dtab:\n' +
          `  /svc/cat => /$/inet/127.0.0.1/${cat.port}\n  /svc/bird => ~\noverride dtab:\n  /svc/fish => /$/nil\n`,
      );
      assert.equal(r.headers['prx-err'], encodeForm(body));
      assert.equal(r.headers['prx-retryable'], undefined);
      assert.equal(r.headers['content-type'], 'text/plain');
    } finally {
      await rt.close();
    }
  });

  it('a binding that stays pending fails after bindingTimeoutMs with Linkerd’s exact text', async () => {
    const rt = await startRouter(
      { dtab: '/svc=>/#/io.prx.stuck', bindingTimeoutMs: 300 },
      { namers: [mount('io.prx.stuck', pendingNamer)] },
    );
    try {
      const started = performance.now();
      const r = await request(`${rt.url}/`, { headers: { host: 'slow' } });
      const body = await r.body.text();
      const took = performance.now() - started;
      assert.equal(r.statusCode, 502);
      assert.equal(body, 'Exceeded 300.milliseconds binding timeout while resolving name: /svc/slow');
      assert.ok(took >= 290 && took < 2000, `answered after ${took} ms`);
      // A second request to the same (still pending) name times out too, from its own start.
      const r2 = await request(`${rt.url}/`, { headers: { host: 'slow' } });
      assert.equal(r2.statusCode, 502);
      assert.match(await r2.body.text(), /^Exceeded 300\.milliseconds binding timeout/);
      assert.equal(rt.metric(`rt/http/server/127.0.0.1/${rt.port}/status/502`), 2);
    } finally {
      await rt.close();
    }
  });

  it('a namer failure is a 502 naming the cause', async () => {
    const rt = await startRouter({ dtab: '/svc=>/$/fail' });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'x' } });
      assert.equal(r.statusCode, 502);
      assert.ok(r.headers['prx-err']);
      assert.match(await r.body.text(), /\/svc\/x/);
    } finally {
      await rt.close();
    }
  });
});

describe('http router binding: caches', () => {
  it('a full path cache evicts the idle entry and prunes its metrics; busy entries give one-shots', async () => {
    const held: ServerResponse[] = [];
    let arrived: () => void = () => {};
    const holding = await startBackend('hold', (req, res) => {
      req.resume();
      held.push(res);
      arrived();
    });
    const rt = await startRouter({
      dtab: `/svc/cat=>/$/inet/127.0.0.1/${cat.port};/svc/dog=>/$/inet/127.0.0.1/${dog.port};/svc/hold=>/$/inet/127.0.0.1/${holding.port}`,
      bindingCache: { paths: 1, clients: 1 },
    });
    try {
      const get = async (host: string): Promise<string> => {
        const r = await request(`${rt.url}/`, { headers: { host } });
        assert.equal(r.statusCode, 200);
        return r.body.text();
      };
      assert.equal(await get('cat'), 'cat');
      assert.equal(rt.metric('rt/http/service/svc/cat/requests'), 1);
      assert.equal(rt.metric(`rt/http/client/$/inet/127.0.0.1/${cat.port}/requests`), 1);
      assert.equal(rt.metric('rt/http/bindcache/path/misses'), 1);
      assert.equal(rt.metric('rt/http/bindcache/path/evicts'), 0);

      assert.equal(await get('dog'), 'dog');
      assert.equal(rt.metric('rt/http/bindcache/path/misses'), 2);
      assert.equal(rt.metric('rt/http/bindcache/path/evicts'), 1);
      assert.equal(rt.metric('rt/http/bindcache/client/evicts'), 1);
      assert.deepEqual(metricNames(rt, 'rt/http/service/svc/cat'), [], 'evicted service metrics are pruned');
      assert.deepEqual(metricNames(rt, `rt/http/client/$/inet/127.0.0.1/${cat.port}`), [], 'evicted client metrics are pruned');
      assert.equal(rt.metric('rt/http/service/svc/dog/requests'), 1);

      // cat again: a miss that evicts dog; counting starts afresh.
      assert.equal(await get('cat'), 'cat');
      assert.equal(rt.metric('rt/http/bindcache/path/evicts'), 2);
      assert.equal(rt.metric('rt/http/service/svc/cat/requests'), 1);

      // While a request holds the only slot, another name is served by a one-shot entry.
      const waiting = new Promise<void>((r) => (arrived = r));
      const slow = request(`${rt.url}/`, { headers: { host: 'hold' } });
      await waiting;
      assert.equal(await get('dog'), 'dog');
      assert.equal(rt.metric('rt/http/bindcache/path/oneshots'), 1);
      assert.deepEqual(metricNames(rt, 'rt/http/service/svc/dog'), [], 'a one-shot entry leaves no metrics behind');
      (held[0] as ServerResponse).end('held');
      const s = await slow;
      assert.equal(await s.body.text(), 'held');
    } finally {
      await rt.close();
      await holding.close();
    }
  });

  it('idle entries expire after idleTtlSecs', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${cat.port}`, bindingCache: { idleTtlSecs: 1 } });
    try {
      const r = await request(`${rt.url}/`, { headers: { host: 'cat' } });
      await r.body.text();
      assert.equal(rt.router.paths.size, 1);
      await eventually(() => rt.router.paths.size === 0, 5000, 'the idle path entry to expire');
      assert.equal(rt.metric('rt/http/bindcache/path/idle_expired'), 1);
      assert.deepEqual(metricNames(rt, 'rt/http/service/svc/cat'), []);
    } finally {
      await rt.close();
    }
  });
});

describe('http router binding: live re-binding under load', () => {
  it('an fs namer file rewritten under load moves traffic with zero failed requests', async () => {
    const fs = tempFsNamer({ web: `127.0.0.1 ${cat.port}\n` });
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs' }, { namers: [fs.mounted] });
    const statuses = new Map<number, number>();
    const bodies = new Map<string, number>();
    let stop = false;
    const loop = async (): Promise<void> => {
      while (!stop) {
        const r = await request(`${rt.url}/`, { headers: { host: 'web' } });
        const body = await r.body.text();
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
        bodies.set(body, (bodies.get(body) ?? 0) + 1);
      }
    };
    try {
      const loops = [loop(), loop(), loop(), loop()];
      await eventually(() => (bodies.get('cat') ?? 0) >= 100, 5000, 'traffic to cat');
      fs.write('web', `127.0.0.1 ${dog.port}\n`);
      await eventually(() => (bodies.get('dog') ?? 0) >= 100, 5000, 'traffic to move to dog');
      fs.write('web', `127.0.0.1 ${cat.port}\n127.0.0.1 ${dog.port}\n`);
      const catBefore = bodies.get('cat') ?? 0;
      await eventually(() => (bodies.get('cat') ?? 0) >= catBefore + 100, 5000, 'traffic on both');
      stop = true;
      await Promise.all(loops);
      assert.deepEqual([...statuses.keys()], [200], `every request succeeded: ${JSON.stringify([...statuses])}`);
      assert.deepEqual([...bodies.keys()].sort(), ['cat', 'dog']);
      assert.equal(rt.metric('rt/http/service/svc/web/failures'), 0);
      assert.equal(rt.metric('rt/http/bindcache/path/misses'), 1, 'one path entry, re-bound in place');
      assert.equal(rt.metric('rt/http/client/#/io.prx.fs/web/loadbalancer/size'), 2);
    } finally {
      stop = true;
      await rt.close();
      fs.close();
    }
  });
});

/** Java's URLEncoder (form encoding): what prx-err carries. */
function encodeForm(text: string): string {
  return encodeURIComponent(text)
    .replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
