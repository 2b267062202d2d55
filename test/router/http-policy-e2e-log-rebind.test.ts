// The access log's roll policies through a real router (size rolls with rotateCount; Daily,
// Hourly and Weekly(n) rolls at their UTC boundary, provoked with a mocked Date), and a slow
// request across a re-binding: it completes from the old backend while new requests go to the
// new one, and the old connection (same client, new addresses) or the old client (a new bound
// name) is closed only once that request is done.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { request } from 'undici';
import { eventually, metricNames, startBackend, startRouter, tempFsNamer, type Backend, type RouterUnderTest } from './harness.js';

async function get(rt: RouterUnderTest, path = '/', host = 'web'): Promise<{ status: number; body: string }> {
  const r = await request(`${rt.url}${path}`, { headers: { host, 'user-agent': 'prx-test' } });
  return { status: r.statusCode, body: await r.body.text() };
}

const lines = (file: string): string[] => readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
/** The request line's URI of an access-log line. */
const uriOf = (line: string): string => (line.split('"')[1] ?? '').split(' ')[1] ?? '';

describe('access log rolling through the router', () => {
  async function withLogDir(body: (dir: string, backend: Backend) => Promise<void>): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), 'prx-access-roll-'));
    const backend = await startBackend('log', (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '3' });
      res.end('log');
    });
    try {
      await body(dir, backend);
    } finally {
      await backend.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('a size policy rolls before a line would overflow the file; rotateCount keeps the newest rotated file', async () => {
    await withLogDir(async (dir, backend) => {
      const path = join(dir, 'access.log');
      // Each line is 86 bytes: three fit in 300.
      const rt = await startRouter({
        dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`,
        httpAccessLog: path,
        httpAccessLogRollPolicy: '300.bytes',
        httpAccessLogRotateCount: 1,
      });
      try {
        for (let i = 1; i <= 8; i++) assert.equal((await get(rt, `/r${i}`)).status, 200);
      } finally {
        await rt.close();
      }
      const files = readdirSync(dir).sort();
      assert.equal(files.length, 2, `the live file and one rotated file: ${files.join(', ')}`);
      const rotated = files.find((f) => f !== 'access.log') as string;
      assert.match(rotated, /^access-\d{8}-\d{6}(_\d{3})?\.log$/);
      assert.deepEqual(lines(path).map(uriOf), ['/r7', '/r8']);
      assert.deepEqual(lines(join(dir, rotated)).map(uriOf), ['/r4', '/r5', '/r6'], 'the oldest rotated file (r1-r3) was pruned');
      for (const f of files) assert.ok(statSync(join(dir, f)).size <= 300, `${f} within the size`);
      assert.match(lines(path)[0] as string, /^web 127\.0\.0\.1 - - \[\d{2}\/\d{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000\] "GET \/r7 HTTP\/1\.1" 200 3 "-" "prx-test"$/);
    });
  });

  // One line before the boundary, one after: the first goes to the rotated file, named for the
  // time the file was opened. Date is mocked (only Date: timers stay real).
  const timed = [
    { policy: 'Daily', now: Date.UTC(2024, 2, 5, 23, 59, 59, 500), rotated: 'access-20240305.log', before: '05/03/2024:23:59:59', after: '06/03/2024:00:00:00' },
    { policy: 'Hourly', now: Date.UTC(2024, 2, 5, 13, 59, 59, 500), rotated: 'access-20240305-13.log', before: '05/03/2024:13:59:59', after: '05/03/2024:14:00:00' },
    // 2024-03-05 is a Tuesday; Weekly(3) rolls at Wednesday 00:00 UTC.
    { policy: 'Weekly(3)', now: Date.UTC(2024, 2, 5, 23, 59, 59, 500), rotated: 'access-20240305.log', before: '05/03/2024:23:59:59', after: '06/03/2024:00:00:00' },
  ];
  for (const c of timed) {
    it(`${c.policy}: the first line after the boundary rolls the file to ${c.rotated}`, async (t) => {
      await withLogDir(async (dir, backend) => {
        t.mock.timers.enable({ apis: ['Date'], now: c.now });
        const path = join(dir, 'access.log');
        const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}`, httpAccessLog: path, httpAccessLogRollPolicy: c.policy });
        try {
          assert.equal((await get(rt, '/before')).status, 200);
          assert.equal((await get(rt, '/still-before')).status, 200);
          t.mock.timers.tick(1000);
          assert.equal((await get(rt, '/after')).status, 200);
        } finally {
          await rt.close();
          t.mock.timers.reset();
        }
        assert.deepEqual(readdirSync(dir).sort(), ['access.log', c.rotated].sort());
        const old = lines(join(dir, c.rotated));
        assert.deepEqual(old.map(uriOf), ['/before', '/still-before']);
        assert.ok((old[0] as string).includes(`[${c.before} +0000]`), old[0]);
        const live = lines(path);
        assert.deepEqual(live.map(uriOf), ['/after']);
        assert.ok((live[0] as string).includes(`[${c.after} +0000]`), live[0]);
      });
    });
  }

  it('a policy prx does not know is a config error naming the key', async () => {
    for (const policy of ['Weekly(7)', 'Monthly', '0.bytes', '3 megabytes']) {
      await assert.rejects(
        startRouter({ dtab: '/svc=>/$/inet/127.0.0.1/1', httpAccessLog: join(tmpdir(), 'never-written.log'), httpAccessLogRollPolicy: policy }),
        (e: Error) => e.message.includes('httpAccessLogRollPolicy'),
        policy,
      );
    }
  });
});

