// Pieces of the fleet tests (test/e2e): real backends, keep-alive client loops recording where
// each answer came from, and the dtab-update run every resolver link goes through.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { spawnCli, type SpawnedCli } from '../helpers/run-cli.js';
import { sharedEtcd } from '../helpers/services.js';
import { freePort, request } from '../resolver/helpers.js';

/** A backend answering its own name. */
export async function backend(name: string, servers: http.Server[]): Promise<number> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(name));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** One keep-alive client loop: GETs until stopped, recording where each answer came from. */
export interface Answer {
  readonly sentAt: number;
  readonly doneAt: number;
  readonly body: string;
}

export function loadLoop(port: number, agent: http.Agent, answers: Answer[], failures: string[], stop: { stopped: boolean }): Promise<void> {
  return new Promise((resolve) => {
    const next = (): void => {
      if (stop.stopped) return resolve();
      const sentAt = performance.now();
      const req = http.get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          if (res.statusCode === 200) answers.push({ sentAt, doneAt: performance.now(), body });
          else failures.push(`${res.statusCode}: ${body}`);
          next();
        });
      });
      req.on('error', (e) => {
        failures.push(e.message);
        next();
      });
    };
    next();
  });
}

/** The resolver link a fleet test exercises: the resolver interface it serves and the proxy interpreter that uses it. */
export interface FleetLink {
  /** Names temp dirs and etcd prefixes. */
  readonly name: string;
  /** The interface object in the resolver's config, listening on `port`; undefined: the link is the HTTP controller. */
  readonly iface: ((port: number) => Record<string, unknown>) | undefined;
  /** The proxy's interpreter object for a resolver interface on `port` and namespace `ns`. */
  readonly interpreter: (port: number, ns: string) => Record<string, unknown>;
  /** Where the proxy's admin shows the interpreter's state (router `web`, namespace `e2e`). */
  readonly statePath: string;
  /** Checks that state once the traffic has moved. */
  readonly checkState: (json: unknown, text: string) => void;
}

/**
 * The fleet on loopback: `prx-resolver` storing its dtabs in a real etcd and serving the HTTP
 * controller (for prxctl) and `link`'s interface, a `prx` proxy bound through `link`'s interpreter,
 * two real backends, and `prxctl dtab update` while requests flow. The update must move the traffic
 * within a second, and back again with a versioned PUT, with no request failing on the way.
 */
export async function dtabUpdateMovesTraffic(t: TestContext, link: FleetLink): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), `prx-e2e-${link.name}-`));
  const started: SpawnedCli[] = [];
  const servers: http.Server[] = [];
  const spawn = (name: 'prx' | 'prx-resolver' | 'prxctl', args: string[], stdin?: string): SpawnedCli => {
    const p = spawnCli(name, args, stdin === undefined ? {} : { stdin });
    started.push(p);
    return p;
  };
  const prxctl = async (baseUrl: string, args: string[], stdin?: string): Promise<string> => {
    const p = spawn('prxctl', ['--base-url', baseUrl, ...args], stdin);
    const code = await p.exited;
    assert.equal(code, 0, `prxctl ${args.join(' ')}: ${p.stderr()}`);
    return p.stdout();
  };
  try {
    const etcd = await sharedEtcd();
    const [blue, green] = await Promise.all([backend('blue', servers), backend('green', servers)]);
    const disco = join(dir, 'disco');
    mkdirSync(disco);
    writeFileSync(join(disco, 'blue'), `127.0.0.1 ${blue}\n`);
    writeFileSync(join(disco, 'green'), `127.0.0.1 ${green}\n`);

    const [ctlPort, linkPort, resolverAdmin, proxyPort, proxyAdmin] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
    const ctl = `http://127.0.0.1:${ctlPort}`;
    const resolverConfig = join(dir, 'resolver.json');
    writeFileSync(
      resolverConfig,
      JSON.stringify({
        admin: { port: resolverAdmin },
        interfaces: [{ kind: 'io.prx.httpController', ip: '127.0.0.1', port: ctlPort }, ...(link.iface === undefined ? [] : [link.iface(linkPort)])],
        storage: {
          kind: 'io.prx.kvstore2',
          experimental: true,
          host: etcd.host,
          port: etcd.port,
          pathPrefix: `/prx-e2e-${link.name}/${process.pid}-${Date.now()}`,
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
            interpreter: link.interpreter(link.iface === undefined ? ctlPort : linkPort, 'e2e'),
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

    // The resolver's admin explains the stored dtab; the proxy's shows the interpreter's state.
    const stored = await request(`http://127.0.0.1:${resolverAdmin}/dtab/delegator.json?namespace=e2e&path=/svc/web`);
    assert.equal(stored.status, 200, stored.text);
    const state = await request(`http://127.0.0.1:${proxyAdmin}${link.statePath}`);
    assert.equal(state.status, 200, state.text);
    link.checkState(JSON.parse(state.text), state.text);
  } finally {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGTERM');
    await Promise.all(started.map((p) => p.exited));
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
