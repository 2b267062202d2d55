// The io.prx.orch.meshctl request authorizer and logger against a fake mixer (grpc-js, built from
// the .proto files): checks before routing with the attributes Linkerd 1 sent, refusals answered
// with the mapped status (and the gRPC status itself on gRPC calls), a mixer that is down refusing
// with 500 until it is back, and reports of completed requests. Also: the `loggers` key loads.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it, test } from 'node:test';
import { request } from 'undici';
import { ConfigError, validateProxyConfig } from '../../../src/config/index.js';
import '../../../src/router/http/index.js';
import '../../../src/router/h2/index.js';
import { eventually, startBackend, startRouter, type Backend, type RouterUnderTest } from '../../router/harness.js';
import { echoClient, grpcError, grpcRouterConfig, h2Connect, h2Request, say, startGrpcBackend, startH2Router, type GrpcBackend, type H2RouterUnderTest } from '../../router/h2/harness.js';
import { startFakeMixer, startFakePilot, type FakeMixer, type FakePilot } from './fakes.js';

const REVIEWS = 'reviews.default.svc.cluster.local';

test('the mixer descriptor is generated from the current .proto files (node scripts/mixer-proto.mjs)', () => {
  const fresh = execFileSync(process.execPath, ['scripts/mixer-proto.mjs', '--print'], { encoding: 'utf8' });
  assert.equal(readFileSync('src/protocol/http/meshctl/mixer-descriptor.ts', 'utf8'), fresh);
});

test('a config of the middle version with loggers, request authorizers and the meshctl identifier loads; bad ones are refused at their key path', () => {
  const cfg = validateProxyConfig({
    admin: { ip: '127.0.0.1', port: 9990 },
    routers: [
      {
        protocol: 'http',
        identifier: { kind: 'io.prx.orch.meshctl' },
        loggers: [{ kind: 'io.prx.orch.meshctl' }],
        requestAuthorizers: [{ kind: 'io.prx.orch.meshctl', mixerHost: 'mixer.istio-system', mixerPort: 9091 }],
        servers: [{ port: 4140 }],
      },
      { protocol: 'h2', identifier: { kind: 'io.prx.orch.meshctl' }, loggers: [{ kind: 'io.prx.orch.meshctl' }], servers: [{ port: 4142 }] },
    ],
  });
  const http = cfg.routers[0] as unknown as { loggers: { mixerHost: string; mixerPort: number }[]; identifier: { discoveryHost: string; discoveryPort: number; apiserverPort: number }[] };
  assert.deepEqual(http.loggers[0], { kind: 'io.prx.orch.meshctl', mixerHost: 'meshctl-mixer', mixerPort: 9091 });
  assert.equal(http.identifier[0]?.discoveryHost, 'meshctl-pilot');
  assert.equal(http.identifier[0]?.discoveryPort, 8080);
  assert.equal(http.identifier[0]?.apiserverPort, 8081);
  const refused = (routers: unknown[]): string => {
    try {
      validateProxyConfig({ routers });
    } catch (e) {
      assert.ok(e instanceof ConfigError);
      return e.message;
    }
    return assert.fail('accepted');
  };
  assert.match(refused([{ protocol: 'http', loggers: [{ kind: 'io.prx.nope' }], servers: [{ port: 4140 }] }]), /routers\[0\]\.loggers\[0\]\.kind: unknown logger kind "io\.prx\.nope"/);
  assert.match(refused([{ protocol: 'http', loggers: [{ kind: 'io.prx.orch.meshctl', mixerPort: 0 }], servers: [{ port: 4140 }] }]), /routers\[0\]\.loggers\[0\]\.mixerPort/);
  assert.match(refused([{ protocol: 'h2', identifier: { kind: 'io.prx.orch.meshctl', discoveryPort: 'x' }, servers: [{ port: 4142 }] }]), /discoveryPort/);
});

