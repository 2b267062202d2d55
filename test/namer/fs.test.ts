import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Addr, type BoundName, ConfiguredNamersInterpreter, type NameTree, type State, readDtab, readPath, showTree,
} from '../../src/naming/index.js';
import { FsNamer, parseAddresses } from '../../src/namer/fs.js';
import { openDirectoryWatchers } from '../../src/namer/fs-snapshot.js';

const PREFIX = readPath('/#/io.prx.fs');

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'prx-fs-'));
  const namer = new FsNamer(dir, PREFIX);
  const interp = new ConfiguredNamersInterpreter([{ prefix: PREFIX, namer }]);
  return { dir, namer, interp, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Waits until `f` returns true for an update of `states` (bounded). */
function until<T>(observe: (cb: (s: T) => void) => { close(): void }, f: (s: T) => boolean, ms = 3000): Promise<T> {
  return new Promise((resolve, reject) => {
    // eslint-disable-next-line prefer-const -- read inside observe() before assignment
    let sub: { close(): void } | undefined;
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      sub?.close();
      reject(new Error('condition not reached in time'));
    }, ms);
    sub = observe((s) => {
      if (done || !f(s)) return;
      done = true;
      clearTimeout(timer);
      queueMicrotask(() => sub?.close());
      resolve(s);
    });
  });
}

const show = (s: State<NameTree<BoundName>>) =>
  s.kind === 'ok' ? showTree(s.value, (b) => `${b.idStr}${b.residual.isEmpty ? '' : ' ' + b.residual.show}`) : s.kind;

const ports = (a: Addr) => (a.kind === 'bound' ? a.addresses.map((x) => `${x.host}:${x.port}*${x.weight}`) : a.kind);

test('parses host port and host port * weight lines, comments and blanks', () => {
  const a = parseAddresses('cat', '# comment\n127.0.0.1 8080\n\n  10.0.0.2   9090 * 2.5  # trailing\nexample.com 80\n');
  assert.deepEqual(ports(a), ['127.0.0.1:8080*1', '10.0.0.2:9090*2.5', 'example.com:80*1']);
  assert.deepEqual(ports(parseAddresses('empty', '# nothing\n')), []);
});

test('a malformed line fails the address with the line in the message', () => {
  for (const [text, line] of [
    ['127.0.0.1 8080\nbogus\n', "line 2: 'bogus'"],
    ['127.0.0.1 99999\n', "line 1: '127.0.0.1 99999'"],
    ['127.0.0.1 80 x 2\n', "line 1: '127.0.0.1 80 x 2'"],
    ['127.0.0.1 80 * heavy\n', "line 1: '127.0.0.1 80 * heavy'"],
  ] as const) {
    const a = parseAddresses('dog', text);
    assert.equal(a.kind, 'failed');
    assert.equal(a.kind === 'failed' ? a.error.message : '', `malformed address in dog ${line}`);
  }
});

test('binds files, nested directories and residuals; a missing file is Neg', async () => {
  const { dir, interp, cleanup } = setup();
  try {
    writeFileSync(join(dir, 'cat'), '127.0.0.1 8080\n');
    mkdirSync(join(dir, 'team'));
    writeFileSync(join(dir, 'team', 'dog'), '127.0.0.1 9090 * 3\n');
    const dtab = readDtab('/svc=>/#/io.prx.fs');
    const bind = (p: string) => interp.bind(dtab, readPath(p)).toPromise();
    const cat = await bind('/svc/cat/extra/path');
    assert.equal(showTree(cat, (b) => `${b.idStr} ${b.residual.show}`), '/#/io.prx.fs/cat /extra/path');
    const dog = await bind('/svc/team/dog');
    assert.equal(dog.type, 'leaf');
    if (dog.type === 'leaf') assert.deepEqual(ports(await waitAddr(dog.value)), ['127.0.0.1:9090*3']);
    assert.equal((await bind('/svc/bird')).type, 'neg');
    assert.equal((await bind('/svc/team')).type, 'neg', 'a directory is not a name');
  } finally {
    cleanup();
  }
});

function waitAddr(b: BoundName): Promise<Addr> {
  return until<Addr>((cb) => b.addr.observe(cb), (a) => a.kind !== 'pending');
}

