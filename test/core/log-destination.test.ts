// FdLogDestination: the default log stream (stdout). Lines arrive in order and whole; a failed
// descriptor stops logging without hanging anything; lines still queued at exit are written.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { FdLogDestination } from '../../src/core/log-destination.js';

const dir = mkdtempSync(join(tmpdir(), 'prx-logdest-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const flushed = (d: FdLogDestination): Promise<Error | undefined> => new Promise((resolve) => d.flush((err) => resolve(err)));

describe('FdLogDestination', () => {
  test('writes every line, in order, and flush calls back once they are all out', async () => {
    const file = join(dir, 'order.log');
    const fd = openSync(file, 'w');
    const d = new FdLogDestination(fd, { flushOnExit: false });
    const lines = Array.from({ length: 5000 }, (_, i) => `{"n":${i},"msg":"${'x'.repeat(i % 97)}"}\n`);
    for (const line of lines) assert.equal(d.write(line), true);
    assert.equal(await flushed(d), undefined);
    closeSync(fd);
    assert.equal(readFileSync(file, 'utf8'), lines.join(''));
  });

  test('a failed descriptor ends logging: later lines are refused, flush reports the error, flushSync returns', async () => {
    const fd = openSync(join(dir, 'closed.log'), 'w');
    closeSync(fd); // EBADF from here on
    const d = new FdLogDestination(fd, { flushOnExit: false });
    d.write('first\n');
    const err = await flushed(d);
    assert.equal((err as NodeJS.ErrnoException | undefined)?.code, 'EBADF');
    assert.equal(d.write('second\n'), false);
    d.flushSync();
    assert.equal(d.error?.code, 'EBADF');
  });

  test('flushSync writes what is queued at once', async () => {
    const file = join(dir, 'sync.log');
    const fd = openSync(file, 'w');
    const d = new FdLogDestination(fd, { flushOnExit: false });
    d.write('a\n'); // in flight
    d.write('b\n'); // queued behind it
    d.write('c\n');
    d.flushSync();
    assert.match(readFileSync(file, 'utf8'), /b\nc\n/);
    await flushed(d);
    closeSync(fd);
    assert.deepEqual(readFileSync(file, 'utf8').split('\n').filter(Boolean).sort(), ['a', 'b', 'c']);
  });

  test('lines logged just before process.exit reach the reader, and a reader that went away does not hold up the exit', async () => {
    const module = fileURLToPath(new URL('../../src/core/log-destination.ts', import.meta.url));
    const script = `import { FdLogDestination } from ${JSON.stringify(module)};
      const d = new FdLogDestination(1);
      for (let i = 0; i < 2000; i++) d.write('line ' + i + '\\n');
      process.exit(0);`;
    const run = (readAll: boolean): Promise<{ code: number | null; lines: string[] }> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        if (readAll) child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        else child.stdout.destroy();
        child.once('close', (code) => resolve({ code, lines: out.split('\n').filter(Boolean) }));
      });
    const full = await run(true);
    assert.equal(full.code, 0);
    assert.equal(new Set(full.lines).size, 2000);
    const gone = await run(false);
    assert.equal(gone.code, 0);
  });
});
