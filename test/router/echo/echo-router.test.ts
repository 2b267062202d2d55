// The echo router end to end (real backends and sockets on 127.0.0.1): a second protocol gets
// dtab routing, namers, balancing, retries, requeues, failure accrual, naming failures and Linkerd's
// stats from the router core alone.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { lookupKind } from '../../../src/config/index.js';
import { freePort, mount, pendingNamer, tempFsNamer, type TempFsNamer } from '../support.js';
import { EchoConn, startEchoBackend, startEchoRouter, type EchoBackend, type EchoRouterUnderTest } from './echo-harness.js';

const inet = (b: EchoBackend | number): string => `/$/inet/127.0.0.1/${typeof b === 'number' ? b : b.port}`;
const disco = (...ports: number[]): string => ports.map((p) => `127.0.0.1 ${p}\n`).join('');
const FS_CLIENT = 'rt/echo/client/#/io.prx.fs/web';

describe('echo router', () => {
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  async function backend(name: string, script?: Parameters<typeof startEchoBackend>[1]): Promise<EchoBackend> {
    const b = await startEchoBackend(name, script);
    cleanups.push(() => b.close());
    return b;
  }
  async function router(cfg: Record<string, unknown>, fs?: TempFsNamer): Promise<EchoRouterUnderTest> {
    const rt = await startEchoRouter(cfg, fs === undefined ? {} : { namers: [fs.mounted] });
    cleanups.push(() => rt.close());
    return rt;
  }
  function fsNamer(files: Record<string, string>): TempFsNamer {
    const fs = tempFsNamer(files);
    cleanups.push(() => fs.close());
    return fs;
  }

  test('the protocol is built on the router core alone: it imports no protocol and no other router', () => {
    const source = readFileSync(new URL('./echo-protocol.ts', import.meta.url), 'utf8');
    const imports = [...source.matchAll(/^import\s[^;]*?'([^']+)';/gm)].map((m) => m[1] ?? '');
    assert.ok(imports.length > 5);
    for (const from of imports) assert.match(from, /^(node:|zod$|\.\.\/\.\.\/\.\.\/src\/(router\/core|service|naming|config)\/)/, from);
    // Nothing in this process registered the http router: echo routes without it.
    assert.equal(lookupKind('protocol', 'http'), undefined);
    assert.notEqual(lookupKind('protocol', 'echo'), undefined);
  });

  test('routes by dtab to /$/inet, many requests in order on one connection', async () => {
    const a = await backend('a');
    const b = await backend('b');
    const rt = await router({ dtab: `/svc/a => ${inet(a)}; /svc/b => ${inet(b)}` });
    const c = new EchoConn(rt.port);
    // Written before any answer: answered in order, each by its own name's backend.
    const answers = await Promise.all([c.send('a 1'), c.send('b 2'), c.send('/a 3'), c.send('b 4')]);
    c.close();
    assert.deepEqual(answers, ['OK a 1', 'OK b 2', 'OK a 3', 'OK b 4']);
    assert.deepEqual(a.lines, ['1', '3']);
    assert.deepEqual(b.lines, ['2', '4']);
  });

  test('routes through the fs namer and follows a rewritten file live', async () => {
    const a = await backend('a');
    const b = await backend('b');
    const fs = fsNamer({ web: disco(a.port) });
    const rt = await router({ dtab: '/svc => /#/io.prx.fs' }, fs);
    assert.equal(await rt.send('web x'), 'OK a x');
    fs.write('web', disco(b.port));
    // The namer sees the file change a little later: bounded polling until the answers move.
    let answer = '';
    for (let i = 0; i < 300 && answer !== 'OK b y'; i++) {
      answer = await rt.send('web y');
      if (answer !== 'OK b y') await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(answer, 'OK b y');
    assert.equal(await rt.send('web z'), 'OK b z');
  });

  test('balances over the endpoints of a name (round robin)', async () => {
    const bs = [await backend('a'), await backend('b'), await backend('c')];
    const fs = fsNamer({ web: disco(...bs.map((b) => b.port)) });
    const rt = await router({ dtab: '/svc => /#/io.prx.fs', client: { loadBalancer: { kind: 'roundRobin' } } }, fs);
    for (let i = 0; i < 30; i++) assert.match(await rt.send(`web ${i}`), /^OK [abc] /);
    assert.deepEqual(bs.map((b) => b.lines.length), [10, 10, 10]);
    assert.equal(rt.metric(`${FS_CLIENT}/loadbalancer/size`), 3);
  });

  test('a retryable ERR is retried under the budget; with no budget it is answered', async () => {
    const a = await backend('a', (n) => (n % 2 === 0 ? 'retryable' : 'ok'));
    const rt = await router({ dtab: `/svc/web => ${inet(a)}` });
    assert.equal(await rt.send('web 1'), 'OK a 1');
    assert.equal(a.lines.length, 2);
    assert.equal(rt.metric('rt/echo/service/svc/web/retries/total'), 1);
    assert.equal(rt.metric('rt/echo/service/svc/web/success'), 1);

    const b = await backend('b', () => 'retryable');
    const none = await router({
      label: 'nobudget',
      dtab: `/svc/web => ${inet(b)}`,
      service: { retries: { budget: { minRetriesPerSec: 0, percentCanRetry: 0 } } },
    });
    assert.equal(await none.send('web 2'), 'ERR retryable');
    assert.equal(b.lines.length, 1);
    assert.equal(none.metric('rt/nobudget/service/svc/web/retries/budget_exhausted'), 1);
    assert.equal(none.metric('rt/nobudget/service/svc/web/failures'), 1);
  });

  test('a plain ERR is a failure, not retried', async () => {
    const a = await backend('a', () => 'err');
    const rt = await router({ dtab: `/svc/web => ${inet(a)}` });
    assert.equal(await rt.send('web 1'), 'ERR boom');
    assert.equal(a.lines.length, 1);
    assert.equal(rt.metric(`rt/echo/client/$/inet/127.0.0.1/${a.port}/failures`), 1);
    assert.equal(rt.metric('rt/echo/service/svc/web/failures'), 1);
  });

  test('a refused connection is requeued to another endpoint', async () => {
    const dead = await freePort();
    const b = await backend('b');
    const fs = fsNamer({ web: disco(dead, b.port) });
    const rt = await router({ dtab: '/svc => /#/io.prx.fs', client: { loadBalancer: { kind: 'roundRobin' } } }, fs);
    for (let i = 0; i < 4; i++) assert.equal(await rt.send(`web ${i}`), `OK b ${i}`);
    const requeues = rt.metric(`${FS_CLIENT}/retries/requeues`) ?? 0;
    assert.ok(requeues >= 1, `requeues: ${requeues}`);
    assert.equal(rt.metric(`${FS_CLIENT}/failures/ECONNREFUSED`), requeues);
    assert.equal(rt.metric('rt/echo/service/svc/web/success'), 4);
    assert.equal(rt.metric('rt/echo/service/svc/web/failures'), 0);
  });

  test('failure accrual removes a failing endpoint and routes around it', async () => {
    const bad = await backend('bad', () => 'err');
    const good = await backend('good');
    const fs = fsNamer({ web: disco(bad.port, good.port) });
    const rt = await router(
      {
        dtab: '/svc => /#/io.prx.fs',
        client: {
          loadBalancer: { kind: 'roundRobin' },
          failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 2, backoff: { kind: 'constant', ms: 60_000 } },
        },
      },
      fs,
    );
    const answers: string[] = [];
    for (let i = 0; i < 12; i++) answers.push(await rt.send(`web ${i}`));
    assert.equal(bad.lines.length, 2, 'two failures, then removed');
    assert.equal(answers.filter((a) => a === 'ERR boom').length, 2);
    assert.equal(rt.metric(`${FS_CLIENT}/failure_accrual/removals`), 1);
    assert.equal(rt.metric(`${FS_CLIENT}/loadbalancer/available`), 1);
    assert.deepEqual(answers.slice(-6), [6, 7, 8, 9, 10, 11].map((i) => `OK good ${i}`));
  });

  test('no route: ERR with NoBrokersAvailable’s code', async () => {
    const rt = await router({ dtab: '/svc/web => /$/nil' });
    assert.match(await rt.send('web 1'), /^ERR PRX_ERR_NO_BROKERS_AVAILABLE No hosts are available for \/svc\/web$/);
    assert.match(await rt.send('other 1'), /^ERR PRX_ERR_NO_BROKERS_AVAILABLE /);
    assert.equal(rt.metric('rt/echo/service/svc/web/failures/NoBrokersAvailableError'), 1);
  });

  test('binding timeout: ERR with BindingTimeout’s code once bindingTimeoutMs elapsed', async () => {
    const rt = await startEchoRouter({ dtab: '/svc => /#/pending', bindingTimeoutMs: 150 }, { namers: [mount('pending', pendingNamer)] });
    cleanups.push(() => rt.close());
    const started = performance.now();
    assert.match(await rt.send('web 1'), /^ERR PRX_ERR_BINDING_TIMEOUT Exceeded 150\.milliseconds binding timeout while resolving name: \/svc\/web$/);
    assert.ok(performance.now() - started >= 140);
    assert.equal(rt.metric('rt/echo/service/svc/web/failures/BindingTimeoutError'), 1);
  });
});
