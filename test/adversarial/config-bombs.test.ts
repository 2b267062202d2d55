// Config files built to hurt: an alias bomb, brackets nested thousands deep, files and values
// far past any real config. The built executables (bin/prx, bin/prx-resolver, as operators run
// them: `npm run build` first) must refuse each with a one-line reason naming where it is and exit
// 1 — never an uncaught exception printing the bundle's minified source, never a crash or a hang.
// The generators are exported so other entry points that read configs can be run through them.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'prx-config-bombs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** "Billion laughs": `levels` anchors, each a list of `fanout` aliases of the previous one. */
export function aliasBomb(levels = 10, fanout = 9): string {
  const lines = [`a0: &a0 [${Array(fanout).fill('"lol"').join(',')}]`];
  for (let i = 1; i < levels; i++) lines.push(`a${i}: &a${i} [${Array(fanout).fill(`*a${i - 1}`).join(',')}]`);
  return `${lines.join('\n')}\n`;
}

/** A key whose value is `depth` nested flow lists. */
export function deepFlow(depth = 10_000): string {
  return `a: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
}

/** A proxy config whose one router has `label` and `dtab` (for --check: nothing listens). */
export function proxyConfig(label = 'web', dtab = '/svc => /$/inet/127.0.0.1/1'): string {
  return `${JSON.stringify({ admin: { port: 9990 }, routers: [{ protocol: 'http', label, dtab, servers: [{ port: 4140 }] }] })}\n`;
}

/** A resolver config whose in-memory store holds `dtab` as namespace `default` (for --check). */
export function resolverConfig(dtab = '/svc => /#/io.prx.fs'): string {
  return `${JSON.stringify({ admin: { port: 9991 }, interfaces: [{ kind: 'io.prx.httpController', port: 4180 }], storage: { kind: 'io.prx.inMemory', namespaces: { default: dtab } } })}\n`;
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

interface Run {
  readonly code: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a built executable to its end (killed after 60 s: a hang is a failure too). */
function run(name: 'prx' | 'prx-resolver', args: readonly string[], stdin?: string): Promise<Run> {
  assert.ok(existsSync(join(REPO, 'dist', 'bundle', `${name}.js`)), `dist/bundle/${name}.js is missing: run npm run build`);
  const child = spawn(join(REPO, 'bin', name), args, { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.on('error', () => undefined); // the process may stop reading early: that is the point
  child.stdin.end(stdin);
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code: code ?? signal ?? -1, stdout, stderr });
    }),
  );
}

/** Refused as a config error: exit 1, one `<name>: …` report on stderr matching `reason`, no stack. */
function assertRefused(r: Run, name: string, reason: RegExp): void {
  assert.equal(r.code, 1, `exit status; stderr:\n${r.stderr.slice(0, 2000)}`);
  assert.match(r.stderr, new RegExp(`^${name}: `));
  assert.match(r.stderr, reason);
  assert.doesNotMatch(r.stderr, /\n\s+at |node_modules|Node\.js v|ReferenceError|RangeError|FATAL/, 'no stack trace or crash');
  assert.ok(r.stderr.length < 2000, `a short report, got ${r.stderr.length} characters`);
}

const BOTH = [
  ['prx', ['--check']],
  ['prx', []],
  ['prx-resolver', ['--check']],
  ['prx-resolver', []],
] as const;

describe('config bombs against the built executables', { concurrency: 2 }, () => {
  for (const [name, flags] of BOTH) {
    const cmd = `${name}${flags.length > 0 ? ` ${flags.join(' ')}` : ''}`;

    test(`${cmd}: an alias bomb is refused naming the key where it explodes`, async () => {
      const r = await run(name, [...flags, file(`bomb-${name}-${flags.length}.yaml`, aliasBomb())]);
      assertRefused(r, name, /\n {2}a5: expands to more than 100000 values at line 6, column 9 \(YAML aliases repeat what they name: an alias bomb\?\)\n/);
    });

    test(`${cmd}: flow collections nested 10,000 deep are refused before parsing`, async () => {
      const r = await run(name, [...flags, file(`deep-${name}-${flags.length}.yaml`, deepFlow())]);
      assertRefused(r, name, /collections nested deeper than 64 levels at line 1, column 68/);
    });

    test(`${cmd}: a config file over 4 MiB is refused with its size and the limit`, async () => {
      const path = file(`big-${name}-${flags.length}.yaml`, `# ${'x'.repeat(5 * 1024 * 1024)}\n`);
      const r = await run(name, [...flags, path]);
      assertRefused(r, name, new RegExp(`cannot read configuration from ${path}: 5242883 bytes, larger than the limit of 4194304 bytes`));
    });
  }

  test('prx --check -: standard input is read no further than the limit', async () => {
    const r = await run('prx', ['--check', '-'], `# ${'x'.repeat(6 * 1024 * 1024)}\n`);
    assertRefused(r, 'prx', /cannot read configuration from <stdin>: larger than the limit of 4194304 bytes/);
  });

  test('prx --check: a 1 MB router label is refused naming the key, the value cut short', async () => {
    const r = await run('prx', ['--check', file('huge-label.json', proxyConfig('x'.repeat(1024 * 1024)))]);
    assertRefused(r, 'prx', /routers\[0\]\.label: a string longer than 131072 characters \(1048576\) at line 1, column \d+, got "x{58}…/);
  });

  test('prx and prx-resolver --check: the generators\' sound configs are accepted (the refusals below are theirs alone)', async () => {
    const label = 'x'.repeat(128);
    const proxy = await run('prx', ['--check', file('sound-proxy.json', proxyConfig(label, '/svc => /$/inet/127.0.0.1/1;/a => /b'))]);
    assert.equal(proxy.code, 0, proxy.stderr);
    assert.match(proxy.stdout, new RegExp(`"label": "${label}"`));
    const resolver = await run('prx-resolver', ['--check', file('sound-resolver.json', resolverConfig())]);
    assert.equal(resolver.code, 0, resolver.stderr);
  });

  for (const [label, why] of [
    ['x'.repeat(129), '129 characters'],
    ['web/admin', 'a "/"'],
    ['my router', 'a space'],
    ['a:b|c', 'statsd separators'],
  ] as const) {
    test(`prx --check: a router label with ${why} is refused`, async () => {
      const r = await run('prx', ['--check', file(`label-${why.replace(/\W/g, '')}.json`, proxyConfig(label))]);
      assertRefused(
        r,
        'prx',
        /routers\[0\]\.label: must be 1 to 128 characters from A-Z, a-z, 0-9, "_", "\." and "-" \(it names metrics and admin pages\), got "/,
      );
    });
  }

  test('prx --check: a dtab longer than a config string may be is refused', async () => {
    const dtab = Array.from({ length: 5000 }, (_, i) => `/svc/s${i} => /$/inet/127.0.0.1/1`).join(';');
    const r = await run('prx', ['--check', file('long-dtab.json', proxyConfig('web', dtab))]);
    assertRefused(r, 'prx', new RegExp(`routers\\[0\\]\\.dtab: a string longer than 131072 characters \\(${dtab.length}\\) at line 1, column \\d+, got "/svc/s0`));
  });

  test('prx-resolver --check: a stored dtab longer than a config string may be is refused', async () => {
    const dtab = Array.from({ length: 5000 }, (_, i) => `/svc/s${i} => /#/io.prx.fs/s${i}`).join(';');
    const r = await run('prx-resolver', ['--check', file('resolver-long-dtab.json', resolverConfig(dtab))]);
    assertRefused(r, 'prx-resolver', /storage\.namespaces\.default: a string longer than 131072 characters \(\d+\) at line 1/);
  });

  test('prx --check: an alias that names no anchor is a clean syntax error', async () => {
    const r = await run('prx', ['--check', file('unknown-alias.yaml', 'admin: *nowhere\n')]);
    assert.equal(r.code, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /\n\s+at |node_modules|Node\.js v/);
  });

  test('prx --check: a config reusing one anchor 2,000 times is read (aliases are bounded by size, not by use)', async () => {
    const yaml = `admin: &admin {port: 9990}\nrouters: [{protocol: http, servers: [{port: 4140}]}]\nreuse: [${Array(2000).fill('*admin').join(', ')}]\n`;
    const r = await run('prx', ['--check', file('many-aliases.yaml', yaml)]);
    // Read as data: the only complaint is the unknown key that holds the aliases.
    assertRefused(r, 'prx', /^prx: invalid configuration in .*many-aliases\.yaml:\n {2}reuse: unknown key \(known keys: [^)]*\)\n$/);
  });
});
