// The client's requeue budget through a real http router (Finagle's RequeueFilter: connection
// failures are sent again at once, within `requeueBudget` and at most 25 times per request), the
// `engine` key on servers and clients, and the http server's default port.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { ConfigError, loadProxyConfig, validateProxyConfig } from '../../src/config/index.js';
import { freePort, startBackend, startRouter, tempFsNamer, type Backend, type RouterUnderTest, type TempFsNamer } from './harness.js';

const DEAD = 'rt/http/client/#/io.prx.fs/dead';

async function get(rt: RouterUnderTest, host: string): Promise<{ status: number; body: string; err: unknown }> {
  const r = await request(`${rt.url}/`, { headers: { host } });
  return { status: r.statusCode, body: await r.body.text(), err: r.headers['prx-err'] };
}

describe('requeueBudget: every endpoint refuses connections', () => {
  let fs: TempFsNamer;
  let live: Backend;
  let dead: number[];
  before(async () => {
    live = await startBackend('live');
    dead = [await freePort(), await freePort(), await freePort()];
    fs = tempFsNamer({ dead: dead.map((p) => `127.0.0.1 ${p}\n`).join(''), live: `127.0.0.1 ${live.port}\n` });
  });
  after(async () => {
    await live.close();
    fs.close();
  });

  /** A router whose clients get `params` (failure accrual off: no endpoint sits out, each pick is an attempt). */
  const route = (params: Record<string, unknown>): Promise<RouterUnderTest> =>
    startRouter(
      { dtab: '/svc=>/#/io.prx.fs', client: { kind: 'io.prx.static', configs: [{ prefix: '/#/io.prx.fs/*', failureAccrual: { kind: 'none' }, ...params }] } },
      { namers: [fs.mounted] },
    );

  /** Sends `n` requests to the dead name: each is a 502 connection failure naming a dead endpoint. */
  async function failAll(rt: RouterUnderTest, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const r = await get(rt, 'dead');
      assert.equal(r.status, 502);
      assert.ok(r.err !== undefined, 'prx-err is set');
      assert.match(r.body, /^Unable to establish connection to 127\.0\.0\.1:(\d+)\.\n/);
      const port = Number(/:(\d+)\./.exec(r.body)?.[1]);
      assert.ok(dead.includes(port), `a dead endpoint: ${port}`);
    }
  }

  /** Connection attempts (every attempt failed), requeues and exhausted budgets, as the client counted them. */
  function counts(rt: RouterUnderTest): { attempts: number; requeues: number; exhausted: number } {
    assert.equal(rt.metric(`${DEAD}/failures`), rt.metric(`${DEAD}/requests`));
    return {
      attempts: rt.metric(`${DEAD}/requests`) ?? 0,
      requeues: rt.metric(`${DEAD}/retries/requeues`) ?? 0,
      exhausted: rt.metric(`${DEAD}/retries/budget_exhausted`) ?? 0,
    };
  }

  it('percentCanRetry 0.5 without a reserve: one requeue per two requests', async () => {
    const rt = await route({ requeueBudget: { minRetriesPerSec: 0, percentCanRetry: 0.5 } });
    try {
      await failAll(rt, 10);
      // Each request deposits half a requeue: every second one can afford one, and then none is left.
      assert.deepEqual(counts(rt), { attempts: 15, requeues: 5, exhausted: 10 });
      assert.equal(rt.metric(`${DEAD}/retries/budget`), 0);
      // Requeues are the client's; the service's retry budget was not touched.
      assert.equal(rt.metric('rt/http/service/svc/dead/retries/budget_exhausted'), 0);
      assert.equal(rt.metric('rt/http/service/svc/dead/requests'), 10);
      assert.equal(rt.metric(`rt/http/server/127.0.0.1/${rt.port}/status/502`), 10);
    } finally {
      await rt.close();
    }
  });

  it('minRetriesPerSec × ttlSecs is a reserve of requeues even with percentCanRetry 0', async () => {
    const rt = await route({ requeueBudget: { minRetriesPerSec: 1, percentCanRetry: 0, ttlSecs: 10 } });
    try {
      await failAll(rt, 2);
      // The first request spends the reserve of ten; the second finds it empty.
      assert.deepEqual(counts(rt), { attempts: 12, requeues: 10, exhausted: 2 });
    } finally {
      await rt.close();
    }
  });

  it('a generous budget still stops at 25 requeues per request', async () => {
    const rt = await route({ requeueBudget: { minRetriesPerSec: 1000 } });
    try {
      await failAll(rt, 1);
      assert.deepEqual(counts(rt), { attempts: 26, requeues: 25, exhausted: 0 });
    } finally {
      await rt.close();
    }
  });

  it('the default budget (10 per second over 10 s, plus 20 %) allows 100 requeues, plus one per five requests', async () => {
    const rt = await route({});
    try {
      assert.equal((await get(rt, 'live')).status, 200);
      assert.equal(rt.metric('rt/http/client/#/io.prx.fs/live/retries/budget'), 100);
      // Four requests take 25 requeues each; the fifth has the one its five deposits bought.
      await failAll(rt, 5);
      assert.deepEqual(counts(rt), { attempts: 106, requeues: 101, exhausted: 1 });
      assert.equal(rt.metric(`${DEAD}/retries/budget`), 0);
    } finally {
      await rt.close();
    }
  });
});

