// Heartbeats on the HTTP controller's watch streams: a bare newline every `heartbeatMs`, announced
// in `prx-heartbeat-ms`, invisible to de-duplication and to concatenated-JSON readers (Linkerd's
// io.l5d.namerd.http parses the streams that way; jq is a third-party reader of the same kind).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as http from 'node:http';
import { test } from 'node:test';
import { address, addrBound } from '../../src/naming/index.js';
import { eventually, openWatch, request, startController } from './helpers.js';

const LEAF = (port: number): string =>
  `{"type":"leaf","bound":{"addr":{"type":"bound","addrs":[{"ip":"127.0.0.1","port":${port},"meta":{}}],"meta":{}},"id":"/#/test/foo","path":"/"}}`;
const BIND = '/api/1/bind/default?path=/svc/foo&watch=true';

test('a heartbeat (bare newline) every heartbeatMs, announced in prx-heartbeat-ms; lines stay de-duplicated', async () => {
  const fx = await startController({ default: '/svc => /#/test' });
  try {
    const addr = fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const w = await openWatch(`${fx.url}${BIND}&heartbeatMs=100`);
    assert.equal(w.headers['prx-heartbeat-ms'], '100');
    const since = Date.now();
    assert.equal(await w.next(), LEAF(1));
    await eventually(() => w.heartbeats() >= 3, 5000, 'three heartbeats');
    // One per period, not one per tick of the shared timer (it ticks several times a period, each tick a slice of the streams).
    assert.ok(w.heartbeats() <= (Date.now() - since) / 100 + 2, `${w.heartbeats()} heartbeats in ${Date.now() - since} ms`);
    // The same value again after heartbeats is still no news.
    addr.update(addrBound([address('127.0.0.1', 1)]));
    await w.quiet(300);
    addr.update(addrBound([address('127.0.0.1', 2)]));
    assert.equal(await w.next(), LEAF(2));
    const before = w.heartbeats();
    await eventually(() => w.heartbeats() > before, 5000, 'heartbeats go on after an update');
    assert.equal(fx.controller.heartbeatGroupCount, 1);
    w.close();
    await eventually(() => fx.controller.watchCount === 0 && fx.controller.heartbeatGroupCount === 0, 3000, 'the heartbeat timer released');
  } finally {
    await fx.close();
  }
});

test('heartbeatMs: JSON watches default to 5000 ms, dtab text watches have none unless asked; 0 is none; clamped to [100, 60000]; malformed is 400', async () => {
  const fx = await startController({ default: '/svc => /#/test' });
  const open: { close(): void }[] = [];
  try {
    fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const header = async (path: string, headers: Record<string, string> = {}): Promise<string | undefined> => {
      const req = http.get(`${fx.url}${path}`, { headers });
      open.push({ close: () => req.destroy() });
      const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
      assert.equal(res.statusCode, 200, path);
      return res.headers['prx-heartbeat-ms'] as string | undefined;
    };
    assert.equal(await header(BIND), '5000');
    assert.equal(await header('/api/1/dtabs/default?watch=true'), '5000');
    assert.equal(await header('/api/1/dtabs?watch=1'), '5000');
    assert.equal(await header('/api/1/dtabs/default?watch=true', { accept: 'application/dtab' }), undefined);
    assert.equal(await header('/api/1/dtabs/default?watch=true&heartbeatMs=250', { accept: 'application/dtab' }), '250');
    assert.equal(await header(`${BIND}&heartbeatMs=0`), undefined);
    assert.equal(await header(`${BIND}&heartbeatMs=5`), '100');
    assert.equal(await header(`${BIND}&heartbeatMs=9999999`), '60000');
    assert.equal(fx.controller.heartbeatGroupCount, 4, 'one timer per distinct period');
    const watches = fx.controller.watchCount;
    for (const bad of ['abc', '-5', '1.5', '']) {
      const r = await request(`${fx.url}${BIND}&heartbeatMs=${bad}`);
      assert.equal(r.status, 400, bad);
      assert.match(r.text, /^Invalid heartbeatMs: /, bad);
    }
    assert.equal(fx.controller.watchCount, watches, 'a refused watch watches nothing');
    // Without watch the parameter is not read.
    assert.equal((await request(`${fx.url}/api/1/bind/default?path=/svc/foo&heartbeatMs=abc`)).status, 200);
    for (const o of open) o.close();
    await eventually(() => fx.controller.watchCount === 0 && fx.controller.heartbeatGroupCount === 0, 3000, 'released');
  } finally {
    for (const o of open) o.close();
    await fx.close();
  }
});

