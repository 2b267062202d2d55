// The fleet on loopback with the gRPC link: `prx-resolver` storing its dtabs in a real etcd and
// serving both the HTTP controller (for prxctl) and the mesh interface, a `prx` proxy whose router
// is bound by `io.prx.mesh`, two real backends, and `prxctl dtab update` while requests flow. The
// update must move the traffic, and no request may fail on the way.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { spawnCli, type SpawnedCli } from '../helpers/run-cli.js';
import { sharedEtcd } from '../helpers/services.js';
import { freePort, request } from '../resolver/helpers.js';
import { type Answer, backend, loadLoop } from './fleet.js';

const dir = mkdtempSync(join(tmpdir(), 'prx-e2e-mesh-'));
const started: SpawnedCli[] = [];
const servers: http.Server[] = [];
after(async () => {
  for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGTERM');
  await Promise.all(started.map((p) => p.exited));
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

function spawn(name: 'prx' | 'prx-resolver' | 'prxctl', args: string[], stdin?: string): SpawnedCli {
  const p = spawnCli(name, args, stdin === undefined ? {} : { stdin });
  started.push(p);
  return p;
}

async function prxctl(baseUrl: string, args: string[], stdin?: string): Promise<string> {
  const p = spawn('prxctl', ['--base-url', baseUrl, ...args], stdin);
  const code = await p.exited;
  assert.equal(code, 0, `prxctl ${args.join(' ')}: ${p.stderr()}`);
  return p.stdout();
}

test('prxctl dtab update moves the live traffic of a proxy bound through io.prx.mesh, no request failing', { timeout: 90_000 }, async (t) => {
  const etcd = await sharedEtcd();
  const [blue, green] = await Promise.all([backend('blue', servers), backend('green', servers)]);
  const disco = join(dir, 'disco');
  mkdirSync(disco);
  writeFileSync(join(disco, 'blue'), `127.0.0.1 ${blue}\n`);
  writeFileSync(join(disco, 'green'), `127.0.0.1 ${green}\n`);

  const [ctlPort, meshPort, resolverAdmin, proxyPort, proxyAdmin] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const ctl = `http://127.0.0.1:${ctlPort}`;
  const resolverConfig = join(dir, 'resolver.json');
  writeFileSync(
    resolverConfig,
    JSON.stringify({
      admin: { port: resolverAdmin },
      interfaces: [
        { kind: 'io.prx.httpController', ip: '127.0.0.1', port: ctlPort },
        { kind: 'io.prx.mesh', ip: '127.0.0.1', port: meshPort },
      ],
      storage: {
        kind: 'io.prx.kvstore2',
        experimental: true,
        host: etcd.host,
        port: etcd.port,
        pathPrefix: `/prx-e2e-mesh/${process.pid}-${Date.now()}`,
      },
      namers: [{ kind: 'io.prx.fs', rootDir: disco }],
    }),
  );
  const resolver = spawn('prx-resolver', [resolverConfig]);
  await resolver.logLine((l) => l['msg'] === 'prx-resolver started');
  await prxctl(ctl, ['dtab', 'create', 'e2e', '-'], '/svc/web => /#/io.prx.fs/blue;\n');

  const proxyConfig = join(dir, 'proxy.json');
  writeFileSync(
    proxyConfig,
    JSON.stringify({
      admin: { ip: '127.0.0.1', port: proxyAdmin },
      routers: [
        {
          protocol: 'http',
          label: 'web',
          identifier: { kind: 'io.prx.static', path: '/web' },
          interpreter: {
            kind: 'io.prx.mesh',
            dst: `/$/inet/127.0.0.1/${meshPort}`,
            root: '/e2e',
            retry: { baseSeconds: 1, maxSeconds: 2 },
            failureThreshold: { minPeriodMs: 1000, closeTimeoutMs: 1000 },
          },
          servers: [{ ip: '127.0.0.1', port: proxyPort }],
        },
      ],
    }),
  );
  spawn('prx', [proxyConfig]);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await request(`http://127.0.0.1:${proxyPort}/`).catch(() => undefined);
    if (r?.status === 200 && r.text === 'blue') break;
    assert.ok(Date.now() < deadline, `the proxy did not route to blue in time (last: ${r?.status} ${r?.text})`);
    await new Promise((res) => setTimeout(res, 100));
  }

  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const answers: Answer[] = [];
  const failures: string[] = [];
  const stop = { stopped: false };
  const loops = Array.from({ length: 4 }, () => loadLoop(proxyPort, agent, answers, failures, stop));
  await new Promise((res) => setTimeout(res, 500));

  const before = answers.length;
  await prxctl(ctl, ['dtab', 'update', 'e2e', '-'], '/svc/web => /#/io.prx.fs/green;\n');
  const ackedAt = performance.now();
  await new Promise((res) => setTimeout(res, 1200));

  // Back to blue with a versioned write straight to the controller, timed without a process start.
  const current = await request(`${ctl}/api/1/dtabs/e2e`);
  const putSentAt = performance.now();
  const put = await request(`${ctl}/api/1/dtabs/e2e`, {
    method: 'PUT',
    headers: { 'content-type': 'application/dtab', 'if-match': current.headers.get('etag') ?? '' },
    body: '/svc/web => /#/io.prx.fs/blue',
  });
  assert.equal(put.status, 204, put.text);
  const putAckedAt = performance.now();
  await new Promise((res) => setTimeout(res, 1200));
  stop.stopped = true;
  await Promise.all(loops);
  agent.destroy();

  assert.deepEqual(failures, [], 'no request failed');
  assert.ok(answers.length - before > 100, `traffic kept flowing (${answers.length - before} answers after the update began)`);
  const toGreen = answers.filter((a) => a.sentAt < putSentAt);
  assert.ok(toGreen.some((a) => a.body === 'green'), 'traffic moved to green');
  const lateBlue = toGreen.filter((a) => a.sentAt > ackedAt + 1000 && a.body !== 'green');
  assert.equal(lateBlue.length, 0, `${lateBlue.length} requests still went to blue a second after the update`);
  const firstBlueAgain = answers.find((a) => a.sentAt >= putSentAt && a.body === 'blue');
  assert.ok(firstBlueAgain, 'traffic moved back to blue');
  const lateGreen = answers.filter((a) => a.sentAt > putAckedAt + 1000 && a.body !== 'blue');
  assert.equal(lateGreen.length, 0, `${lateGreen.length} requests still went to green a second after the second update`);
  const lastGreen = answers.filter((a) => a.body === 'green').reduce((m, a) => Math.max(m, a.doneAt), 0);
  t.diagnostic(
    `${answers.length} answers, 0 failed. PUT sent → 204 in ${(putAckedAt - putSentAt).toFixed(1)} ms; ` +
      `first answer from the new backend ${(firstBlueAgain.doneAt - putSentAt).toFixed(1)} ms after the PUT was sent, ` +
      `last from the old one ${(lastGreen - putSentAt).toFixed(1)} ms after`,
  );

  // The proxy's admin shows the mesh interpreter's state at Linkerd's path shape.
  const state = await request(`http://127.0.0.1:${proxyAdmin}/web/interpreter_state/io.prx.mesh/e2e.json`);
  assert.equal(state.status, 200, state.text);
  const json = JSON.parse(state.text) as { root: string; binds: { stream: { state: string } }[]; addrs: { id: string }[] };
  assert.equal(json.root, '/e2e');
  assert.ok(json.binds.length > 0 && json.binds.every((b) => b.stream.state === 'streaming'), state.text);
  assert.ok(json.addrs.some((a) => a.id === '/#/io.prx.fs/blue'), state.text);
});
