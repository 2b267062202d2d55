import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidLogLevelError, LogRegistry, parseLogLevel } from '../../src/core/log.js';
import { MemoryLog } from './helpers.js';

function registry(): { logs: LogRegistry; sink: MemoryLog } {
  const sink = new MemoryLog();
  return { logs: new LogRegistry({ destination: sink }), sink };
}

// pino writes synchronously to a plain Writable, but the Writable may defer _write by a tick.
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('named loggers write JSON lines carrying their name and level label', async () => {
  const { logs, sink } = registry();
  logs.get('prx.router.http').info({ port: 4140 }, 'listening');
  await settle();
  assert.equal(sink.lines.length, 1);
  const line = sink.lines[0];
  assert.equal(line?.['name'], 'prx.router.http');
  assert.equal(line?.['level'], 'info');
  assert.equal(line?.['msg'], 'listening');
  assert.equal(line?.['port'], 4140);
  assert.match(String(line?.['time']), /^\d{4}-\d{2}-\d{2}T/);
});

test('get returns the same logger for the same name', () => {
  const { logs } = registry();
  assert.equal(logs.get('prx.namer.fs'), logs.get('prx.namer.fs'));
  assert.equal(logs.get('root'), logs.root);
});

test('levels are inherited from the nearest ancestor that has one, now and later', async () => {
  const { logs, sink } = registry();
  const http = logs.get('prx.router.http');
  const fs = logs.get('prx.namer.fs');
  logs.setLevel('prx.router', 'debug');
  assert.equal(http.level, 'debug');
  assert.equal(fs.level, 'info');
  assert.equal(logs.get('prx.router.h2').level, 'debug', 'created after the change');

  http.debug('seen');
  fs.debug('not seen');
  await settle();
  assert.deepEqual(
    sink.lines.map((l) => l['msg']),
    ['seen'],
  );

  // An explicit level on the child wins over later ancestor changes.
  logs.setLevel('prx.router.http', 'error');
  logs.setLevel('prx', 'trace');
  assert.equal(http.level, 'error');
  assert.equal(fs.level, 'trace');
  assert.equal(logs.get('prx.router.h2').level, 'debug');
});

test('the root level reaches every logger without its own', () => {
  const { logs } = registry();
  const a = logs.get('a.b');
  logs.setLevel('root', 'WARN');
  assert.equal(a.level, 'warn');
  assert.equal(logs.levelOf('never.created'), 'warn');
});

test('off silences a logger', async () => {
  const { logs, sink } = registry();
  const quiet = logs.get('prx.noisy');
  logs.setLevel('prx.noisy', 'OFF');
  quiet.fatal('dropped');
  await settle();
  assert.equal(sink.lines.length, 0);
  assert.equal(logs.levelOf('prx.noisy'), 'off');
});

test('list: root first, then every created or set logger by name, with effective levels', () => {
  const { logs } = registry();
  logs.get('prx.router.http');
  logs.get('com.example');
  logs.setLevel('prx.router', 'DEBUG');
  assert.deepEqual(logs.list(), [
    { logger: 'root', level: 'info' },
    { logger: 'com.example', level: 'info' },
    { logger: 'prx.router', level: 'debug' },
    { logger: 'prx.router.http', level: 'debug' },
  ]);
});

test('level names: case-insensitive, Linkerd aliases, and a typed error otherwise', () => {
  assert.equal(parseLogLevel('INFO'), 'info');
  assert.equal(parseLogLevel('ALL'), 'trace');
  assert.equal(parseLogLevel('WARNING'), 'warn');
  assert.equal(parseLogLevel('CRITICAL'), 'fatal');
  assert.equal(parseLogLevel('OFF'), 'off');
  assert.throws(() => parseLogLevel('loud'), (e: unknown) => {
    assert.ok(e instanceof InvalidLogLevelError);
    assert.equal(e.code, 'PRX_ERR_LOG_INVALID_LEVEL');
    assert.match(e.message, /invalid log level 'loud'/);
    return true;
  });
  const { logs } = registry();
  assert.throws(() => logs.setLevel('x', 'nope'), InvalidLogLevelError);
  assert.equal(logs.levelOf('x'), 'info', 'a rejected level changes nothing');
});
