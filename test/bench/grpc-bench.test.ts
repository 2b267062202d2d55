// The gRPC benchmark (scripts/bench-grpc.mjs) and the h2 soak (scripts/h2-soak.ts), run briefly:
// real grpc-js clients and servers, the real bin/prx (npm run build first). The full runs take
// minutes and are not tests; these check that the scripts measure, report and judge.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { assertOptionErrors, REPO, run, runIntoSection, scratchDir } from './support.js';

const BENCH = join(REPO, 'scripts', 'bench-grpc.mjs');

describe('bench-grpc roles', () => {
  let server: ChildProcess;
  let port: number;

  before(async () => {
    server = spawn(process.execPath, [BENCH, '--role', 'server'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: server.stdout! });
      lines.once('line', resolve);
      server.once('exit', (code) => reject(new Error(`server exited (${code})`)));
    });
    port = (JSON.parse(line) as { port: number }).port;
  });

  after(async () => {
    server.stdin!.end(); // the server role exits when its stdin closes
    await new Promise((r) => (server.exitCode === null ? server.once('exit', r) : r(null)));
  });

  it('the relay passes calls through to the server unchanged', async () => {
    const relay = spawn(process.execPath, [BENCH, '--role', 'relay', '--port', String(port)], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: relay.stdout }).once('line', resolve);
        relay.once('exit', (code) => reject(new Error(`relay exited (${code})`)));
      });
      const relayPort = (JSON.parse(line) as { port: number }).port;
      assert.notEqual(relayPort, port);
      const r = await run([BENCH, '--role', 'client', '--port', String(relayPort), '--duration', '1', '--warmup', '0', '--concurrency', '4']);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { calls: number; errors: number };
      assert.ok(out.calls > 0, r.stdout);
      assert.equal(out.errors, 0);
    } finally {
      relay.stdin.end();
      await new Promise((r) => (relay.exitCode === null ? relay.once('exit', r) : r(null)));
    }
  });

  it('the client measures unary calls against the server: rps, p50 ≤ p99, no errors', async () => {
    const r = await run([BENCH, '--role', 'client', '--port', String(port), '--duration', '1', '--warmup', '0', '--concurrency', '4']);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { calls: number; errors: number; rps: number; p50: number; p99: number };
    assert.ok(out.calls > 0 && out.rps > 0, r.stdout);
    assert.equal(out.errors, 0);
    assert.ok(out.p50 > 0 && out.p50 <= out.p99, r.stdout);
  });
});

describe('bench-grpc prx-h2 roles (prx\'s own HTTP/2 client and gRPC server)', () => {
  it('the prx-h2 client makes unary calls to the prx-h2 server and to a grpc-js server', async () => {
    for (const impl of ['prx-h2', 'grpc-js']) {
      const server = spawn(process.execPath, [BENCH, '--role', 'server', '--impl', impl], { stdio: ['pipe', 'pipe', 'inherit'] });
      try {
        const line = await new Promise<string>((resolve, reject) => {
          createInterface({ input: server.stdout }).once('line', resolve);
          server.once('exit', (code) => reject(new Error(`server exited (${code})`)));
        });
        const { port } = JSON.parse(line) as { port: number };
        const r = await run([BENCH, '--role', 'client', '--impl', 'prx-h2', '--port', String(port), '--duration', '1', '--warmup', '0', '--concurrency', '4', '--rate', '400']);
        assert.equal(r.code, 0, r.stderr);
        const out = JSON.parse(r.stdout) as { calls: number; errors: number; firstError: string | null; p50: number; p99: number };
        assert.ok(out.calls > 100, `${impl}: ${r.stdout}`);
        assert.equal(out.errors, 0, `${impl}: ${out.firstError}`);
        assert.ok(out.p50 > 0 && out.p50 <= out.p99, r.stdout);
      } finally {
        server.stdin.end();
        await new Promise((r) => (server.exitCode === null ? server.once('exit', r) : r(null)));
      }
    }
  });

  it('a grpc-js client calls the prx-h2 server', async () => {
    const server = spawn(process.execPath, [BENCH, '--role', 'server', '--impl', 'prx-h2'], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const line = await new Promise<string>((resolve) => createInterface({ input: server.stdout }).once('line', resolve));
      const { port } = JSON.parse(line) as { port: number };
      const r = await run([BENCH, '--role', 'client', '--port', String(port), '--duration', '1', '--warmup', '0', '--concurrency', '2', '--rate', '200']);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { calls: number; errors: number; firstError: string | null };
      assert.ok(out.calls > 50, r.stdout);
      assert.equal(out.errors, 0, String(out.firstError));
    } finally {
      server.stdin.end();
      await new Promise((r) => (server.exitCode === null ? server.once('exit', r) : r(null)));
    }
  });
});

