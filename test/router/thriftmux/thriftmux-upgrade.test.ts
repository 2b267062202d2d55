// Issue #18 (thriftmux): with attemptExtendedUpgrade, a thriftmux router's plain thrift client
// carries the Tdispatch's destination (as TTwitter `dest`) and dtab (as delegations) to the next
// hop, a thrift router that names and routes the call by them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReplyStatus } from '../../../src/protocol/mux/messages.js';
import { MuxTestClient } from '../mux/harness.js';
import { startApacheBackend } from '../thrift/apache.js';
import { startThriftRouter, type ThriftRouterUnderTest } from '../thrift/harness.js';
import { readThriftBody, startThriftmuxRouter, thriftBody, type ThriftmuxRouterUnderTest } from './harness.js';

describe('thriftmux → thrift with the TTwitter upgrade', () => {
  let b1: Awaited<ReturnType<typeof startApacheBackend>>;
  let b2: Awaited<ReturnType<typeof startApacheBackend>>;
  let hop2: ThriftRouterUnderTest;
  let hop1: ThriftmuxRouterUnderTest;

  before(async () => {
    b1 = await startApacheBackend('framed', 'binary', 'b1');
    b2 = await startApacheBackend('framed', 'binary', 'b2');
    hop2 = await startThriftRouter({
      label: 'hop2',
      dtab: `/svc => /$/inet/127.0.0.1/${b1.port}; /svc/users => /$/inet/127.0.0.1/${b2.port}; /svc/x => /override`,
    });
    hop1 = await startThriftmuxRouter({
      label: 'hop1',
      dtab: `/svc => /$/inet/127.0.0.1/${hop2.port}`,
      client: { attemptExtendedUpgrade: true },
    });
  });
  after(async () => {
    await hop1.close();
    await hop2.close();
    await b1.close();
    await b2.close();
  });

  async function call(c: MuxTestClient, req: Parameters<MuxTestClient['call']>[0], arg: string): Promise<string | undefined> {
    const r = await c.call({ ...req, body: thriftBody('binary', 'echo', arg, 1) }).reply;
    assert.equal(r.status, ReplyStatus.Ok);
    const reply = readThriftBody('binary', r.body);
    return reply.value ?? reply.appException?.message;
  }

  it('the Tdispatch destination names the call at the next hop', async () => {
    const c = new MuxTestClient(hop1.port);
    try {
      assert.equal(await call(c, {}, 'plain'), 'b1:plain');
      assert.equal(await call(c, { dst: '/users' }, 'u'), 'b2:u');
      assert.equal(hop2.metric('rt/hop2/service/svc/users/requests'), 1);
    } finally {
      c.close();
    }
  });

  it('the Tdispatch dtab travels as delegations and is applied at the next hop', async () => {
    const c = new MuxTestClient(hop1.port);
    try {
      // Without the override, /svc/x at hop2 goes to /override, which names nothing: the dtab
      // falls back to its /svc rule (b1).
      assert.equal(await call(c, { dst: '/x' }, 'none'), 'b1:none');
      const dtab = [{ prefix: '/override', dst: `/$/inet/127.0.0.1/${b2.port}` }];
      assert.equal(await call(c, { dst: '/x', dtab }, 'over'), 'b2:over');
    } finally {
      c.close();
    }
  });
});
