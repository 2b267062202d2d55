// The assembled proxy process, in-process: every admin endpoint wired to the real routers, namers,
// metrics and telemeters, and the HTTP-identifier server (proxy-control.test.ts covers security,
// shutdown, start-up failures, usage reports and interpreters). Routers are an `http` one
// proxying to a backend run here and a `test` one (below), whose requests emit trace records,
// which the http router does not do yet.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { rmSync } from 'node:fs';
import * as http from 'node:http';
import { type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import '../../src/cli/builtins.js';
import { effectiveConfigJson, intInRange, ip, LOOPBACK, routerBaseShape, serverList } from '../../src/config/index.js';
import { ConfiguredNamersInterpreter, readDtab, readPath } from '../../src/naming/index.js';
import { defineProtocol, type RunningRouter, type ServerAddress } from '../../src/router/core/types.js';
import { routerStats, serverStats } from '../../src/service/stats/index.js';
import { randomSpanId, TraceId } from '../../src/service/tracing.js';
import { getJson, request } from '../admin/helpers.js';
import { freePort, routerPort, start, withDisco, type Started } from './proxy-helpers.js';

const testServer = z.strictObject({ port: intInRange(0, 65535).default(0), ip: ip.default(LOOPBACK) });
const testRouter = z.strictObject({ ...routerBaseShape(), protocol: z.literal('test'), servers: serverList(testServer) });

/**
 * Protocol `test`: servers that answer every request themselves (`<label> ok`), counting
 * `rt/<label>/server/<ip>/<port>/requests` and recording one trace annotation (`router.label`)
 * through the stats receiver and tracer the process hands its routers. `identify` names a request
 * `<dstPrefix>/<Host>`. Server `port` may be 0.
 */
defineProtocol({
  protocol: 'test',
  schema: testRouter,
  create: (cfg, ctx): RunningRouter => {
    const label = (cfg as { label?: string }).label ?? 'test';
    const stats = routerStats(ctx.stats, label);
    const dstPrefix = readPath(cfg.dstPrefix);
    const servers = cfg.servers.map((s) => {
      const server = http.createServer((_req, res) => {
        serverStats(stats, s.ip, (server.address() as AddressInfo).port).counter('requests').incr();
        const id = randomSpanId();
        ctx.tracer.record({
          traceId: new TraceId({ traceId: id, parentId: id, spanId: id }),
          timestamp: Date.now(),
          annotation: { kind: 'binary', key: 'router.label', value: label },
        });
        res.end(`${label} ok`);
      });
      return { server, cfg: s };
    });
    return {
      label,
      protocol: 'test',
      dstPrefix,
      baseDtab: readDtab(cfg.dtab),
      interpreter: new ConfiguredNamersInterpreter(ctx.namers, { system: ctx.system }),
      usage: { protocol: 'test', interpreter: cfg.interpreter.kind, identifiers: ['io.prx.test'], transformers: [] },
      async listen(): Promise<readonly ServerAddress[]> {
        const bound: ServerAddress[] = [];
        for (const { server, cfg: s } of servers) {
          await new Promise<void>((resolve, reject) => {
            server.once('error', reject);
            server.listen(s.port, s.ip, () => resolve());
          });
          bound.push({ ip: s.ip, port: (server.address() as AddressInfo).port });
        }
        return bound;
      },
      async close(): Promise<void> {
        await Promise.all(
          servers.map(({ server }) => {
            if (!server.listening) return Promise.resolve();
            const closed = new Promise<void>((resolve) => server.close(() => resolve()));
            server.closeAllConnections();
            return closed;
          }),
        );
      },
      identify(req: http.IncomingMessage): Promise<unknown> {
        const host = req.headers.host;
        if (host === undefined) return Promise.reject(new Error('no Host header'));
        return Promise.resolve({ path: dstPrefix.concat(readPath(`/${host}`)).show });
      },
    };
  },
});

/** A GET with exactly these headers (fetch may not set Host). */
function rawGet(
  port: number,
  path: string,
  headers: Record<string, string>,
  setHost = true,
): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, setHost, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('proxy process: admin wiring', () => {
  let disco: string;
  let udp: ReturnType<typeof createSocket>;
  const datagrams: string[] = [];
  let s: Started;
  const backend = http.createServer((_req, res) => res.end('backend ok'));
  let backendPort = 0;

  before(async () => {
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    backendPort = (backend.address() as AddressInfo).port;
    disco = withDisco(backendPort);
    udp = createSocket('udp4');
    udp.on('message', (m) => datagrams.push(m.toString('utf8')));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    s = await start({
      admin: { port: await freePort(), httpIdentifierPort: await freePort() },
      routers: [
        { protocol: 'http', label: 'web', dtab: '/svc=>/#/io.prx.fs;/orphan=>/$/nil', servers: [{ port: await freePort() }] },
        { protocol: 'test', label: 'api', dstPrefix: '/api', servers: [{ port: 0 }] },
      ],
      namers: [
        { kind: 'io.prx.fs', rootDir: disco },
        { kind: 'io.prx.fs', rootDir: disco, prefix: '/secret-disco' },
      ],
      telemetry: [
        {
          kind: 'io.prx.udpstats',
          experimental: true,
          hostname: '127.0.0.1',
          port: udp.address().port,
          gaugeIntervalMs: 100,
          sampleRate: 1,
        },
        { kind: 'io.prx.tracelog', level: 'INFO' },
      ],
      usage: { orgId: 'acme' },
    });
    for (let i = 0; i < 3; i++) assert.equal((await rawGet(routerPort(s.proxy, 'web'), '/x', { host: 'hello' })).text, 'backend ok');
    for (let i = 0; i < 2; i++) assert.equal((await request(`http://127.0.0.1:${routerPort(s.proxy, 'api')}/`)).text, 'api ok');
  });

  after(async () => {
    await s.proxy.shutdown('test over');
    udp.close();
    backend.close();
    rmSync(disco, { recursive: true, force: true });
  });

  test('ping, server_info and the index list what is served', async () => {
    assert.equal((await request(`${s.admin}/admin/ping`)).text, 'pong\n');
    const info = (await getJson(`${s.admin}/admin/server_info`)).body as Record<string, unknown>;
    assert.equal(info['pid'], process.pid);
    const index = (await getJson(`${s.admin}/admin`)).body as { path: string }[];
    const paths = index.map((e) => e.path);
    for (const p of [
      '/admin/announcer', '/admin/contention', '/admin/lint', '/admin/lint.json', '/admin/ping', '/admin/pprof/contention',
      '/admin/pprof/heap', '/admin/pprof/profile', '/admin/registry.json', '/admin/server_info', '/admin/shutdown',
      '/admin/threads', '/admin/threads.json', '/admin/tracing', '/admin/metrics/usage', '/config.json',
      '/bound-names.json', '/delegator.json', '/logging.json', '/admin/metrics.json', '/admin/metrics/prometheus',
    ]) {
      assert.ok(paths.includes(p), `index lists ${p}`);
    }
  });

  test('/config.json is the effective config, defaults included', async () => {
    const reply = await request(`${s.admin}/config.json`);
    assert.deepEqual(JSON.parse(reply.text), JSON.parse(effectiveConfigJson(s.proxy.config)));
    const cfg = JSON.parse(reply.text) as { admin: { shutdownGraceMs: number }; namers: { prefix: string }[] };
    assert.equal(cfg.admin.shutdownGraceMs, 10000);
    assert.equal(cfg.namers[0]?.prefix, '/io.prx.fs');
  });

  test('/admin/registry.json shows the routers with their real ports and the registered kinds', async () => {
    const { registry } = (await getJson(`${s.admin}/admin/registry.json`)).body as {
      registry: { kinds: Record<string, string[]>; routers: Record<string, { servers: { port: number }[]; dtab: string }> };
    };
    const protocols = registry.kinds['protocol'] ?? [];
    for (const p of ['h2', 'http', 'mux', 'test', 'thrift']) assert.ok(protocols.includes(p), `protocol ${p} in ${protocols.join(', ')}`);
    assert.deepEqual([...protocols].sort(), protocols, 'sorted by name');
    assert.ok(registry.kinds['namer']?.includes('io.prx.fs'));
    assert.equal(registry.routers['web']?.servers[0]?.port, routerPort(s.proxy, 'web'));
    assert.equal(registry.routers['web']?.dtab, '/svc=>/#/io.prx.fs;/orphan=>/$/nil');
  });

  test('/logging.json lists the process loggers and changes levels at run time', async () => {
    const before = (await getJson(`${s.admin}/logging.json`)).body as { logger: string; level: string }[];
    assert.deepEqual(before[0], { logger: 'root', level: 'INFO' });
    assert.ok(before.some((l) => l.logger === 'prx.router.web'));
    const set = await request(`${s.admin}/logging.json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ logger: 'prx.router', level: 'DEBUG' }),
    });
    assert.equal(set.status, 200);
    const after = (await getJson(`${s.admin}/logging.json`)).body as { logger: string; level: string }[];
    assert.equal(after.find((l) => l.logger === 'prx.router.web')?.level, 'DEBUG');
    assert.equal(after.find((l) => l.logger === 'prx.admin')?.level, 'INFO');
  });

  test('/delegator.json explains delegation per router, through the configured namers', async () => {
    const q = new URLSearchParams({ namespace: 'web', path: '/svc/hello', dtab: '/svc=>/#/io.prx.fs' });
    const { status, body } = await getJson(`${s.admin}/delegator.json?${q.toString()}`);
    assert.equal(status, 200);
    assert.deepEqual(body, {
      type: 'delegate',
      path: '/svc/hello',
      delegate: {
        type: 'leaf',
        path: '/#/io.prx.fs/hello',
        dentry: { prefix: '/svc', dst: '/#/io.prx.fs' },
        bound: {
          addr: { type: 'bound', addrs: [{ ip: '127.0.0.1', port: backendPort, meta: {} }], meta: {} },
          id: '/#/io.prx.fs/hello',
          path: '/',
        },
      },
    });
    const unknown = await request(`${s.admin}/delegator.json?namespace=nope&path=/svc/hello`);
    assert.equal(unknown.status, 404);
    assert.match(unknown.text, /known: api, web/);
    const bad = await request(`${s.admin}/delegator.json?namespace=web&path=/svc/hello&dtab=${encodeURIComponent('/svc=>')}`);
    assert.equal(bad.status, 400);
  });

  test('/bound-names.json enumerates both fs namers', async () => {
    const { body } = await getJson(`${s.admin}/bound-names.json`);
    assert.deepEqual(body, [
      '/#/io.prx.fs/hello',
      '/#/io.prx.fs/world',
      '/#/secret-disco/hello',
      '/#/secret-disco/world',
    ]);
  });

  test('/admin/lint runs the dtab linters over the routers', async () => {
    const { body } = await getJson(`${s.admin}/admin/lint.json`);
    const { results } = body as { results: { name: string; issues: { message: string }[] }[] };
    const messages = (name: string): string[] => results.find((r) => r.name === name)?.issues.map((i) => i.message) ?? [];
    assert.deepEqual(messages('dtab-unused-namers'), ["namer /#/secret-disco is not used by any router's dtab"]);
    assert.equal(messages('dtab-unreachable-dentries').length, 1);
    assert.match(messages('dtab-unreachable-dentries')[0] ?? '', /router web: dentry 2 '\/orphan=>\/\$\/nil' is unreachable/);
    const text = await request(`${s.admin}/admin/lint`);
    assert.match(text.text, /4 linters run, 2 issues found/);
  });

  test('metrics.json and prometheus carry router and process metrics', async () => {
    const port = routerPort(s.proxy, 'web');
    const metrics = (await getJson(`${s.admin}/admin/metrics.json`)).body as Record<string, number>;
    assert.equal(metrics[`rt/web/server/127.0.0.1/${port}/requests`], 3);
    for (const name of ['process/mem/rss', 'process/mem/heap/used', 'process/uptime', 'process/gc/msec', 'process/event_loop/delay_ms/p99']) {
      assert.equal(typeof metrics[name], 'number', name);
    }
    assert.ok((metrics['process/mem/rss'] ?? 0) > 1e6);
    const prom = await request(`${s.admin}/admin/metrics/prometheus`);
    assert.ok(prom.text.includes(`\nrt:server:requests{rt="web",server="127.0.0.1/${port}"} 3\n`), prom.text);
    assert.match(prom.text, /^process:mem:rss \d+$/m);
  });

  test('/admin/metrics/usage is the payload: kinds and counts, never labels, prefixes or dtabs', async () => {
    const reply = await request(`${s.admin}/admin/metrics/usage`);
    const payload = JSON.parse(reply.text) as Record<string, unknown>;
    assert.equal(payload['pid'], 'test-pid');
    assert.equal(payload['orgId'], 'acme');
    assert.equal(payload['startTime'], '1970-01-01T00:00Z');
    assert.deepEqual(payload['routers'], [
      { protocol: 'http', interpreter: 'default', identifiers: ['io.prx.header.token'], transformers: [] },
      { protocol: 'test', interpreter: 'default', identifiers: ['io.prx.test'], transformers: [] },
    ]);
    assert.deepEqual(payload['namers'], ['io.prx.fs', 'io.prx.fs']);
    assert.deepEqual(payload['counters'], [
      { name: 'srv_requests', value: 3 },
      { name: 'srv_requests', value: 2 },
    ]);
    const gauges = (payload['gauges'] as { name: string }[]).map((g) => g.name);
    assert.deepEqual(gauges, ['process/mem/rss', 'process/mem/heap/used', 'process/gc/msec', 'process/uptime', 'process/num_cpus']);
    for (const secret of ['web', 'api', 'secret-disco', disco, '/svc', '127.0.0.1']) {
      assert.ok(!reply.text.includes(`"${secret}`), `payload leaks ${secret}`);
    }
  });

  test('tracing, announcer, threads and contention answer', async () => {
    assert.match((await request(`${s.admin}/admin/tracing?disable=true`)).text, /disabled/i);
    assert.match((await request(`${s.admin}/admin/tracing?enable=true`)).text, /enabled/i);
    assert.deepEqual((await getJson(`${s.admin}/admin/announcer`)).body, []);
    const threads = (await getJson(`${s.admin}/admin/threads.json`)).body as Record<string, unknown>;
    assert.ok(Object.keys(threads).length > 0);
    const contention = await request(`${s.admin}/admin/contention`);
    assert.equal(contention.status, 200);
    assert.ok(contention.text.length > 0);
  });

  test('pprof heap and CPU profiles are gzipped protobuf', async () => {
    for (const path of ['/admin/pprof/heap?seconds=0.2', '/admin/pprof/profile?seconds=0.2&hz=100']) {
      const res = await fetch(`${s.admin}${path}`, { signal: AbortSignal.timeout(10_000) });
      assert.equal(res.status, 200, path);
      const raw = Buffer.from(await res.arrayBuffer());
      assert.equal(raw[0], 0x1f, path);
      assert.ok(gunzipSync(raw).length > 0, path);
    }
  });

  test('udpstats receives the router stats and the process gauges through the broadcast receiver', async () => {
    const port = routerPort(s.proxy, 'web');
    const counter = `prx.rt.web.server.127_0_0_1.${port}.requests:`;
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && !(datagrams.join('\n').includes(counter) && datagrams.join('\n').includes('prx.process.uptime:'))) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const all = datagrams.join('\n');
    // Counters go out as deltas: whatever the flushes, they add up to the 3 requests.
    const sent = [...all.matchAll(new RegExp(`^${counter.replaceAll('.', '\\.')}(\\d+)\\|c$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
    assert.equal(sent, 3, all.slice(0, 500));
    assert.match(all, /^prx\.process\.uptime:[0-9.]+\|g$/m);
  });

  test('tracelog logs the trace records routers emit through the broadcast tracer', () => {
    const traced = s.sink.lines.filter((l) => l['name'] === 'io.prx.tracelog').map((l) => String(l['msg']));
    // The test router's two records, and the http router's annotations of the requests it served.
    assert.equal(traced.filter((m) => /BinaryAnnotation\(router\.label,api\)$/.test(m)).length, 2);
    assert.ok(traced.some((m) => /BinaryAnnotation\(router\.label,web\)$/.test(m)));
    assert.ok(traced.some((m) => /BinaryAnnotation\(service,\/svc\/hello\)$/.test(m)));
    assert.ok(traced.some((m) => /BinaryAnnotation\(client,\/#\/io\.prx\.fs\/hello\)$/.test(m)));
  });

  test('the identifier port runs every router identifier on the request', async () => {
    const port = s.proxy.identifierAddress?.port;
    assert.ok(port !== undefined);
    const reply = await rawGet(port, '/any/path', { host: 'hello' });
    assert.equal(reply.status, 200);
    assert.match(reply.type, /^application\/json/);
    assert.deepEqual(JSON.parse(reply.text), { web: { path: '/svc/hello' }, api: { path: '/api/hello' } });
    // Without a Host header neither identifies: the http router says why, the test one throws.
    const bare = JSON.parse((await rawGet(port, '/', {}, false)).text) as Record<string, { error?: unknown }>;
    assert.deepEqual(Object.keys(bare), ['web', 'api']);
    assert.equal(typeof bare['web']?.error, 'string');
    assert.deepEqual(bare['api'], { error: 'no Host header' });
  });
});
