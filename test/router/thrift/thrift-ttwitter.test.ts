// Issue #18 (thrift): Finagle's TTwitter upgrade. A client that upgrades sends a RequestHeader with
// `dest` and delegations (a dtab override); through two prx hops (the first with
// attemptExtendedUpgrade) the override reaches the second hop's binding, and `dest` names the call
// on both. A backend that does not know the upgrade answers a TApplicationException and is simply
// not upgraded.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { frameHeader, MessageReader } from '../../../src/protocol/thrift/framing.js';
import { MessageType, readMessageHeader } from '../../../src/protocol/thrift/message.js';
import { ThriftReader, TType } from '../../../src/protocol/thrift/struct-codec.js';
import { encodeRequestHeader, encodeUpgradeCall, UPGRADE_METHOD, type RequestHeader } from '../../../src/protocol/thrift/ttwitter.js';
import { ApacheClient, encodeCall, startApacheBackend } from './apache.js';
import type { TraceRecord, Tracer } from '../../../src/service/tracing.js';
import { startThriftRouter, type ThriftRouterUnderTest } from './harness.js';

/** A framed binary client that performs the TTwitter upgrade, as a Finagle client does. */
class TTwitterClient {
  readonly #socket: Socket;
  readonly #reader = new MessageReader({ framed: true, protocol: 'binary', maxMessageBytes: 1 << 20 });
  readonly #waiting: ((m: Buffer) => void)[] = [];

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.on('data', (d: Buffer) => {
      this.#reader.push(d);
      for (let m = this.#reader.next(); m !== undefined; m = this.#reader.next()) this.#waiting.shift()?.(m.subarray(this.#reader.prefixLength));
    });
  }

  static async open(port: number): Promise<TTwitterClient> {
    const s = connect(port, '127.0.0.1');
    await new Promise((r) => s.once('connect', r));
    const c = new TTwitterClient(s);
    const reply = await c.#send(encodeUpgradeCall('binary', 1));
    const h = readMessageHeader('binary', reply);
    assert.equal(h?.name, UPGRADE_METHOD);
    assert.equal(h?.type, MessageType.REPLY, 'prx accepts the upgrade');
    c.#reader.prefixed = true;
    return c;
  }

  #send(unit: Buffer): Promise<Buffer> {
    const p = new Promise<Buffer>((r) => this.#waiting.push(r));
    this.#socket.write(Buffer.concat([frameHeader(unit.length), unit]));
    return p;
  }

  /** Calls `name(arg)` with `header`; resolves with the result's success string. */
  async call(name: string, arg: string, header: RequestHeader): Promise<string | undefined> {
    const msg = encodeCall('buffered', 'binary', name, arg, 5);
    const reply = await this.#send(Buffer.concat([encodeRequestHeader('binary', header), msg]));
    const h = readMessageHeader('binary', reply);
    assert.equal(h?.type, MessageType.REPLY, `a reply to ${name}`);
    const r = new ThriftReader('binary', reply, h?.length);
    r.structBegin();
    const f = r.fieldBegin();
    return f.id === 0 && f.type === TType.STRING ? r.string() : undefined;
  }

  close(): void {
    this.#socket.destroy();
  }
}

describe('thrift router: TTwitter upgrade', () => {
  let b1: Awaited<ReturnType<typeof startApacheBackend>>;
  let b2: Awaited<ReturnType<typeof startApacheBackend>>;
  let hopB: ThriftRouterUnderTest;
  let hopA: ThriftRouterUnderTest;
  const records: TraceRecord[] = [];
  const tracer: Tracer = { record: (r) => void records.push(r), sampleTrace: () => true };

  before(async () => {
    b1 = await startApacheBackend('framed', 'binary', 'b1');
    b2 = await startApacheBackend('framed', 'binary', 'b2');
    hopB = await startThriftRouter({ label: 'b', dtab: `/backend => /$/inet/127.0.0.1/${b1.port}; /svc => /backend` }, { tracer });
    hopA = await startThriftRouter({
      label: 'a',
      // To the second hop with the upgrade; straight to a plain thrift backend under /direct.
      dtab: `/svc => /$/inet/127.0.0.1/${hopB.port}; /svc/direct => /$/inet/127.0.0.1/${b1.port}`,
      client: { attemptExtendedUpgrade: true },
    });
  });
  after(async () => {
    await hopA.close();
    await hopB.close();
    await b1.close();
    await b2.close();
  });

  it('a dtab override sent as delegations travels through the first hop to the second', async () => {
    const c = await TTwitterClient.open(hopA.port);
    try {
      assert.equal(await c.call('echo', 'plain', { traceId: 7n, spanId: 8n }), 'b1:plain');
      const override = { traceId: 7n, spanId: 9n, delegations: [['/backend', `/$/inet/127.0.0.1/${b2.port}`]] as const };
      assert.equal(await c.call('echo', 'overridden', override), 'b2:overridden');
      // The first hop did not need the override: its binding is the same path entry.
      assert.equal(hopB.metric('rt/b/service/svc/requests'), 2);
    } finally {
      c.close();
    }
  });

  it("the caller's trace continues: the second hop's server span is a child of the first hop's", async () => {
    records.length = 0;
    const c = await TTwitterClient.open(hopA.port);
    try {
      assert.equal(await c.call('echo', 't', { traceId: 0x1234n, spanId: 0x55n, sampled: true }), 'b1:t');
    } finally {
      c.close();
    }
    const spans = new Set(records.map((r) => `${r.traceId.traceId}/${r.traceId.parentId}/${r.traceId.spanId}`));
    assert.equal(spans.size, 1, [...spans].join(' '));
    const id = records[0]?.traceId;
    assert.equal(id?.traceId, 0x1234n);
    assert.equal(id?.parentId, 0x55n, 'the first hop made a child span of the caller');
    assert.notEqual(id?.spanId, 0x55n);
    assert.ok(records.some((r) => r.annotation.kind === 'rpc' && r.annotation.name === 'echo'));
    assert.ok(records.some((r) => r.annotation.kind === 'binary' && r.annotation.key === 'router.label' && r.annotation.value === 'b'));
  });

  it('`dest` names the call on both hops', async () => {
    const c = await TTwitterClient.open(hopA.port);
    try {
      assert.equal(await c.call('echo', 'd', { dest: '/users' }), 'b1:d');
      assert.equal(hopA.metric('rt/a/service/svc/users/requests'), 1);
      assert.equal(hopB.metric('rt/b/service/svc/users/requests'), 1);
    } finally {
      c.close();
    }
  });

  it('a backend that answers the upgrade with a TApplicationException is used without it', async () => {
    const c = await ApacheClient.open(hopA.port, 'framed', 'binary');
    try {
      assert.equal((await c.call('direct:echo', 'x', 3)).value, 'b1:x');
      assert.equal((await c.call('direct:echo', 'y', 4)).value, 'b1:y');
      assert.ok(b1.log.calls.some((x) => x.name === UPGRADE_METHOD));
      assert.equal(b1.log.calls.filter((x) => x.name === 'direct:echo').length, 2);
    } finally {
      c.close();
    }
  });
});