/** A backend that holds the response to `/slow` until the test ends it, noting its connection. */
interface SlowBackend extends Backend {
  slow: ServerResponse | undefined;
  slowSocketClosedAt: number;
}

async function startSlowBackend(name: string): Promise<SlowBackend> {
  const ref: { self?: SlowBackend } = {};
  const b = await startBackend(name, (req, res) => {
    req.resume();
    const self = ref.self as SlowBackend;
    if (req.url !== '/slow') {
      res.end(name);
      return;
    }
    self.slow = res;
    req.socket.once('close', () => (self.slowSocketClosedAt = performance.now()));
  });
  // No `Keep-Alive: timeout=5` hint, which would make prx drop the connection after 3 s whatever it decides.
  b.server.keepAliveTimeout = 0;
  ref.self = Object.assign(b, { slow: undefined, slowSocketClosedAt: 0 });
  return ref.self;
}

/** Sends requests until one is answered by `body` (the namer's change has reached the router). */
async function untilServedBy(rt: RouterUnderTest, body: string): Promise<void> {
  const until = performance.now() + 5000;
  for (;;) {
    const r = await get(rt);
    assert.equal(r.status, 200, 'no request fails across the re-binding');
    if (r.body === body) return;
    assert.ok(performance.now() < until, `traffic moved to ${body} within 5 s`);
  }
}

describe('a slow request across a re-binding', () => {
  it('fs file rewritten: the request completes 200 from the old backend; its connection closes only after', async () => {
    const old = await startSlowBackend('old');
    const fresh = await startBackend('new');
    const fs = tempFsNamer({ web: `127.0.0.1 ${old.port}\n` });
    const rt = await startRouter({ dtab: '/svc=>/#/io.prx.fs' }, { namers: [fs.mounted] });
    try {
      const slow = get(rt, '/slow');
      await eventually(() => old.slow !== undefined, 3000, 'the slow request at the old backend');
      fs.write('web', `127.0.0.1 ${fresh.port}\n`);
      await untilServedBy(rt, 'new');
      for (let i = 0; i < 5; i++) assert.equal((await get(rt)).body, 'new');
      assert.equal(rt.metric('rt/http/client/#/io.prx.fs/web/loadbalancer/size'), 1, 'the old endpoint is no longer balanced over');
      assert.equal(old.slowSocketClosedAt, 0, 'the old connection stays open under its request');
      const releasedAt = performance.now();
      (old.slow as ServerResponse).end('old, slowly');
      assert.deepEqual(await slow, { status: 200, body: 'old, slowly' });
      await eventually(() => old.slowSocketClosedAt > 0, 2000, 'the old connection to close once idle');
      assert.ok(old.slowSocketClosedAt >= releasedAt);
      assert.equal(rt.metric('rt/http/service/svc/web/failures'), 0);
    } finally {
      old.slow?.destroy();
      await rt.close();
      await old.close();
      await fresh.close();
      fs.close();
    }
  });

  it('re-bound to another client: the old client is closed (evicted) only after its request finished', async () => {
    const old = await startSlowBackend('old');
    const fresh = await startBackend('new');
    const fs = tempFsNamer({ 'web-v1': `127.0.0.1 ${old.port}\n` });
    // web-v2 is Neg until its file appears, then the name binds to it: another client. One
    // client slot: the new client can only take the old one's place once that one is idle.
    const rt = await startRouter(
      { dtab: '/svc/web=>/#/io.prx.fs/web-v2 | /#/io.prx.fs/web-v1', bindingCache: { clients: 1 } },
      { namers: [fs.mounted] },
    );
    const OLD = 'rt/http/client/#/io.prx.fs/web-v1';
    try {
      const slow = get(rt, '/slow');
      await eventually(() => old.slow !== undefined, 3000, 'the slow request at the old backend');
      fs.write('web-v2', `127.0.0.1 ${fresh.port}\n`);
      await untilServedBy(rt, 'new');
      assert.ok(rt.router.clients.peek('/#/io.prx.fs/web-v1') !== undefined, 'the busy old client is kept');
      assert.equal(rt.metric('rt/http/bindcache/client/evicts'), 0);
      assert.ok((rt.metric('rt/http/bindcache/client/oneshots') ?? 0) >= 1, 'the new client was a one-shot meanwhile');
      assert.equal(old.slowSocketClosedAt, 0);
      // Requests sent before the namer's change arrived went to the old client too.
      const oldSuccesses = rt.metric(`${OLD}/success`) ?? 0;
      (old.slow as ServerResponse).end('old, slowly');
      assert.deepEqual(await slow, { status: 200, body: 'old, slowly' });
      assert.equal(rt.metric(`${OLD}/success`), oldSuccesses + 1, 'counted on the old client');
      // The next request needs the slot: the now idle old client is evicted and closed.
      assert.equal((await get(rt)).body, 'new');
      assert.equal(rt.metric('rt/http/bindcache/client/evicts'), 1);
      assert.equal(rt.router.clients.peek('/#/io.prx.fs/web-v1'), undefined);
      assert.deepEqual(metricNames(rt, OLD), [], 'its metrics are pruned');
      await eventually(() => old.slowSocketClosedAt > 0, 2000, 'the old client’s connection to close');
      assert.equal(rt.metric('rt/http/service/svc/web/failures'), 0);
    } finally {
      old.slow?.destroy();
      await rt.close();
      await old.close();
      await fresh.close();
      fs.close();
    }
  });
});
