// A probe must always end in an outcome. An endpoint that failure accrual marked dead is offered
// one probe request after its backoff; if that probe's answer counted as a success at its head
// and the client then left mid-body, the outcome used to be dropped, leaving the endpoint "probe
// in flight" for ever: never offered traffic again. Cancelling is no fault of the endpoint, so
// the probe is reopened and the next request probes again.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startBackend, startRouter, tempFsNamer, type Backend, type RouterUnderTest } from '../router/harness.js';

const CLIENT = 'rt/http/client/#/io.prx.fs/web';
const BACKOFF_MS = 200;

type Mode = 'fail' | 'stall-body' | 'ok';

describe('adversarial: a cancelled probe reopens probing', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('a probe whose client leaves mid-body is ignored, and the endpoint is probed again', async () => {
    let mode: Mode = 'fail';
    const flaky: Backend = await startBackend('flaky', (req, res) => {
      req.resume();
      if (mode === 'fail') {
        res.writeHead(500, { 'content-type': 'text/plain', 'x-backend': 'flaky' });
        res.end('flaky failed');
      } else if (mode === 'stall-body') {
        // A success at its head, whose body never ends: the client will leave.
        res.writeHead(200, { 'content-type': 'text/plain', 'x-backend': 'flaky' });
        res.write('partial');
      } else {
        res.writeHead(200, { 'content-type': 'text/plain', 'x-backend': 'flaky' });
        res.end('flaky');
      }
    });
    const good = await startBackend('good');
    const fs = tempFsNamer({ web: `127.0.0.1 ${flaky.port}\n127.0.0.1 ${good.port}\n` });
    const rt: RouterUnderTest = await startRouter(
      {
        dtab: '/svc=>/#/io.prx.fs',
        client: {
          loadBalancer: { kind: 'roundRobin' },
          failureAccrual: { kind: 'io.prx.consecutiveFailures', failures: 1, backoff: { kind: 'constant', ms: BACKOFF_MS } },
        },
      },
      { namers: [fs.mounted] },
    );
    cleanups.push(() => rt.close(), () => good.close(), () => flaky.close(), () => fs.close());
    const metric = (name: string): number => rt.metric(name) ?? 0;

    /** One request; a response from `flaky` in stall-body mode is abandoned after its head. */
    const send = async (): Promise<string> => {
      const r = await request(`${rt.url}/`, { headers: { host: 'web' } });
      const from = String(r.headers['x-backend'] ?? '');
      if (from === 'flaky' && mode === 'stall-body') r.body.destroy();
      else await r.body.text();
      return from;
    };

    // The first failure marks flaky dead.
    for (let i = 0; i < 20 && metric(`${CLIENT}/failure_accrual/removals`) === 0; i++) await send();
    assert.equal(metric(`${CLIENT}/failure_accrual/removals`), 1);

    // After the backoff the probe reaches flaky, answers 200 at its head, and the client leaves.
    mode = 'stall-body';
    const before = flaky.requests.length;
    await sleep(BACKOFF_MS + 50);
    for (let i = 0; i < 50 && flaky.requests.length === before; i++) await send();
    assert.equal(flaky.requests.length, before + 1, 'the probe reached the dead endpoint');
    assert.equal(metric(`${CLIENT}/failure_accrual/probes`), 1);

    // The cancelled probe is no outcome: flaky is probed again, answers, and is revived.
    mode = 'ok';
    const deadline = Date.now() + 3000;
    while (metric(`${CLIENT}/failure_accrual/revivals`) === 0 && Date.now() < deadline) {
      await send();
      await sleep(10);
    }

    assert.equal(metric(`${CLIENT}/failure_accrual/revivals`), 1, 'flaky was probed again and revived');
    assert.equal(metric(`${CLIENT}/loadbalancer/available`), 2);
  });
});