/**
 * A reader of concatenated JSON as Linkerd's `JsonStreamParser` reads a watch: the unread text
 * plus each chunk is parsed for one root value at a time (leading whitespace skipped); an
 * incomplete value stays unread until more comes. Written apart from prx's own splitter.
 */
class ConcatenatedJsonReader {
  #unread = '';
  readonly values: unknown[] = [];

  push(chunk: string): void {
    this.#unread += chunk;
    for (;;) {
      const start = this.#unread.search(/\S/);
      if (start < 0) return;
      let end = -1;
      let value: unknown;
      for (let j = start; j < this.#unread.length && end < 0; j++) {
        const c = this.#unread[j];
        if (c !== '}' && c !== ']') continue;
        try {
          value = JSON.parse(this.#unread.slice(start, j + 1));
          end = j + 1;
        } catch {
          // Not complete yet.
        }
      }
      if (end < 0) return;
      this.values.push(value);
      this.#unread = this.#unread.slice(end);
    }
  }

  get unread(): string {
    return this.#unread;
  }
}

test('a Linkerd-style concatenated-JSON reader reads every document of a watch with heartbeats, and nothing else', async () => {
  const fx = await startController({ default: '/svc => /#/test' });
  try {
    const addr = fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const req = http.get(`${fx.url}${BIND}&heartbeatMs=100`);
    const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    res.setEncoding('utf8');
    const reader = new ConcatenatedJsonReader();
    let raw = '';
    res.on('data', (chunk: string) => {
      raw += chunk;
      reader.push(chunk);
    });
    await eventually(() => reader.values.length === 1, 3000, 'the first document');
    await eventually(() => raw.endsWith('\n\n\n'), 5000, 'heartbeats after it');
    addr.update(addrBound([address('127.0.0.1', 2)]));
    await eventually(() => reader.values.length === 2, 3000, 'the second document');
    await eventually(() => raw.endsWith('\n\n\n'), 5000, 'heartbeats after it');
    req.destroy();
    assert.deepEqual(reader.values, [JSON.parse(LEAF(1)), JSON.parse(LEAF(2))]);
    assert.equal(reader.unread.trim(), '', 'only whitespace is left unread');
    assert.equal(raw.replace(/\n+/g, '\n'), `${LEAF(1)}\n${LEAF(2)}\n`, 'the stream is the documents and newlines');
  } finally {
    await fx.close();
  }
});

const hasJq = spawnSync('jq', ['--version']).status === 0;

test('jq reads a watch with heartbeats as its sequence of documents', { skip: !hasJq && 'jq not available' }, async () => {
  const fx = await startController({ default: '/svc => /#/test' });
  const jq = spawn('jq', ['-c', '--unbuffered', '.'], { stdio: ['pipe', 'pipe', 'pipe'] });
  try {
    const addr = fx.namer.bind('foo', addrBound([address('127.0.0.1', 1)]));
    const req = http.get(`${fx.url}${BIND}&heartbeatMs=50`);
    const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    let heartbeats = 0;
    res.on('data', (chunk: Buffer) => {
      // Newlines that arrive on their own are heartbeats (several may come in one read).
      heartbeats += /^\n+$/.exec(chunk.toString())?.[0].length ?? 0;
    });
    res.pipe(jq.stdin);
    let out = '';
    let err = '';
    jq.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    jq.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    await eventually(() => out.split('\n').length === 2, 3000, 'jq printed the first document');
    await eventually(() => heartbeats >= 3, 5000, 'heartbeats');
    addr.update(addrBound([address('127.0.0.1', 2)]));
    await eventually(() => out.split('\n').length === 3, 3000, 'jq printed the second document');
    await eventually(() => heartbeats >= 6, 5000, 'more heartbeats');
    req.destroy();
    assert.equal(out, `${LEAF(1)}\n${LEAF(2)}\n`);
    assert.equal(err, '');
  } finally {
    jq.kill();
    await fx.close();
  }
});
