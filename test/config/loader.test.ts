import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ConfigError, ConfigReadError, parseConfigText, readConfigSource } from '../../src/config/index.js';
import { configErrorOf } from './fixtures.js';

function syntaxLines(text: string): string[] {
  const e = configErrorOf(() => parseConfigText(text));
  assert.equal(e.code, 'PRX_ERR_CONFIG_SYNTAX');
  return e.lines;
}

describe('readConfigSource', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prx-loader-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a file, with its path as origin', async () => {
    const file = join(dir, 'a.yaml');
    await writeFile(file, 'routers: []\n');
    assert.deepEqual(await readConfigSource(file), { text: 'routers: []\n', origin: file });
  });

  it('reads all of an injected stdin for `-`', async () => {
    const stdin = Readable.from(['rou', 'ters: ', Buffer.from('[]\n')]);
    assert.deepEqual(await readConfigSource('-', { stdin }), { text: 'routers: []\n', origin: '<stdin>' });
  });

  it("reads the process's stdin for `-`", () => {
    const script = "import('./src/config/loader.ts').then(async (m) => process.stdout.write(JSON.stringify(await m.readConfigSource('-'))))";
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { input: 'admin: {port: 1}\n', encoding: 'utf8' });
    assert.equal(r.stderr, '');
    assert.deepEqual(JSON.parse(r.stdout), { text: 'admin: {port: 1}\n', origin: '<stdin>' });
  });

  it('explains a missing file', async () => {
    const file = join(dir, 'missing.yaml');
    await assert.rejects(readConfigSource(file), (e: unknown) => {
      assert.ok(e instanceof ConfigReadError);
      assert.equal(e.code, 'PRX_ERR_CONFIG_READ');
      assert.equal(e.message, `cannot read configuration from ${file}: no such file`);
      return true;
    });
  });

  it('explains a directory', async () => {
    await assert.rejects(readConfigSource(dir), { message: `cannot read configuration from ${dir}: is a directory` });
  });
});

describe('parseConfigText', () => {
  it('parses YAML', () => {
    assert.deepEqual(parseConfigText('routers:\n- protocol: http\n  servers:\n  - port: 4140\n'), {
      routers: [{ protocol: 'http', servers: [{ port: 4140 }] }],
    });
  });

  it('parses JSON', () => {
    assert.deepEqual(parseConfigText('{"routers": [{"protocol": "http", "servers": [{"port": 4140}]}]}'), {
      routers: [{ protocol: 'http', servers: [{ port: 4140 }] }],
    });
  });

  it('uses the YAML 1.2 core schema (yes/no/on/off stay strings)', () => {
    assert.deepEqual(parseConfigText('a: yes\nb: off\nc: true\nd: ~\ne: 0x10'), { a: 'yes', b: 'off', c: true, d: null, e: 16 });
  });

  it('reports YAML syntax errors with line and column', () => {
    assert.deepEqual(syntaxLines('routers:\n  - protocol: http\n    servers: [{port: 4140}\nadmin: {}\n'), [
      'syntax error at line 4, column 1: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ]);
  });

  it('reports JSON syntax errors with line and column', () => {
    assert.deepEqual(syntaxLines('{\n  "routers": [],\n  "admin": {"port": 9990,}\n  "x": 1\n}'), [
      'syntax error at line 4, column 3: Missing , between flow map items',
    ]);
  });

  it('rejects a duplicate YAML key, naming it and its position', () => {
    assert.deepEqual(syntaxLines('admin:\n  port: 9990\n  ip: 0.0.0.0\n  port: 9991\nrouters: []\n'), [
      'admin.port: duplicate key at line 4, column 3',
    ]);
  });

  it('rejects a duplicate JSON key, naming it and its position', () => {
    assert.deepEqual(syntaxLines('{"routers": [{"protocol": "http", "label": "a", "label": "b"}]}'), [
      'routers[0].label: duplicate key at line 1, column 49',
    ]);
  });

  it('rejects an empty document and a non-object top level', () => {
    assert.deepEqual(syntaxLines('# nothing here\n'), ['the configuration is empty']);
    assert.deepEqual(syntaxLines('- protocol: http\n'), ['the configuration must be an object of top-level keys, got a list']);
    assert.deepEqual(syntaxLines('"routers"'), ['the configuration must be an object of top-level keys, got a string']);
  });

  it('rejects unresolved tags and recursive aliases', () => {
    assert.deepEqual(syntaxLines('admin: !include admin.yaml\n'), ['syntax error at line 1, column 8: Unresolved tag: !include']);
    assert.deepEqual(syntaxLines('a: &loop [1, *loop]\n'), ['recursive alias *loop at line 1, column 14']);
  });

  it('accepts shared (non-recursive) aliases', () => {
    assert.deepEqual(parseConfigText('x: &p {port: 1}\ny: *p\n'), { x: { port: 1 }, y: { port: 1 } });
  });

  it('puts the origin in the message', () => {
    const e = configErrorOf(() => parseConfigText('a: 1\na: 2\n', 'prx.yaml'));
    assert.ok(e instanceof ConfigError);
    assert.equal(e.message, 'invalid configuration in prx.yaml:\n  a: duplicate key at line 2, column 1');
  });
});