describe('bench-grpc options', () => {
  it('rejects unknown options and malformed numbers with exit 2; skips in the other suites’ modes', async () => {
    await assertOptionErrors(BENCH, 'bench-grpc', [['--bogus'], ['--rounds', '0'], ['--duration', 'x'], ['--concurrency', '0'], ['--rate', '-1'], ['--impl', 'grpcio'], ['--role', 'both'], ['--role', 'relay']]);
  });
});

describe('bench-grpc through prx (1 round × 1 s)', () => {
  const dir = scratchDir('prx-bench-grpc-test-');

  it('measures direct and prx in the same run and writes its section into latest.md, replacing its own', async () => {
    const { ran: r, text } = await runIntoSection(
      BENCH,
      { name: 'bench-grpc', heading: '## gRPC unary', md: join(dir(), 'latest.md'), earlier: '# prx proxy benchmark — earlier\n\n| HTTP rows |\n\n' },
      ['--rounds', '1', '--duration', '1', '--warmup', '0', '--concurrency', '4', '--rate', '200'],
    );
    assert.match(r.stdout, /r1 direct: [\d,]+ rps/);
    assert.match(r.stdout, /r1 prx paced at 200\/s: [\d,]+ rps, p50 [\d.]+ ms, p99 [\d.]+ ms, errors 0/);
    assert.match(text, /### Saturated: calls back to back/);
    assert.match(text, /### Paced: 200 calls\/s offered/);
    assert.match(text, /prx − direct, paced, median of the per-round differences/);
    assert.match(text, /\| 1 \| paced \| [\d,]+ rps, [\d.]+ \/ [\d.]+ \|/);
    assert.match(r.stdout, /r1 relay: [\d,]+ rps, p50 [\d.]+ ms, p99 [\d.]+ ms, errors 0/);
    assert.match(r.stdout, /r1 prx: [\d,]+ rps, p50 [\d.]+ ms, p99 [\d.]+ ms, errors 0/);
    assert.match(text, /\| direct \| [\d,]+ \| [\d.]+ \| [\d.]+ \|/);
    assert.match(text, /\| relay \| [\d,]+ \| [\d.]+ \| [\d.]+ \|/);
    assert.match(text, /relay − direct \(one more hop, whatever the proxy\): p50 -?[\d.]+ ms, p99 -?[\d.]+ ms; prx − relay: p50 -?[\d.]+ ms/);
    assert.match(text, /\| \*\*prx\*\* \| [\d,]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| 0 \| [\d,]+ \| [\d.]+ \|/);
    assert.match(text, /\| added latency at p50 ≤ 0\.3 ms \| -?[\d.]+ ms \| (yes|no) \|/);
    assert.match(text, /\| added latency at p99 ≤ 1 ms \| -?[\d.]+ ms \| (yes|no) \|/);
  });
});

describe('bench-grpc --impl prx-h2 through prx (1 round × 1 s)', () => {
  const dir = scratchDir('prx-bench-grpc-h2-test-');

  it('measures direct, the relay and prx with prx\'s own client and server, in a section of its own', async () => {
    const md = join(dir(), 'latest.md');
    writeFileSync(md, '# prx proxy benchmark — earlier\n\n<!-- bench-grpc: begin (scripts/bench-grpc.mjs replaces this section) -->\n## gRPC unary — grpc-js rows\n<!-- bench-grpc: end -->\n');
    const r = await run([BENCH, '--impl', 'prx-h2', '--rounds', '1', '--duration', '1', '--warmup', '0', '--concurrency', '4', '--rate', '200', '--md', md]);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const text = readFileSync(md, 'utf8');
    assert.match(text, /## gRPC unary — grpc-js rows/, 'the grpc-js section is left as it was');
    assert.equal(text.split('## gRPC unary (prx-h2 client and server)').length, 2, 'one prx-h2 section');
    assert.match(r.stdout, /r1 prx: [\d,]+ rps, p50 [\d.]+ ms, p99 [\d.]+ ms, errors 0/);
    assert.match(r.stdout, /r1 prx paced at 200\/s: [\d,]+ rps, p50 [\d.]+ ms, p99 [\d.]+ ms, errors 0/);
    assert.match(text, /a unary client on prx's own HTTP\/2 client session and prx's own gRPC server/);
    assert.match(text, /\| added latency at p99 ≤ 1 ms \| -?[\d.]+ ms \| (yes|no) \|/);
  });
});

describe('scripts/h2-soak.ts (3 s)', () => {
  it('keeps a bidi stream and unary load through prx, reports them, and passes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-h2-soak-test-'));
    try {
      const json = join(dir, 'soak.json');
      const r = await run(['--import', 'tsx', join(REPO, 'scripts', 'h2-soak.ts'), '--duration', '3s', '--interval', '1s', '--rps', '100', '--json', json], 60_000);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /\[\s+1 s\] bidi sent \d+ recv \d+/);
      assert.match(r.stdout, /PASS/);
      const s = JSON.parse(readFileSync(json, 'utf8')) as {
        ok: boolean;
        bidi: { sent: number; received: number; stalls: number; status: string };
        unary: { ok: number; failed: number; p99Ms: number };
        prx: { rssMiB: { start: number; peak: number; end: number }; fds: { start: number; end: number } };
      };
      assert.equal(s.ok, true);
      assert.ok(s.bidi.sent > 100, JSON.stringify(s)); // a message every 10 ms for 3 s
      assert.equal(s.bidi.received, s.bidi.sent);
      assert.equal(s.bidi.stalls, 0);
      assert.equal(s.bidi.status, 'OK');
      assert.ok(s.unary.ok > 150 && s.unary.failed === 0, JSON.stringify(s.unary));
      assert.ok(s.prx.rssMiB.start > 0 && s.prx.rssMiB.peak >= s.prx.rssMiB.start && s.prx.fds.end > 0, JSON.stringify(s.prx));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails, naming it, when the bidi stream stalls or a unary call fails (--inject)', async () => {
    const soak = (fault: string) => run(['--import', 'tsx', join(REPO, 'scripts', 'h2-soak.ts'), '--duration', '3s', '--rps', '50', '--inject', fault], 60_000);
    const [stall, unaryError] = await Promise.all([soak('stall'), soak('unary-error')]);
    assert.equal(stall.code, 1, `${stall.stdout}\n${stall.stderr}`);
    assert.match(stall.stdout, /1 stall\(s\) over 1000 ms/);
    assert.match(stall.stdout, /FAIL:\n\s+- bidi: no echo for 1\d{3} ms/);
    assert.equal(unaryError.code, 1, `${unaryError.stdout}\n${unaryError.stderr}`);
    assert.match(unaryError.stdout, /unary: 1 failed \(1× INTERNAL: injected by --inject unary-error\)/);
    assert.match(unaryError.stdout, /0 stall\(s\)/);
  });

  it('rejects a malformed duration with exit 2', async () => {
    const r = await run(['--import', 'tsx', join(REPO, 'scripts', 'h2-soak.ts'), '--duration', 'forever']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--duration must be a duration like 60s, 30m or 2h/);
  });
});
