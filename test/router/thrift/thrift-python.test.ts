// Issue #18 (thrift): Debian's python3-thriftpy, an independent implementation, as client and as
// backend through a thrift router (it loads test/fixtures/thrift/echo.thrift at run time). When
// thriftpy is missing it is installed with PRX_TEST_INSTALL=1 (or in CI), else the tests fail
// with the command to run (test/helpers/services.ts).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { ensureServicesInstalled } from '../../helpers/services.js';
import { ApacheClient, MT, startApacheBackend, type Framing, type Proto } from './apache.js';
import { freePort, startThriftRouter, type ThriftRouterUnderTest } from './harness.js';

const PEER = fileURLToPath(new URL('../../fixtures/thrift/thriftpy_peer.py', import.meta.url));
// Debian's python, where python3-thriftpy lives (the one on PATH may be another).
const PYTHON = '/usr/bin/python3';

/** Runs the thriftpy client with `ops`; resolves with one parsed JSON line per op. */
function pyClient(port: number, f: Framing, p: Proto, ops: string[]): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [PEER, 'client', String(port), f, p, ...ops], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`thriftpy client exited ${code}: ${err}`));
      else resolve(out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>));
    });
  });
}

/** Starts a thriftpy server and waits (bounded) until it accepts connections. */
async function pyServer(f: Framing, p: Proto, label: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(PYTHON, [PEER, 'server', String(port), f, p, label], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((r) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        r(true);
      });
      s.once('error', () => r(false));
    });
    if (ok) return { port, child };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill();
  throw new Error('thriftpy server did not start');
}

// Binary only: Debian's thriftpy 0.3.9 compact protocol calls array.tostring(), gone since Python 3.9.
const COMBOS: readonly [Framing, Proto][] = [
  ['framed', 'binary'],
  ['buffered', 'binary'],
];

for (const [framing, proto] of COMBOS) {
  describe(`thrift router with thriftpy: ${framing} ${proto}`, () => {
    let apache: Awaited<ReturnType<typeof startApacheBackend>>;
    let py: { port: number; child: ChildProcess };
    let rt: ThriftRouterUnderTest;
    const framed = framing === 'framed';

    before(async () => {
      await ensureServicesInstalled();
      apache = await startApacheBackend(framing, proto, 'apache');
      py = await pyServer(framing, proto, 'py');
      rt = await startThriftRouter({
        label: 'py',
        thriftProtocol: proto,
        thriftMethodInDst: true,
        servers: [{ thriftFramed: framed }],
        client: { thriftFramed: framed },
        dtab: `/svc => /$/inet/127.0.0.1/${apache.port}`,
      });
    });
    after(async () => {
      await rt?.close();
      await apache?.close();
      py?.child.kill();
    });

    // No oneway here: thriftpy writes oneway calls as CALL messages, so a proxy that reads only the
    // header cannot tell them from calls and waits for a reply that never comes.
    it('a thriftpy client: calls, a declared exception, thriftMethodInDst, and a proxy failure as TApplicationException', async () => {
      const out = await pyClient(rt.port, framing, proto, ['echo:one', 'declared:two', 'slow:three', 'echo:four']);
      assert.deepEqual(out, [{ value: 'apache:one' }, { declared: 'declared two' }, { value: 'apache:three' }, { value: 'apache:four' }]);
      assert.equal(rt.metric('rt/py/service/svc/echo/requests'), 2);
      const nowhere = await startThriftRouter({ label: 'none', thriftProtocol: proto, servers: [{ thriftFramed: framed }], dtab: '/svc => /$/nil' });
      try {
        const [r] = await pyClient(nowhere.port, framing, proto, ['echo:x']);
        const app = r?.['app_exception'] as [number, string] | undefined;
        assert.equal(app?.[0], 6);
        assert.match(app?.[1] ?? '', /^prx: No hosts are available for \/svc, Dtab\.base=\[\/svc=>\/\$\/nil\]/);
      } finally {
        await nowhere.close();
      }
    });

    it('a thriftpy backend behind the router, called by Apache Thrift (pipelined)', async () => {
      const { port } = py;
      const direct = await startThriftRouter({
        label: 'topy',
        thriftProtocol: proto,
        servers: [{ thriftFramed: framed }],
        client: { thriftFramed: framed },
        dtab: `/svc => /$/inet/127.0.0.1/${port}`,
      });
      const d = await ApacheClient.open(direct.port, framing, proto);
      try {
        const replies = await Promise.all([d.call('echo', 'a', 1), d.call('echo', 'b', 2), d.call('declared', 'c', 3)]);
        assert.deepEqual(
          replies.map((r) => [r.type, r.seqid, r.value ?? r.declared]),
          [
            [MT.REPLY, 1, 'py:a'],
            [MT.REPLY, 2, 'py:b'],
            [MT.REPLY, 3, 'declared c'],
          ],
        );
      } finally {
        d.close();
        await direct.close();
      }
    });
  });
}