test('edits, creations, deletions and renames apply live', async () => {
  const { dir, interp, cleanup } = setup();
  try {
    const act = interp.bind(readDtab('/svc=>/#/io.prx.fs'), readPath('/svc/cat'));
    const states = (cb: (s: State<NameTree<BoundName>>) => void) => act.observe(cb);
    const seen: string[] = [];
    const sub = act.observe((s) => seen.push(show(s)));
    await until(states, (s) => show(s) === '~');
    writeFileSync(join(dir, 'cat'), '127.0.0.1 8080\n');
    const bound = await until(states, (s) => show(s) === '/#/io.prx.fs/cat');
    assert.equal(bound.kind, 'ok');
    if (bound.kind !== 'ok' || bound.value.type !== 'leaf') return;
    const addr = bound.value.value.addr;
    assert.deepEqual(ports(await until<Addr>((cb) => addr.observe(cb), (a) => a.kind === 'bound')), ['127.0.0.1:8080*1']);
    writeFileSync(join(dir, 'cat'), '127.0.0.1 8081\n127.0.0.1 8082\n');
    await until<Addr>((cb) => addr.observe(cb), (a) => ports(a).length === 2);
    writeFileSync(join(dir, 'cat'), 'nonsense\n');
    const bad = await until<Addr>((cb) => addr.observe(cb), (a) => a.kind === 'failed');
    assert.match(bad.kind === 'failed' ? bad.error.message : '', /malformed address in cat line 1: 'nonsense'/);
    renameSync(join(dir, 'cat'), join(dir, 'cat.old'));
    await until(states, (s) => show(s) === '~');
    renameSync(join(dir, 'cat.old'), join(dir, 'cat'));
    await until(states, (s) => show(s) === '/#/io.prx.fs/cat');
    rmSync(join(dir, 'cat'));
    await until(states, (s) => show(s) === '~');
    sub.close();
    assert.deepEqual(seen.filter((s, i) => s !== seen[i - 1]), seen, 'no duplicate consecutive updates');
  } finally {
    cleanup();
  }
});

test('new subdirectories are watched too', async () => {
  const { dir, interp, cleanup } = setup();
  try {
    const act = interp.bind(readDtab('/svc=>/#/io.prx.fs'), readPath('/svc/a/b'));
    const states = (cb: (s: State<NameTree<BoundName>>) => void) => act.observe(cb);
    const keep = act.observe(() => {});
    await until(states, (s) => show(s) === '~');
    mkdirSync(join(dir, 'a'));
    await new Promise((r) => setTimeout(r, 50)); // let the new directory be watched before writing into it
    writeFileSync(join(dir, 'a', 'b'), '127.0.0.1 1\n');
    await until(states, (s) => show(s) === '/#/io.prx.fs/a/b');
    keep.close();
  } finally {
    cleanup();
  }
});

test('enumerates its bound names', async () => {
  const { dir, namer, cleanup } = setup();
  try {
    writeFileSync(join(dir, 'cat'), '127.0.0.1 1\n');
    mkdirSync(join(dir, 'x'));
    writeFileSync(join(dir, 'x', 'dog'), '127.0.0.1 2\n');
    writeFileSync(join(dir, '.cat.swp'), 'ignored');
    const names = await namer.boundNames().toPromise();
    assert.deepEqual(names.map((p) => p.show), ['/#/io.prx.fs/cat', '/#/io.prx.fs/x/dog']);
  } finally {
    cleanup();
  }
});

test('closing the last observer closes the directory watchers', async () => {
  const { dir, interp, cleanup } = setup();
  try {
    writeFileSync(join(dir, 'cat'), '127.0.0.1 1\n');
    const watchers = openDirectoryWatchers;
    const before = watchers();
    const act = interp.bind(readDtab('/svc=>/#/io.prx.fs'), readPath('/svc/cat'));
    const sub = act.observe(() => {});
    await until((cb: (s: State<NameTree<BoundName>>) => void) => act.observe(cb), (s) => s.kind === 'ok');
    assert.ok(watchers() > before, 'watching while observed');
    sub.close();
    assert.equal(watchers(), before, 'no watcher left behind');
  } finally {
    cleanup();
  }
});
