// io.prx.orch in the assembled proxy: config errors at their key paths, a start-up error for
// io.prx.orch.ns without its environment variable, HTTP routed to real backends through
// /#/io.prx.orch/… with the namer's admin state and enumeration, and a redeploy (every endpoint
// replaced, the old backends shut down at once) followed under steady load with zero failed requests;
// and the resolver binding through the same namer.
import assert from 'node:assert/strict';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { resolverAdmin } from '../../src/cli/prx-resolver.js';
import { ConfigError, validateProxyConfig } from '../../src/config/index.js';
import { validateResolverConfig } from '../../src/config/resolver-config.js';
import '../../src/resolver/builtins.js';
import { ResolverProcess } from '../../src/resolver/process.js';
import { quietLogs } from '../admin/helpers.js';
import { ENDPOINTS } from '../../src/protocol/orch/index.js';
import { FakeOrchApi } from '../helpers/fake-orch-api.js';
import { freePort, routerPort, start, type Started } from '../cli/proxy-helpers.js';

const started: Started[] = [];
const fakes: FakeOrchApi[] = [];
const servers: Server[] = [];
after(async () => {
  await Promise.all(started.map((s) => s.proxy.shutdown()));
  await Promise.all(fakes.map((f) => f.close()));
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A backend answering its name; `stop` stops accepting, lets requests in flight finish, then closes. */
async function backend(name: string): Promise<{ port: number; served: () => number; stop: () => Promise<void> }> {
  let served = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      served++;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(name);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    served: () => served,
    stop: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), 200).unref();
    }),
  };
}

/** An Endpoints object with one subset per backend (each listens on its own port of 127.0.0.1). */
function endpointsOf(name: string, ports: number[]) {
  return {
    metadata: { name, namespace: 'default' },
    subsets: ports.map((port) => ({ addresses: [{ ip: '127.0.0.1', nodeName: 'node-1' }], ports: [{ name: 'http', port }] })),
  };
}

function configError(raw: Record<string, unknown>): string {
  try {
    validateProxyConfig(raw);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.message;
  }
  assert.fail('the config was accepted');
}

