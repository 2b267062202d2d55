// The thrift/mux benchmark (scripts/bench-thrift.mjs), run briefly: its roles on their own (the
// raw framed-binary backend and load, the mux backend and load on prx's codec from dist/, the large
// client), then a 1-round × 1 s run through the real bin/prx (npm run build first). The full run
// takes minutes and is not a test; these check that the script measures, reports and judges.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../router/support.js';
import { assertOptionErrors, REPO, run, runIntoSection, scratchDir, type Ran } from './support.js';

const BENCH = join(REPO, 'scripts', 'bench-thrift.mjs');

interface LoadResult {
  readonly calls: number;
  readonly errors: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly firstError: string | null;
}

/** A role that prints {"port": N} and exits when its stdin closes. */
async function startRole(role: string, extra: readonly string[] = []): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [BENCH, '--role', role, ...extra], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${role} exited (${code})`)));
  });
  return { child, port: (JSON.parse(line) as { port: number }).port };
}

async function stopRole(child: ChildProcess): Promise<void> {
  child.stdin!.end();
  await new Promise((r) => (child.exitCode === null && child.signalCode === null ? child.once('exit', r) : r(null)));
}

function loadResult(r: Ran): LoadResult {
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as LoadResult;
  assert.ok(out.calls > 0 && out.rps > 0, r.stdout);
  assert.equal(out.errors, 0, r.stdout);
  assert.ok(out.p50 > 0 && out.p50 <= out.p99, r.stdout);
  return out;
}

describe('bench-thrift roles', () => {
  let thrift: { child: ChildProcess; port: number };
  let mux: { child: ChildProcess; port: number };

  before(async () => {
    [thrift, mux] = await Promise.all([startRole('thrift-backend'), startRole('mux-backend')]);
  });

  after(async () => {
    await Promise.all([stopRole(thrift.child), stopRole(mux.child)]);
  });

  it('the thrift load measures echo calls against the framed-binary backend', async () => {
    loadResult(await run([BENCH, '--role', 'thrift-load', '--port', String(thrift.port), '--duration', '1', '--warmup', '0', '--connections', '4']));
  });

  it('the thrift load counts calls that get no reply as errors, not as calls', async () => {
    // a relay in front of a port nobody listens on: each connection is accepted, then closed
    const relay = await startRole('relay', ['--port', String(await freePort())]);
    try {
      const r = await run([BENCH, '--role', 'thrift-load', '--port', String(relay.port), '--duration', '1', '--warmup', '0', '--connections', '2']);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as LoadResult;
      assert.equal(out.calls, 0, r.stdout);
      assert.ok(out.errors > 0, r.stdout);
      assert.match(out.firstError ?? '', /connection/, r.stdout);
    } finally {
      await stopRole(relay.child);
    }
  });

  it('the mux load measures dispatches on several sessions against the mux backend', async () => {
    loadResult(await run([BENCH, '--role', 'mux-load', '--port', String(mux.port), '--duration', '1', '--warmup', '0', '--sessions', '2', '--per-session', '4']));
  });

  it('the relay passes thrift calls through unchanged', async () => {
    const relay = await startRole('relay', ['--port', String(thrift.port)]);
    try {
      assert.notEqual(relay.port, thrift.port);
      loadResult(await run([BENCH, '--role', 'thrift-load', '--port', String(relay.port), '--duration', '1', '--warmup', '0', '--connections', '2']));
    } finally {
      await stopRole(relay.child);
    }
  });

  it('the large client sends a large call and receives a large reply, whole', async () => {
    const bytes = 3 * 1024 * 1024 + 7;
    for (const direction of ['up', 'down']) {
      const r = await run([BENCH, '--role', 'thrift-large', '--port', String(thrift.port), '--bytes', String(bytes), '--direction', direction]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal((JSON.parse(r.stdout) as { bytes: number }).bytes, bytes, `${direction}: ${r.stdout}`);
    }
  });
});

describe('bench-thrift options', () => {
  it('rejects unknown options, malformed numbers and roles with exit 2; skips in the other suites’ modes', async () => {
    const bad = [
      ['--bogus'], ['--rounds', '0'], ['--duration', 'x'], ['--connections', '0'], ['--sessions', '-1'], ['--per-session', '1.5'],
      ['--mib', '0'], ['--parts', 'thrift,h3'], ['--parts', ''], ['--role', 'both'], ['--role', 'relay'], ['--role', 'thrift-load'],
      ['--role', 'thrift-large', '--port', '1', '--direction', 'sideways'],
    ];
    await assertOptionErrors(BENCH, 'bench-thrift', bad);
  });
});

describe('bench-thrift through prx (1 round × 1 s)', () => {
  const dir = scratchDir('prx-bench-thrift-test-');

  it('measures direct, relay and prx for thrift and mux, the large call and reply, and writes its section, replacing its own', async () => {
    const short = ['--rounds', '1', '--duration', '1', '--warmup', '0', '--connections', '4', '--sessions', '2', '--per-session', '2', '--mib', '2'];
    // an earlier http section's figure, which the CPU target is judged against
    const earlier = '# earlier\n\n| CPU ≤ 40 µs/request at 16 conns | 23.5 µs | yes |\n\n';
    const { ran: r, text } = await runIntoSection(BENCH, { name: 'bench-thrift', heading: '## thrift and mux', md: join(dir(), 'latest.md'), earlier }, short, 120_000);
    for (const p of ['thrift', 'mux']) {
      for (const t of ['direct', 'relay', 'prx']) assert.match(r.stdout, new RegExp(`r1 ${p} ${t}: [\\d,]+ rps, p50 [\\d.]+ ms, p99 [\\d.]+ ms, errors 0`));
    }
    assert.match(r.stdout, /large up: 2097152 of 2097152 bytes/);
    assert.match(r.stdout, /large down: 2097152 of 2097152 bytes/);
    for (const p of ['thrift', 'mux']) {
      assert.match(text, new RegExp(`\\| ${p} \\| direct \\| [\\d,]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| 0 \\| – \\| – \\|`));
      assert.match(text, new RegExp(`\\| ${p} \\| \\*\\*prx\\*\\* \\| [\\d,]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| 0 \\| [\\d.]+ \\| [\\d.]+ \\|`));
    }
    assert.match(text, /\| thrift throughput against direct \(reported\) \| [\d.]+× direct \| – \|/);
    // the HTTP/1.1 router's figure is read from the file's http section
    assert.match(text, /\| thrift prx CPU per call ≤ the HTTP\/1\.1 router's 23\.50 µs\/request \(16 conns, latest\.md\) \| [\d.]+ µs \| (yes|no) \|/);
    assert.match(text, /\| mux throughput and p99 against direct \(reported\) \| [\d.]+× direct, p99 \+-?[\d.]+ ms \| – \|/);
    assert.match(text, /\| a 2\.00 MiB call passes, prx's RSS growing < 2 × the payload \| \+-?[\d.]+ MiB .* \| (yes|no) \|/);
    assert.match(text, /\| a 2\.00 MiB reply passes, prx's RSS growing < 2 × the payload \| \+-?[\d.]+ MiB .* \| (yes|no) \|/);
  });

  it('leaves the CPU comparison open when the file has no HTTP/1.1 figure, and runs only the parts asked for', async () => {
    const md = join(dir(), 'bare.md');
    const r = await run([BENCH, '--rounds', '1', '--duration', '1', '--warmup', '0', '--connections', '2', '--parts', 'thrift', '--md', md], 120_000);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(r.stdout, /r1 mux|large/);
    const text = readFileSync(md, 'utf8');
    assert.ok(text.startsWith('<!-- bench-thrift: begin'), text);
    assert.match(text, /\| thrift prx CPU per call ≤ the HTTP\/1\.1 router's \(not in .*bare\.md: run the http suite\) \| [\d.]+ µs \| \? \|/);
    assert.doesNotMatch(text, /\| mux \||MiB call passes/);
  });
});
