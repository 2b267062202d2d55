// Issue #15 items 1 and 2 on every surface that evaluates a client's dtab: the proxy's data path
// (real router, real backend), the admin `/delegator.json` and the resolver's HTTP controller
// (request dtabs, a stored bomb, a stored namespace of 8,000 dentries, watches). Each bomb is a
// clear error, the process keeps serving, and no backend is blamed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { delegatorEndpoint, emptyBaseDtab } from '../../src/admin/naming/delegator.js';
import { ConfiguredNamersInterpreter } from '../../src/naming/index.js';
import { startAdmin } from '../admin/helpers.js';
import { type ControllerFixture, openWatch, startController } from '../resolver/helpers.js';
import { type Backend, startBackend, startRouter } from '../router/harness.js';
import { bombViaDelegator, bombViaHeader, bombViaResolver, plainGet } from './delegation-attacks.js';
import { deepDtab, dtabBomb, dtabBombs } from './dtab-bombs.js';

const LEVELS = 22;
const SANE_MS = 5000;

describe('data path: a bomb in prx-dtab / prx-ctx-dtab is a 400 with prx-err', () => {
  let backend: Backend;
  before(async () => {
    backend = await startBackend('a');
  });
  after(() => backend.close());

  test('every shape, both headers; legitimate requests are 200 right after; the backend is never blamed', async () => {
    const rt = await startRouter({ dtab: `/svc=>/$/inet/127.0.0.1/${backend.port}` });
    try {
      const client = `rt/http/client/$/inet/127.0.0.1/${backend.port}`;
      for (const bomb of dtabBombs(LEVELS)) {
        for (const header of ['prx-dtab', 'prx-ctx-dtab'] as const) {
          const before = backend.requests.length;
          const r = await bombViaHeader(rt.url, bomb, 'a', header);
          assert.equal(r.status, 400, `${bomb.shape} via ${header}: ${r.text}`);
          assert.match(String(r.headers['prx-err']), /Delegation\+budget\+exceeded/);
          assert.match(r.text, /Delegation budget exceeded/);
          assert.ok(r.ms < SANE_MS, `${bomb.shape} took ${r.ms} ms`);
          assert.equal(backend.requests.length, before, 'nothing reached the backend');
          const ok = await plainGet(`${rt.url}/`, { host: 'a' });
          assert.equal(ok.status, 200);
          assert.equal(ok.text, 'a');
        }
      }
      assert.equal(rt.metric(`${client}/failures`) ?? 0, 0);
      assert.equal(rt.metric(`${client}/failure_accrual/removals`) ?? 0, 0);
      // Nothing of a bomb stays cached (each could be unique), and discarding one never prunes the
      // legitimate entry's service stats, which it shares.
      const bombs = dtabBombs(LEVELS).length * 2;
      assert.equal(rt.metric('rt/http/bindcache/path/size'), 1);
      assert.equal(rt.metric('rt/http/bindcache/path/discards'), bombs);
      // The first bomb came before any legitimate entry: its stats went with it.
      assert.equal(rt.metric('rt/http/service/svc/a/requests'), bombs * 2 - 1);
      assert.equal(rt.metric('rt/http/service/svc/a/success'), bombs);
    } finally {
      await rt.close();
    }
  });
});

describe('admin /delegator.json: a bomb is a 400 "Invalid dtab" and the admin keeps answering', () => {
  test('every shape', async () => {
    const interp = new ConfiguredNamersInterpreter();
    const namespaces = new Map([['http', { source: interp, baseDtab: emptyBaseDtab }]]);
    const admin = await startAdmin();
    admin.add(delegatorEndpoint('/delegator.json', () => namespaces, 2000));
    try {
      for (const bomb of dtabBombs(LEVELS)) {
        const r = await bombViaDelegator(admin.url, bomb, 'http');
        assert.equal(r.status, 400, `${bomb.shape}: ${r.text}`);
        assert.match(r.text, /^Invalid dtab: Delegation budget exceeded: the dtab expands to more than \d+ name tree nodes/);
        assert.ok(r.ms < SANE_MS, `${bomb.shape} took ${r.ms} ms`);
      }
      const ok = await plainGet(`${admin.url}/delegator.json?${new URLSearchParams({ namespace: 'http', path: '/svc/a', dtab: '/svc=>/$/inet/127.0.0.1/1' }).toString()}`);
      assert.equal(ok.status, 200);
      assert.equal((JSON.parse(ok.text) as { type: string }).type, 'delegate');
    } finally {
      await admin.close();
    }
  });
});