describe('io.prx.orch in the proxy', () => {
  it('refuses bad keys at their paths, and io.prx.orch.ns without its environment variable at start-up', async () => {
    const router = { protocol: 'http', dtab: '/svc=>/#/io.prx.orch/default/http', servers: [{ port: 4140 }] };
    assert.match(configError({ namers: [{ kind: 'io.prx.orch', port: 0 }], routers: [router] }), /namers\[0\]\.port/);
    assert.match(configError({ namers: [{ kind: 'io.prx.orch', labelSelector: 'not a key!' }], routers: [router] }), /namers\[0\]\.labelSelector: expected a label key/);
    assert.match(configError({ namers: [{ kind: 'io.prx.orch', idleTtlMs: -1 }], routers: [router] }), /namers\[0\]\.idleTtlMs/);
    assert.match(configError({ namers: [{ kind: 'io.prx.orch', namespace: 'x' }], routers: [router] }), /namers\[0\].*namespace/);
    assert.match(configError({ namers: [{ kind: 'io.prx.orch.ns', envVar: '' }], routers: [router] }), /namers\[0\]\.envVar/);
    assert.match(configError({ namers: [{ kind: 'io.prx.orch.external' }], routers: [router] }), /namers\[0\].*experimental/);
    const envVar = `PRX_TEST_NO_SUCH_NAMESPACE_VAR_${process.pid}`;
    await assert.rejects(
      start({ admin: { port: await freePort() }, namers: [{ kind: 'io.prx.orch.ns', host: '127.0.0.1', envVar }], routers: [{ ...router, servers: [{ port: await freePort() }] }] }),
      (e: Error) => {
        assert.match(e.message, new RegExp(`${envVar} \\(envVar\\) is not set`));
        return true;
      },
    );
  });

  it('routes HTTP through /#/io.prx.orch, shows /namer_state and /bound-names.json, and follows a redeploy under load with zero failures', async () => {
    const api = await new FakeOrchApi().start();
    fakes.push(api);
    const old = [await backend('old-1'), await backend('old-2')];
    api.put(ENDPOINTS, endpointsOf('users', old.map((b) => b.port)));
    const s = await start({
      admin: { port: await freePort() },
      namers: [{ kind: 'io.prx.orch', host: '127.0.0.1', port: api.port }],
      routers: [{
        protocol: 'http',
        label: 'web',
        dtab: '/svc => /#/io.prx.orch/default/http',
        service: {
          kind: 'io.prx.static',
          configs: [{
            prefix: '/svc/*',
            responseClassifier: { kind: 'io.prx.http.retryableRead5XX' },
            retries: { budget: { percentCanRetry: 1, minRetriesPerSec: 1000 }, backoff: { kind: 'constant', ms: 5 } },
          }],
        },
        servers: [{ port: await freePort(), ip: '127.0.0.1' }],
      }],
    });
    started.push(s);
    const url = `http://127.0.0.1:${routerPort(s.proxy, 'web')}/`;
    const agent = new Agent({ connections: 8 });
    const get = async (): Promise<[number, string]> => {
      const r = await request(url, { headers: { host: 'users' }, dispatcher: agent });
      return [r.statusCode, await r.body.text()];
    };
    const [status, body] = await get();
    assert.equal(status, 200);
    assert.match(body, /^old-[12]$/);

    const state = await (await request(`${s.admin}/namer_state/io.prx.orch.json`)).body.json() as { kind: string; api: string; watches: { resource: string; name: string; users: number }[] };
    assert.equal(state.kind, 'io.prx.orch');
    assert.equal(state.api, `http://127.0.0.1:${api.port}`);
    assert.deepEqual(state.watches.map((w) => [w.resource, w.name]), [['Endpoints', 'users']]);
    assert.ok((state.watches[0]?.users ?? 0) >= 1);
    const names = await (await request(`${s.admin}/bound-names.json`)).body.json() as string[];
    assert.ok(names.includes('/#/io.prx.orch/default/http/users'), JSON.stringify(names));

    // Steady load: 4 clients in a loop.
    let running = true;
    const failures: string[] = [];
    const seen: { at: number; body: string }[] = [];
    const loops = [0, 1, 2, 3].map(async () => {
      while (running) {
        try {
          const [st, b] = await get();
          if (st !== 200) failures.push(`${st} ${b}`);
          else seen.push({ at: performance.now(), body: b });
        } catch (e) {
          failures.push(String(e));
        }
      }
    });
    await until(() => seen.length > 50, 'traffic on the old deploy');
    const fresh = [await backend('new-1'), await backend('new-2')];
    await until(() => api.openWatches(ENDPOINTS) === 1, 'the watch to be open');
    const redeployAt = performance.now();
    api.put(ENDPOINTS, endpointsOf('users', fresh.map((b) => b.port)));
    // The old pods go away at once: requests already on them finish, new ones must go elsewhere.
    await Promise.all(old.map((b) => b.stop()));
    const firstNew = await until(() => seen.find((x) => x.at > redeployAt && x.body.startsWith('new-')), 'traffic on the new deploy');
    const servedBefore = seen.length;
    await until(() => seen.length > servedBefore + 100, 'more traffic after the redeploy');
    running = false;
    await Promise.all(loops);
    await agent.close();
    assert.deepEqual(failures, [], 'no request failed across the redeploy');
    assert.ok(seen.slice(-50).every((x) => x.body.startsWith('new-')), 'only the new deploy serves');
    assert.ok(fresh.every((b) => b.served() > 0), 'both new backends serve');
    assert.ok(firstNew.at - redeployAt < 5000, `routing followed the redeploy (${(firstNew.at - redeployAt).toFixed(1)} ms)`);
  });
});

describe('io.prx.orch in the resolver', () => {
  it('binds names through the namer, live, with /namer_state and /bound-names.json on its admin', async () => {
    const api = await new FakeOrchApi().start();
    fakes.push(api);
    api.put(ENDPOINTS, endpointsOf('users', [8080]));
    const cfg = validateResolverConfig({
      admin: { port: await freePort() },
      interfaces: [{ kind: 'io.prx.httpController', port: await freePort() }],
      storage: { kind: 'io.prx.inMemory', namespaces: { default: '/svc => /#/io.prx.orch/default/http' } },
      namers: [{ kind: 'io.prx.orch', host: '127.0.0.1', port: api.port }],
    });
    const proc = await ResolverProcess.start(cfg, { logs: quietLogs().logs, buildAdmin: resolverAdmin });
    try {
      const ctl = proc.parts.interfaces[0]?.url ?? '';
      const admin = proc.admin?.url ?? '';
      const resolve = async (): Promise<unknown> => (await request(`${ctl}/api/1/resolve/default?path=/svc/users`)).body.json();
      assert.deepEqual(await resolve(), { type: 'bound', addrs: [{ ip: '127.0.0.1', port: 8080, meta: { nodeName: 'node-1' } }], meta: {} });
      api.put(ENDPOINTS, endpointsOf('users', [8081]));
      await until(async () => JSON.stringify(await resolve()).includes('8081'), 'the redeploy in the resolver');
      const state = await (await request(`${admin}/namer_state/io.prx.orch.json`)).body.json() as { watches: { name: string }[] };
      assert.deepEqual(state.watches.map((w) => w.name), ['users']);
      assert.deepEqual(await (await request(`${admin}/bound-names.json`)).body.json(), ['/#/io.prx.orch/default/http/users']);
    } finally {
      await proc.shutdown();
    }
  });
});