describe('engine: engine3 and engine4 both route', () => {
  let backend: Backend;
  before(async () => {
    backend = await startBackend('b');
  });
  after(async () => {
    await backend.close();
  });

  const cases: [string, Record<string, unknown>][] = [
    ['server engine4, client engine3', { servers: [{ engine: { kind: 'engine4' } }], client: { kind: 'io.prx.global', engine: { kind: 'engine3' } } }],
    ['server engine3, client engine4 per prefix', { servers: [{ engine: { kind: 'engine3' } }], client: { kind: 'io.prx.static', configs: [{ prefix: '/$/inet', engine: { kind: 'engine4' } }] } }],
    ['client engine4 alone', { client: { engine: { kind: 'engine4' } } }],
  ];
  for (const [what, cfg] of cases) {
    it(what, async () => {
      const servers = (cfg['servers'] as Record<string, unknown>[] | undefined)?.map(async (s) => ({ ...s, port: await freePort() }));
      const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`, ...cfg, ...(servers ? { servers: await Promise.all(servers) } : {}) });
      try {
        assert.deepEqual(await get(rt, 'x'), { status: 200, body: 'b', err: undefined });
      } finally {
        await rt.close();
      }
    });
  }

  it('is a server and client key: an unknown engine, or one on the router itself, is refused', () => {
    const router = (extra: Record<string, unknown>): unknown => ({ routers: [{ protocol: 'http', dtab: '/svc=>/$/inet/1', servers: [{ port: 4999 }], ...extra }] });
    const refused = (raw: unknown, line: RegExp): void => {
      assert.throws(
        () => validateProxyConfig(raw),
        (e: unknown) => e instanceof ConfigError && e.lines.some((l) => line.test(l)),
      );
    };
    refused(router({ engine: { kind: 'engine4' } }), /^routers\[0\]\.engine: unknown key/);
    refused(router({ servers: [{ port: 4999, engine: { kind: 'engine5' } }] }), /^routers\[0\]\.servers\[0\]\.engine\.kind: .*engine5/);
    refused(router({ client: { engine: { kind: 'netty4' } } }), /^routers\[0\]\.client\.engine\.kind: .*netty4/);
  });
});

describe('http server default port', () => {
  /** Loads config text through the loader, as `prx -` reads it from standard input: each router's servers. */
  async function load(text: string): Promise<[string, number][][]> {
    const cfg = await loadProxyConfig('-', { stdin: Readable.from([text]) });
    return cfg.routers.map((r) => (r as unknown as { servers: { port: number; ip: string }[] }).servers.map((s) => [s.ip, s.port]));
  }

  it('a server without a port listens on 4140 (Linkerd’s http default), on loopback unless told', async () => {
    const yaml = [
      'routers:',
      '- protocol: http',
      '  dtab: /svc => /$/inet/127.0.0.1/8080;',
      '  servers:',
      '  - {}',
      '  - port: 4141',
      '- protocol: http',
      '  label: other',
      '  servers:',
      '  - ip: 127.0.0.2',
      '',
    ].join('\n');
    assert.deepEqual(await load(yaml), [
      [
        ['127.0.0.1', 4140],
        ['127.0.0.1', 4141],
      ],
      [['127.0.0.2', 4140]],
    ]);
    // Two servers left to the default collide on it; a router without servers is refused (the spec: required).
    const refused = (line: string) => (e: unknown) => e instanceof ConfigError && e.lines.includes(line);
    await assert.rejects(
      load('routers:\n- protocol: http\n  servers:\n  - {}\n  - ip: 127.0.0.1\n'),
      refused('routers[0].servers[1]: 127.0.0.1:4140 conflicts with routers[0].servers[0] (127.0.0.1:4140)'),
    );
    await assert.rejects(load('routers:\n- protocol: http\n'), refused('routers[0].servers: required key is missing'));
  });
});