describe('io.prx.orch.meshctl authorizer and logger (http router)', () => {
  let pilot: FakePilot;
  let mixer: FakeMixer;
  let backend: Backend;
  let rt: RouterUnderTest;

  before(async () => {
    pilot = await startFakePilot(
      [{ name: `${REVIEWS}|http`, domains: ['reviews'] }],
      [{ type: 'route-rule', name: 'reviews-v2', spec: { destination: REVIEWS, match: { httpHeaders: { uri: { prefix: '/v2' } } }, route: [{ tags: { version: 'v2' } }] } }],
    );
    mixer = await startFakeMixer();
    backend = await startBackend('reviews');
    rt = await startRouter({
      identifier: { kind: 'io.prx.orch.meshctl', discoveryHost: '127.0.0.1', discoveryPort: pilot.discoveryPort, apiserverHost: '127.0.0.1', apiserverPort: pilot.apiserverPort },
      requestAuthorizers: [{ kind: 'io.prx.orch.meshctl', mixerHost: '127.0.0.1', mixerPort: mixer.port }],
      loggers: [{ kind: 'io.prx.orch.meshctl', mixerHost: '127.0.0.1', mixerPort: mixer.port }],
      dtab: `/svc => /$/inet/127.0.0.1/${backend.port}`,
    });
    const until = Date.now() + 15_000;
    while ((await get('/')).status !== 200) {
      if (Date.now() > until) assert.fail('the router never identified a request');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  after(async () => {
    await rt.close();
    await Promise.all([pilot.close(), mixer.close(), backend.close()]);
  });

  async function get(path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
    const r = await request(`${rt.url}${path}`, { headers: { host: 'reviews' } });
    return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
  }

  it('checks a request before routing it, with the request path, the target service and labels', async () => {
    const checks = mixer.checks.length;
    const r = await get('/v2/books?x=1');
    assert.equal(r.status, 200);
    const check = mixer.checks[checks];
    assert.ok(check, 'no check reached the mixer');
    assert.deepEqual(check.strings, { 'request.path': '/v2/books', 'target.service': REVIEWS });
    assert.deepEqual(check.stringMaps['target.labels'], { app: 'reviews', version: 'v2' });
    assert.deepEqual(check.stringMaps['source.labels'], { app: 'unknown', version: 'unknown' });
  });

  it('reports a completed request from the authorizer and from the logger, with its status and duration', async () => {
    const reports = mixer.reports.length;
    assert.equal((await get('/plain')).status, 200);
    const plain = () => mixer.reports.slice(reports).filter((r) => r.strings['request.path'] === '/plain');
    await eventually(() => plain().length === 2, 10_000, 'two reports');
    for (const report of plain()) {
      assert.equal(report.int64s['response.code'], 200);
      assert.equal(report.strings['request.path'], '/plain');
      assert.equal(report.strings['target.service'], REVIEWS);
      assert.deepEqual(report.stringMaps['target.labels'], { app: 'reviews', version: 'unknown' });
      assert.ok((report.durationsMs['response.duration'] ?? -1) >= 0);
    }
  });

  it('refuses with the status mapped from the mixer: 403 PERMISSION_DENIED, 401 UNAUTHENTICATED, 429 RESOURCE_EXHAUSTED', async () => {
    for (const [code, status] of [[7, 403], [16, 401], [8, 429]] as const) {
      mixer.verdict = { code, message: 'not you' };
      const seen = backend.requests.length;
      const reports = mixer.reports.length;
      const r = await get('/x');
      assert.equal(r.status, status);
      assert.match(r.body, /denied by the mesh mixer: .*: not you/);
      assert.ok(r.headers['prx-err']);
      assert.equal(backend.requests.length, seen, 'a refused request reached the backend');
      // The logger reports the refusal (reports arrive in the background, in any order).
      await eventually(() => mixer.reports.slice(reports).some((x) => x.int64s['response.code'] === status), 10_000, 'the logger report');
    }
    mixer.verdict = { code: 0, message: '' };
    assert.equal((await get('/x')).status, 200);
    // An answer without a result is no answer: refused with 500.
    mixer.verdict = null;
    const empty = await get('/x');
    assert.equal(empty.status, 500);
    assert.match(empty.body, /UNKNOWN: the check response has no result/);
    mixer.verdict = { code: 0, message: '' };
    assert.equal(rt.metric('rt/http/meshctl/check/denied'), 3);
    assert.equal(rt.metric('rt/http/meshctl/check/unanswered'), 1);
    assert.ok((rt.metric('rt/http/meshctl/check/allowed') ?? 0) >= 3);
    assert.ok((rt.metric('rt/http/meshctl/report/sent') ?? 0) >= 3);
  });

  it('refuses with 500 while the mixer is down, and lets requests through again once it is back', async () => {
    const port = mixer.port;
    await mixer.close();
    const r = await get('/x');
    assert.equal(r.status, 500);
    assert.match(r.body, /UNKNOWN: no answer from the mixer/);
    assert.equal(rt.metric('rt/http/meshctl/check/unanswered'), 2);
    const checks = mixer.checks;
    mixer = await startFakeMixer(port);
    const until = Date.now() + 20_000;
    while ((await get('/x')).status !== 200) {
      if (Date.now() > until) assert.fail('the mixer never came back');
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(mixer.checks.length > 0 && checks !== mixer.checks);
  });
});

describe('io.prx.orch.meshctl authorizer on an h2 router', () => {
  let mixer: FakeMixer;
  let backend: GrpcBackend;
  let rt: H2RouterUnderTest;

  before(async () => {
    mixer = await startFakeMixer();
    backend = await startGrpcBackend({ Say: (call: { request: Buffer }, cb: (e: null, r: Buffer) => void) => cb(null, call.request) } as never);
    rt = await startH2Router(
      grpcRouterConfig(`/$/inet/127.0.0.1/${backend.port}`, {
        requestAuthorizers: [{ kind: 'io.prx.orch.meshctl', mixerHost: '127.0.0.1', mixerPort: mixer.port }],
        loggers: [{ kind: 'io.prx.orch.meshctl', mixerHost: '127.0.0.1', mixerPort: mixer.port }],
      }),
    );
  });
  after(async () => {
    await rt.close();
    await Promise.all([mixer.close(), backend.close()]);
  });

  it('lets a call through when the mixer says OK, and reports it', async () => {
    const client = echoClient(rt.target);
    try {
      assert.equal((await say(client, Buffer.from('hi'))).toString(), 'hi');
    } finally {
      client.close();
    }
    assert.equal(mixer.checks.at(-1)?.strings['request.path'], '/test.Echo/Say');
    assert.equal(mixer.checks.at(-1)?.strings['target.service'], 'unknown');
    await eventually(() => mixer.reports.length >= 2, 10_000, 'the reports');
  });

  it("refuses a gRPC call with the mixer's own gRPC status", async () => {
    mixer.verdict = { code: 7, message: 'no entry' };
    const client = echoClient(rt.target);
    try {
      const err = await grpcError(say(client, Buffer.from('hi')));
      assert.equal(err.code, 7);
      assert.match(err.details, /PERMISSION_DENIED: no entry/);
    } finally {
      client.close();
      mixer.verdict = { code: 0, message: '' };
    }
  });

  it('refuses a plain h2 request with the mapped HTTP status and prx-err', async () => {
    mixer.verdict = { code: 16, message: 'who are you' };
    const session = h2Connect(rt.port);
    try {
      const r = await h2Request(session, { ':method': 'GET', ':scheme': 'http', ':authority': 'web', ':path': '/test.Echo/x' }).done;
      assert.equal(Number(r.headers?.[':status']), 401);
      assert.ok(r.headers?.['prx-err']);
      assert.match(r.body.toString(), /UNAUTHENTICATED: who are you/);
    } finally {
      session.close();
      mixer.verdict = { code: 0, message: '' };
    }
  });
});
