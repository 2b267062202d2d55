import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, kindSlot, lookupKind, validate } from '../../src/config/index.js';
import { type BoundName, Dtab, type NameInterpreter, type NameTree, type State, SystemNamer, readDtab, readPath } from '../../src/naming/index.js';
import { FsDtabInterpreter, type InterpreterContext, TransformedInterpreter, interpreterState } from '../../src/interpreter/index.js';
import { MapNamer, PREFIX, eventually, showBound, until, untilShown } from './helpers.js';

function setup(initial: string | undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'prx-fs-interp-'));
  const file = join(dir, 'dtab');
  if (initial !== undefined) writeFileSync(file, initial);
  const namer = new MapNamer();
  for (const n of ['a', 'b', 'c']) namer.set(n, ['127.0.0.1:1']);
  const interp = new FsDtabInterpreter(file, [{ prefix: PREFIX, namer }], new SystemNamer());
  return { dir, file, interp, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

test('io.prx.fs config: dtabFile is required and must exist', () => {
  const dir = mkdtempSync(join(tmpdir(), 'prx-fs-cfg-'));
  try {
    const file = join(dir, 'dtab');
    writeFileSync(file, '/svc=>/#/io.prx.test;');
    const slot = kindSlot('interpreter');
    assert.deepEqual(validate(slot, { kind: 'io.prx.fs', dtabFile: file }), { kind: 'io.prx.fs', transformers: [], dtabFile: file });
    const fails = (raw: unknown, text: string) =>
      assert.throws(() => validate(slot, raw), (e: unknown) => e instanceof ConfigError && e.message.includes(text), text);
    fails({ kind: 'io.prx.fs' }, 'dtabFile: required key is missing');
    fails({ kind: 'io.prx.fs', dtabFile: join(dir, 'nope') }, `dtabFile: file does not exist, got "${join(dir, 'nope')}"`);
    fails({ kind: 'io.prx.fs', dtabFile: dir }, 'dtabFile: file does not exist');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('binds through the file dtab followed by the router/request dtab (which wins)', async () => {
  const { interp, cleanup } = setup('/svc => /#/io.prx.test/a;\n# a comment\n/other => /#/io.prx.test/c;\n');
  try {
    await untilShown(interp.bind(Dtab.empty, readPath('/svc/x')), '/#/io.prx.test/a /x');
    await untilShown(interp.bind(readDtab('/svc=>/#/io.prx.test/b'), readPath('/svc')), '/#/io.prx.test/b');
    await untilShown(interp.bind(readDtab('/svc=>/#/io.prx.test/nothing'), readPath('/svc')), '/#/io.prx.test/a');
    await untilShown(interp.bind(Dtab.empty, readPath('/other')), '/#/io.prx.test/c');
  } finally {
    cleanup();
  }
});

test('edits apply live, in place and by atomic rename', async () => {
  const { dir, file, interp, cleanup } = setup('/svc=>/#/io.prx.test/a');
  try {
    const act = interp.bind(Dtab.empty, readPath('/svc'));
    const seen: string[] = [];
    const sub = act.observe((s) => seen.push(showBound(s)));
    try {
      await eventually(() => seen.includes('/#/io.prx.test/a'), 4000, 'first dtab');
      writeFileSync(file, '/svc=>/#/io.prx.test/b');
      await eventually(() => seen.at(-1) === '/#/io.prx.test/b', 4000, 'in-place edit');
      const tmp = join(dir, '.dtab.tmp');
      writeFileSync(tmp, '/svc=>/#/io.prx.test/c');
      renameSync(tmp, file);
      await eventually(() => seen.at(-1) === '/#/io.prx.test/c', 4000, 'atomic save');
      assert.equal(interp.state().dtab, '/svc=>/#/io.prx.test/c');
    } finally {
      sub.close();
    }
  } finally {
    cleanup();
  }
});

test('a malformed edit keeps the last good dtab and reports the error; a good edit clears it', async () => {
  const { file, interp, cleanup } = setup('/svc=>/#/io.prx.test/a');
  try {
    const seen: string[] = [];
    const sub = interp.bind(Dtab.empty, readPath('/svc')).observe((s) => seen.push(showBound(s)));
    try {
      await eventually(() => seen.at(-1) === '/#/io.prx.test/a', 4000, 'first dtab');
      const before = seen.length;
      writeFileSync(file, '/svc=>invalid-dst');
      await eventually(() => interp.state().lastError !== null, 4000, 'error reported');
      const err = interp.state().lastError;
      assert.match(err?.message ?? '', /^dtab file .*\/dtab: simple expected but 'i' found at '\/svc=>\[i\]nvalid-dst'$/);
      await sleep(100);
      assert.equal(seen.length, before, 'the binding was not disturbed');
      assert.equal(interp.state().dtab, '/svc=>/#/io.prx.test/a');
      writeFileSync(file, '/svc=>/#/io.prx.test/b');
      await eventually(() => seen.at(-1) === '/#/io.prx.test/b', 4000, 'good edit');
      assert.equal(interp.state().lastError, null);
      assert.notEqual(interp.state().lastLoadedAt, null);
    } finally {
      sub.close();
    }
  } finally {
    cleanup();
  }
});

test('a file that never parsed fails bindings with the parse error', async () => {
  const { interp, cleanup } = setup('/svc=>');
  try {
    const s = await until<State<NameTree<BoundName>>>((cb) => interp.bind(Dtab.empty, readPath('/svc')).observe(cb), (v) => v.kind !== 'pending');
    assert.equal(s.kind, 'failed');
    assert.match(showBound(s), /^failed: dtab file .*dtab: /);
  } finally {
    cleanup();
  }
});

test('a deleted file leaves bindings pending (as Linkerd) until it is created again', async () => {
  const { file, interp, cleanup } = setup('/svc=>/#/io.prx.test/a');
  try {
    const seen: string[] = [];
    const sub = interp.bind(Dtab.empty, readPath('/svc')).observe((s) => seen.push(showBound(s)));
    try {
      await eventually(() => seen.at(-1) === '/#/io.prx.test/a', 4000, 'first dtab');
      unlinkSync(file);
      await eventually(() => seen.at(-1) === 'pending', 4000, 'pending after delete');
      assert.equal(interp.state().exists, false);
      writeFileSync(file, '/svc=>/#/io.prx.test/b');
      await eventually(() => seen.at(-1) === '/#/io.prx.test/b', 4000, 'recreated');
      assert.equal(interp.state().exists, true);
    } finally {
      sub.close();
    }
  } finally {
    cleanup();
  }
});

test('the file is watched only while something is bound through it', () => {
  const { interp, cleanup } = setup('/svc=>/#/io.prx.test/a');
  try {
    assert.equal(interp.state().watching, false);
    const sub = interp.bind(Dtab.empty, readPath('/svc')).observe(() => {});
    assert.equal(interp.state().watching, true);
    sub.close();
    assert.equal(interp.state().watching, false);
  } finally {
    cleanup();
  }
});

test('the registered kind applies transformers and exposes its state through them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'prx-fs-kind-'));
  try {
    const file = join(dir, 'dtab');
    writeFileSync(file, '/svc=>/#/io.prx.test');
    const namer = new MapNamer();
    namer.set('hello', ['127.0.0.1:8080']);
    const cfg = validate(kindSlot('interpreter'), { kind: 'io.prx.fs', dtabFile: file, transformers: [{ kind: 'io.prx.port', port: 4141 }] });
    const ctx: InterpreterContext = { namers: [{ prefix: PREFIX, namer }], system: new SystemNamer() };
    const interp = (lookupKind('interpreter', 'io.prx.fs')?.create as (c: unknown, x: InterpreterContext) => NameInterpreter)(cfg, ctx);
    assert.ok(interp instanceof TransformedInterpreter);
    await untilShown(interp.bind(Dtab.empty, readPath('/svc/hello')), '/%/io.prx.port/4141/#/io.prx.test/hello');
    assert.deepEqual((interpreterState(interp) as { dtab: string }).dtab, '/svc=>/#/io.prx.test');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
