import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  AccessLog,
  formatAccessLogLine,
  InvalidRollPolicyError,
  parseRollPolicy,
  type AccessLogEntry,
} from '../../src/protocol/http/access-log.js';
import { nextRollTime, rollSuffix } from '../../src/protocol/http/access-log-roll.js';

const T0 = Date.UTC(2024, 2, 5, 14, 7, 9); // Tue 05 Mar 2024 14:07:09Z

function entry(over: Partial<AccessLogEntry> = {}): AccessLogEntry {
  return { remoteHost: '10.0.0.7', time: T0, method: 'get', uri: '/a?b=1', protocol: 'HTTP/1.1', status: 200, bytes: 1234, ...over };
}

describe('access-log line format', () => {
  it('prints Linkerd AccessLogger fields in order', () => {
    const line = formatAccessLogLine(
      entry({ host: 'web.example', referer: 'http://r/', userAgent: 'curl/8.5.0', time: new Date(T0) }),
    );
    assert.equal(
      line,
      'web.example 10.0.0.7 - - [05/03/2024:14:07:09 +0000] "GET /a?b=1 HTTP/1.1" 200 1234 "http://r/" "curl/8.5.0"',
    );
  });

  it('prints - for absent host, identity, user, size, referer and user agent', () => {
    const line = formatAccessLogLine(entry({ bytes: '-', status: 404, time: Date.UTC(2023, 11, 31, 23, 0, 0) }));
    assert.equal(line, '- 10.0.0.7 - - [31/12/2023:23:00:00 +0000] "GET /a?b=1 HTTP/1.1" 404 - "-" "-"');
    const withUser = formatAccessLogLine(entry({ identity: 'id', user: 'bob' }));
    assert.match(withUser, /^- 10\.0\.0\.7 id bob \[/);
  });
});

describe('parseRollPolicy', () => {
  it('parses names, Weekly(n) and data sizes', () => {
    assert.deepEqual(parseRollPolicy('Never'), { kind: 'never' });
    assert.deepEqual(parseRollPolicy('hourly'), { kind: 'hourly' });
    assert.deepEqual(parseRollPolicy('Daily'), { kind: 'daily' });
    assert.deepEqual(parseRollPolicy('Weekly(3)'), { kind: 'weekly', dayOfWeek: 3 });
    assert.deepEqual(parseRollPolicy('3.megabytes'), { kind: 'maxSize', bytes: 3 * 1024 * 1024 });
    assert.deepEqual(parseRollPolicy('1.gigabyte'), { kind: 'maxSize', bytes: 1024 ** 3 });
  });

  it('rejects invalid text with a clear error', () => {
    for (const bad of ['', 'Monthly', 'Weekly', 'Weekly(7)', 'Weekly(-1)', '3 megabytes', '0.bytes', '3.mb']) {
      assert.throws(() => parseRollPolicy(bad), (e: unknown) => {
        assert.ok(e instanceof InvalidRollPolicyError);
        assert.equal(e.code, 'PRX_ERR_ACCESS_LOG_ROLL_POLICY');
        assert.match(e.message, /invalid access-log roll policy/);
        return true;
      }, bad);
    }
    assert.throws(() => parseRollPolicy('Weekly(9)'), /out of range 0-6/);
  });

  it('computes boundaries and suffixes in UTC', () => {
    assert.equal(nextRollTime({ kind: 'hourly' }, T0), Date.UTC(2024, 2, 5, 15));
    assert.equal(nextRollTime({ kind: 'daily' }, T0), Date.UTC(2024, 2, 6));
    assert.equal(nextRollTime({ kind: 'weekly', dayOfWeek: 2 }, T0), Date.UTC(2024, 2, 12)); // today is Tuesday
    assert.equal(nextRollTime({ kind: 'weekly', dayOfWeek: 0 }, T0), Date.UTC(2024, 2, 10));
    assert.equal(nextRollTime({ kind: 'never' }, T0), undefined);
    assert.equal(rollSuffix({ kind: 'hourly' }, T0), '20240305-14');
    assert.equal(rollSuffix({ kind: 'daily' }, T0), '20240305');
    assert.equal(rollSuffix({ kind: 'maxSize', bytes: 1 }, T0), '20240305-140709');
  });
});

describe('AccessLog file writing', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'prx-access-log-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
  const lines = (name: string): string[] => read(name).split('\n').filter((l) => l !== '');

  it('writes lines, creating the directory; close flushes', async () => {
    const path = join(dir, 'sub', 'access.log');
    const log = new AccessLog({ path });
    log.log(entry({ uri: '/1' }));
    log.log(entry({ uri: '/2' }));
    await log.close();
    assert.deepEqual(lines('sub/access.log').map((l) => l.split('"')[1]), ['GET /1 HTTP/1.1', 'GET /2 HTTP/1.1']);
    log.log(entry()); // ignored after close
    assert.equal(lines('sub/access.log').length, 2);
  });

  it('appends by default and truncates on open when append is false', async () => {
    const path = join(dir, 'access.log');
    writeFileSync(path, 'old line\n');
    const a = new AccessLog({ path });
    a.log(entry({ uri: '/appended' }));
    await a.close();
    assert.equal(lines('access.log')[0], 'old line');
    assert.equal(lines('access.log').length, 2);

    const t = new AccessLog({ path, append: false });
    await t.flush();
    assert.equal(read('access.log'), ''); // truncated on open, before any line
    t.log(entry({ uri: '/fresh' }));
    await t.close();
    assert.deepEqual(lines('access.log').map((l) => l.split('"')[1]), ['GET /fresh HTTP/1.1']);
  });

  it('rolls by size and prunes rotated files beyond rotateCount', async () => {
    const path = join(dir, 'access.log');
    let now = T0;
    const lineBytes = formatAccessLogLine(entry()).length + 1;
    const log = new AccessLog({
      path,
      rollPolicy: { kind: 'maxSize', bytes: lineBytes * 2 }, // two lines per file
      rotateCount: 2,
      clock: () => now,
    });
    for (let i = 0; i < 7; i++) {
      log.log(entry());
      now += 1000;
      await log.flush();
    }
    await log.close();
    // Files opened at T0, +2s, +4s, +6s: the first is pruned, +6s is live with one line.
    assert.deepEqual(readdirSync(dir).sort(), ['access-20240305-140711.log', 'access-20240305-140713.log', 'access.log']);
    assert.equal(lines('access-20240305-140711.log').length, 2);
    assert.equal(lines('access-20240305-140713.log').length, 2);
    assert.equal(lines('access.log').length, 1);
  });

  it('counts existing content when appending and never overwrites a rotated file', async () => {
    const path = join(dir, 'access.log');
    const lineBytes = formatAccessLogLine(entry()).length + 1;
    writeFileSync(path, 'x'.repeat(lineBytes));
    const log = new AccessLog({ path, rollPolicy: { kind: 'maxSize', bytes: lineBytes }, clock: () => T0 });
    log.log(entry());
    log.log(entry());
    await log.close();
    assert.deepEqual(readdirSync(dir).sort(), [
      'access-20240305-140709.log',
      'access-20240305-140709_001.log',
      'access.log',
    ]);
    assert.equal(read('access-20240305-140709.log'), 'x'.repeat(lineBytes));
    assert.equal(lines('access.log').length, 1);
  });

  it('rolls hourly at the hour boundary (injected clock), keeping all with rotateCount -1', async () => {
    const path = join(dir, 'access');
    let now = Date.UTC(2024, 2, 5, 14, 59, 59);
    const log = new AccessLog({ path, rollPolicy: parseRollPolicy('Hourly'), clock: () => now });
    log.log(entry({ uri: '/14h' }));
    now = Date.UTC(2024, 2, 5, 15, 0, 0);
    log.log(entry({ uri: '/15h' }));
    now = Date.UTC(2024, 2, 5, 15, 59, 0);
    log.log(entry({ uri: '/15h-late' }));
    now = Date.UTC(2024, 2, 5, 17, 30, 0);
    log.log(entry({ uri: '/17h' }));
    await log.close();
    assert.deepEqual(readdirSync(dir).sort(), ['access', 'access-20240305-14', 'access-20240305-15']);
    assert.match(read('access-20240305-14'), /GET \/14h /);
    assert.equal(lines('access-20240305-15').length, 2);
    assert.match(read('access'), /GET \/17h /);
  });

  it('reports the first write error once through onError and keeps going', async () => {
    const path = join(dir, 'busy');
    mkdirSync(path); // a directory where the file should be: every open fails
    const errors: Error[] = [];
    const log = new AccessLog({ path, onError: (e) => errors.push(e) });
    log.log(entry({ uri: '/lost1' }));
    await log.flush();
    log.log(entry({ uri: '/lost2' }));
    await log.flush();
    assert.equal(errors.length, 1);
    assert.match(String((errors[0] as NodeJS.ErrnoException).code), /EISDIR/);
    rmSync(path, { recursive: true }); // the obstacle goes away: the next line gets through
    log.log(entry({ uri: '/kept' }));
    await log.close();
    assert.deepEqual(lines('busy').map((l) => l.split('"')[1]), ['GET /kept HTTP/1.1']);
    assert.equal(errors.length, 1);
  });
});
