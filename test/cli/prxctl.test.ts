// `bin/prxctl` end to end against a real HTTP controller (in-memory store, a test namer): every
// command, its output, and its exit status (0 ok, 1 failed request, 2 usage).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { address, addrBound, failed } from '../../src/naming/index.js';
import { formatDtab, renderDelegateTree } from '../../src/cli/prxctl.js';
import { versionTag } from '../../src/resolver/interfaces/http-controller.js';
import { spawnCli } from '../helpers/run-cli.js';
import { type ControllerFixture, freePort, startController } from '../resolver/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'prxctl-'));
let fx: ControllerFixture;
before(async () => {
  fx = await startController({ yeezus: '/yeezy => /yeezus', tlop: '/yeezy => /pablo', default: '/svc => /#/test' });
  fx.namer.bind('foo', addrBound([address('127.0.0.1', 8080), address('::1', 8081)]));
});
after(async () => {
  await fx.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs prxctl against the fixture's controller; resolves with its exit status and output. */
async function prxctl(args: readonly string[], opts: { stdin?: string; env?: Record<string, string> } = {}) {
  const cli = spawnCli('prxctl', ['--base-url', fx.url, ...args], opts);
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

async function stored(ns: string): Promise<{ dtab: string; version: string } | undefined> {
  const v = await fx.store.observe(ns).toPromise(AbortSignal.timeout(1000));
  return v && { dtab: v.dtab.show, version: versionTag(v.version) };
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('usage', () => {
  test('--help prints the usage and exits 0', async () => {
    const r = await prxctl(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^usage: prxctl \[--base-url <url>\] <command>\n/);
    assert.match(r.stdout, /dtab update <ns> <file\|-> \[--if-match <v>\]/);
  });

  test('wrong command lines exit 2 with the reason and the usage', async () => {
    const cases: [string[], string][] = [
      [[], 'prxctl: no command given'],
      [['nope'], 'prxctl: unknown command nope'],
      [['dtab'], 'prxctl: dtab: no subcommand given'],
      [['dtab', 'get'], 'prxctl: usage: prxctl dtab get <ns> [--json]'],
      [['dtab', 'get', 'a', '--if-match', 'x'], 'prxctl: --if-match does not apply to this command'],
      [['dtab', 'list', '--bogus'], 'prxctl: unknown option --bogus'],
      [['delegate', 'default'], 'prxctl: usage: prxctl delegate <ns> <path> [--dtab <dtab>]'],
      [['dtab', 'update', 'a', 'f', '--if-match'], 'prxctl: --if-match needs a value'],
    ];
    for (const [args, message] of cases) {
      const r = await prxctl(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.ok(r.stderr.startsWith(`${message}\nusage: prxctl`), `${args.join(' ')}: ${r.stderr}`);
    }
    const url = spawnCli('prxctl', ['--base-url', 'ftp://x', 'dtab', 'list']);
    assert.equal(await url.exited, 2);
    assert.match(url.stderr(), /^prxctl: base URL must be http or https, got ftp:\/\/x\n/);
  });
});

describe('dtab commands', () => {
  test('list, with the base URL from PRXCTL_BASE_URL', async () => {
    const cli = spawnCli('prxctl', ['dtab', 'list'], { env: { PRXCTL_BASE_URL: fx.url } });
    assert.equal(await cli.exited, 0);
    assert.equal(cli.stdout(), 'default\ntlop\nyeezus\n');
  });

  test('--base-url wins over PRXCTL_BASE_URL', async () => {
    const r = await prxctl(['dtab', 'list'], { env: { PRXCTL_BASE_URL: 'http://127.0.0.1:1' } });
    assert.equal(r.code, 0);
  });

  test('get prints the version and one aligned dentry per line; --json the JSON', async () => {
    await fx.store.put('multi', (await import('../../src/naming/index.js')).readDtab('/svc => /#/test ; /svc/users => /$/inet/127.0.0.1/9 | ~'));
    let r = await prxctl(['dtab', 'get', 'multi']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, '# version AAAAAAAAAAE=\n/svc       => /#/test ;\n/svc/users => /$/inet/127.0.0.1/9 | ~ ;\n');
    r = await prxctl(['dtab', 'get', 'multi', '--json']);
    assert.equal(r.stdout, '[{"prefix":"/svc","dst":"/#/test"},{"prefix":"/svc/users","dst":"/$/inet/127.0.0.1/9 | ~"}]\n');
    r = await prxctl(['dtab', 'get', 'absent']);
    assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', 'prxctl: dtab namespace absent not found\n']);
  });

  test('create from a file, from stdin, and from a JSON file; conflicts and bad dtabs exit 1', async () => {
    let r = await prxctl(['dtab', 'create', 'fromfile', file('a.dtab', '# comment\n/a => /b ;\n/c => /d\n')]);
    assert.deepEqual([r.code, r.stdout], [0, 'created dtab namespace fromfile\n']);
    assert.deepEqual(await stored('fromfile'), { dtab: '/a=>/b;/c=>/d', version: 'AAAAAAAAAAE=' });
    r = await prxctl(['dtab', 'create', 'fromstdin', '-'], { stdin: '/x => /y' });
    assert.equal(r.code, 0);
    assert.equal((await stored('fromstdin'))?.dtab, '/x=>/y');
    r = await prxctl(['dtab', 'create', 'fromjson', file('a.json', '[{"prefix":"/j","dst":"/k"}]')]);
    assert.equal(r.code, 0);
    assert.equal((await stored('fromjson'))?.dtab, '/j=>/k');
    r = await prxctl(['dtab', 'create', 'fromfile', file('b.dtab', '/a => /z')]);
    assert.deepEqual([r.code, r.stderr], [1, 'prxctl: dtab namespace fromfile already exists\n']);
    r = await prxctl(['dtab', 'create', 'broken', file('c.dtab', '/a => ')]);
    assert.deepEqual([r.code, r.stderr], [1, "prxctl: invalid dtab: simple expected but end of input found at '/a => []'\n"]);
    assert.equal(await stored('broken'), undefined);
    r = await prxctl(['dtab', 'create', 'x', join(dir, 'nope.dtab')]);
    assert.deepEqual([r.code, r.stderr], [1, `prxctl: cannot read ${join(dir, 'nope.dtab')}: no such file\n`]);
  });

  test('update: what get printed reads back; a stale --if-match is a version mismatch', async () => {
    await fx.store.put('edit', (await import('../../src/naming/index.js')).readDtab('/a => /b'));
    const v1 = (await stored('edit'))?.version ?? '';
    const got = await prxctl(['dtab', 'get', 'edit']);
    const edited = file('edit.dtab', `${got.stdout}/c => /d ;\n`);
    let r = await prxctl(['dtab', 'update', 'edit', edited, '--if-match', v1]);
    assert.deepEqual([r.code, r.stdout], [0, 'updated dtab namespace edit\n']);
    assert.equal((await stored('edit'))?.dtab, '/a=>/b;/c=>/d');
    r = await prxctl(['dtab', 'update', 'edit', edited, `--if-match=${v1}`]);
    assert.deepEqual(
      [r.code, r.stderr],
      [1, `prxctl: version mismatch: dtab namespace edit is no longer at version ${v1}; get it again and retry\n`],
    );
    r = await prxctl(['dtab', 'update', 'edit', '-'], { stdin: '/e => /f' });
    assert.equal(r.code, 0);
    assert.equal((await stored('edit'))?.dtab, '/e=>/f');
    r = await prxctl(['dtab', 'update', 'ghost', edited, '--if-match', v1]);
    assert.deepEqual([r.code, r.stderr], [1, 'prxctl: dtab namespace ghost not found\n']);
  });

  test('delete, and deleting what is not there', async () => {
    await fx.store.put('gone', (await import('../../src/naming/index.js')).readDtab('/a => /b'));
    let r = await prxctl(['dtab', 'delete', 'gone']);
    assert.deepEqual([r.code, r.stdout], [0, 'deleted dtab namespace gone\n']);
    assert.equal(await stored('gone'), undefined);
    r = await prxctl(['dtab', 'delete', 'gone']);
    assert.deepEqual([r.code, r.stderr], [1, 'prxctl: dtab namespace gone not found\n']);
  });

  test('delete --if-match: only at that version; a malformed one is refused', async () => {
    const { readDtab } = await import('../../src/naming/index.js');
    await fx.store.put('held', readDtab('/a => /b'));
    const v1 = (await stored('held'))?.version ?? '';
    await fx.store.put('held', readDtab('/a => /c'));
    let r = await prxctl(['dtab', 'delete', 'held', '--if-match', v1]);
    assert.deepEqual(
      [r.code, r.stderr],
      [1, `prxctl: version mismatch: dtab namespace held is no longer at version ${v1}; get it again and retry\n`],
    );
    r = await prxctl(['dtab', 'delete', 'held', '--if-match', `"${v1}`]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^prxctl: invalid --if-match: Invalid If-Match .*: an entity-tag has no closing quote\n$/);
    assert.equal((await stored('held'))?.dtab, '/a=>/c');
    r = await prxctl(['dtab', 'delete', 'held', '--if-match', (await stored('held'))?.version ?? '']);
    assert.deepEqual([r.code, r.stdout], [0, 'deleted dtab namespace held\n']);
    assert.equal(await stored('held'), undefined);
  });
});

describe('delegate', () => {
  test('prints the delegation as an indented tree', async () => {
    fx.namer.set('err', failed(new Error('lookup failed')));
    const r = await prxctl(['delegate', 'default', '/svc/foo', '--dtab', '/svc/foo => /$/fail | /svc/err & 2 * /#/test/foo']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      [
        '/svc/foo  alt:',
        '  /$/fail  [/svc/foo => /$/fail | /svc/err & 2.00*/#/test/foo]  fail',
        '  /svc/foo  [/svc/foo => /$/fail | /svc/err & 2.00*/#/test/foo]  union:',
        '    1 * /svc/err  [/svc/foo => /$/fail | /svc/err & 2.00*/#/test/foo]',
        '      /#/test/err  [/svc => /#/test]  error: lookup failed',
        '    2 * /#/test/foo  [/svc/foo => /$/fail | /svc/err & 2.00*/#/test/foo]',
        '      bound /#/test/foo (residual /): 127.0.0.1:8080, [::1]:8081',
        '  /#/test/foo  [/svc => /#/test]',
        '    bound /#/test/foo (residual /): 127.0.0.1:8080, [::1]:8081',
        '',
      ].join('\n'),
    );
  });

  test('a bad path exits 1 with the controller’s reason', async () => {
    const r = await prxctl(['delegate', 'default', 'svc']);
    assert.deepEqual([r.code, r.stderr], [1, "prxctl: invalid request: Invalid path: svc / '/' expected but 's' found at '[s]vc'\n"]);
  });
});

test('an unreachable controller exits 1 naming the address', async () => {
  const port = await freePort();
  const cli = spawnCli('prxctl', ['--base-url', `http://127.0.0.1:${port}/`, 'dtab', 'list']);
  assert.equal(await cli.exited, 1);
  assert.equal(cli.stderr(), `prxctl: cannot reach the resolver at http://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`);
});

describe('formatting (in-process)', () => {
  test('formatDtab without a version and for the empty dtab', () => {
    assert.equal(formatDtab([], undefined), '\n');
    assert.equal(formatDtab([{ prefix: '/a', dst: '/b' }], 'V'), '# version V\n/a => /b ;\n');
  });

  test('renderDelegateTree: neg, empty, transformation and address states', () => {
    const text = renderDelegateTree({
      type: 'delegate',
      path: '/p',
      delegate: {
        type: 'alt',
        path: '/q',
        alt: [
          { type: 'neg', path: '~' },
          { type: 'empty', path: '/e' },
          { type: 'leaf', path: '/l', bound: { addr: { type: 'failed', cause: 'boom' }, id: '/l', path: '/r' } },
          { type: 'leaf', path: '/m', bound: { addr: { type: 'bound', addrs: [], meta: {} }, id: '/m', path: '/' } },
          {
            type: 'transformation',
            path: '/t',
            name: 'io.prx.port',
            bound: { addr: { type: 'pending' }, id: '/%/io.prx.port/1/#/x', path: '/' },
            tree: { type: 'leaf', path: '/#/x', bound: { addr: { type: 'neg' }, id: '/#/x', path: '/' } },
          },
        ],
      },
    });
    assert.equal(
      text,
      [
        '/p',
        '  /q  alt:',
        '    ~  neg',
        '    /e  empty',
        '    /l',
        '      bound /l (residual /r): failed: boom',
        '    /m',
        '      bound /m (residual /): no endpoints',
        '    /t  transformed by io.prx.port',
        '      bound /%/io.prx.port/1/#/x (residual /): pending',
        '      /#/x',
        '        bound /#/x (residual /): neg',
        '',
      ].join('\n'),
    );
  });
});