describe('resolver controller: request bombs are 400, stored bombs and deep namespaces are errors, never a crash', () => {
  let fx: ControllerFixture;
  before(async () => {
    fx = await startController(
      {
        default: '/svc => /#/test',
        bomb: dtabBomb('nested', LEVELS).dtab,
        deep: deepDtab(8000).dtab,
        // 8,000 alternatives that all bind to Neg: walked one after another.
        deepneg: Array.from({ length: 8000 }, (_, i) => `/svc/a=>/#/test/none${i}`).join(';'),
      },
      { answerTimeoutMs: 3000 },
    );
  });
  after(() => fx.close());

  const legit = async (): Promise<void> => {
    const r = await plainGet(`${fx.url}/api/1/bind/deep?path=/svc/a`);
    assert.equal(r.status, 200);
  };

  test('a bomb in the dtab parameter of bind, resolve and delegate is a 400', async () => {
    for (const bomb of dtabBombs(LEVELS)) {
      for (const view of ['bind', 'resolve', 'delegate'] as const) {
        const r = await bombViaResolver(fx.url, bomb, view, 'default');
        assert.equal(r.status, 400, `${bomb.shape} ${view}: ${r.text}`);
        assert.match(r.text, /^Invalid dtab: Delegation budget exceeded/);
        assert.ok(r.ms < SANE_MS, `${bomb.shape} ${view} took ${r.ms} ms`);
      }
    }
    await legit();
  });

  test('a stored bomb is the controller’s binding failure (500 with the budget message)', async () => {
    for (const view of ['bind', 'resolve', 'delegate'] as const) {
      const r = await plainGet(`${fx.url}/api/1/${view}/bomb?path=/svc/a`);
      assert.equal(r.status, 500, `${view}: ${r.text}`);
      assert.match(r.text, /^Delegation budget exceeded/);
    }
    await legit();
  });

  test('a stored namespace of 8,000 dentries binds (the last dentry wins) and delegates to a clear error', async () => {
    // When every alternative is Neg the walk goes on until the budget stops it: never a stack overflow.
    for (const view of ['bind', 'resolve'] as const) {
      const r = await plainGet(`${fx.url}/api/1/${view}/deepneg?path=/svc/a`);
      assert.equal(r.status, 500, `${view}: ${r.text}`);
      assert.match(r.text, /^Delegation budget exceeded/);
    }
    const bound = await plainGet(`${fx.url}/api/1/bind/deep?path=/svc/a`);
    assert.equal(bound.status, 200);
    assert.equal((JSON.parse(bound.text) as { bound: { id: string } }).bound.id, '/$/inet/127.0.0.1/8000');
    const delegated = await plainGet(`${fx.url}/api/1/delegate/deep?path=/svc/a`);
    assert.equal(delegated.status, 500);
    assert.match(delegated.text, /^Delegation budget exceeded/);
    const dtab = await plainGet(`${fx.url}/api/1/dtabs/deep`, { accept: 'application/dtab' });
    assert.equal(dtab.status, 200);
    await legit();
  });

  test('a watch of a stored bomb ends with the error line', async () => {
    for (const view of ['bind', 'delegate'] as const) {
      const w = await openWatch(`${fx.url}/api/1/${view}/bomb?path=/svc/a&watch=true`);
      try {
        assert.match(await w.next(), /^Delegation budget exceeded/);
        await w.ended;
      } finally {
        w.close();
      }
    }
    assert.equal(fx.controller.sharedViewCount, 0);
    await legit();
  });
});
