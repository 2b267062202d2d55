// The resolver's `io.prx.thriftNameInterpreter` interface, driven by Debian's thriftpy (a client
// built from prx's namer.thrift alone, over plain framed thrift: Finagle's downgrade) and by prx's
// own ThriftMux link: every method, long-poll stamps, failures and their retry hints, the
// observation caches' bounds, discards, bad bytes and shutdown.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { address, addrBound, addrFailed, readDtab } from '../../src/naming/index.js';
import { decodeNamerReply, encodeNamerCall } from '../../src/protocol/thrift/name-interface/messages.js';
import { ThriftMuxNamerLink } from '../../src/protocol/thriftmux/namer-link.js';
import { MessageType } from '../../src/protocol/thrift/message.js';
import { ThriftWriter, TType } from '../../src/protocol/thrift/struct-codec.js';
import { eventually } from './helpers.js';
import { type ThriftNamerFixture, startThriftNamer, thriftpyPeer } from './thrift-namer-helpers.js';

const DTAB = '/svc => /#/test';

async function withNamer(f: (fx: ThriftNamerFixture) => Promise<void>, namespaces: Record<string, string> = { default: DTAB }, config = {}): Promise<void> {
  const fx = await startThriftNamer(namespaces, config, { answerTimeoutMs: 1000 });
  try {
    await f(fx);
  } finally {
    await fx.close();
  }
}

/** Observations long polls are waiting on now. */
function activeBindings(fx: ThriftNamerFixture): number | undefined {
  const m = fx.registry.resolve(['io.prx.thriftNameInterpreter', 'bindingcache', 'active'])?.metric;
  return m?.kind === 'gauge' ? m.value : undefined;
}

function link(port: number): ThriftMuxNamerLink {
  return new ThriftMuxNamerLink('127.0.0.1', port, { tls: undefined, pingIntervalMs: 1000, closeTimeoutMs: 1000, threshold: 2, windowSize: 10, handshakeTimeoutMs: 2000 });
}

const wire = (text: string): Buffer[] => readDtab(`${text}=>/x`).dentries[0]!.prefix.elems.map((e) => Buffer.from(String(e), 'latin1'));
const bindReq = (path: string, stamp: Buffer = Buffer.alloc(0), dtab = ''): { dtab: string; name: { stamp: Buffer; name: Buffer[]; ns: string }; clientId: Buffer[] } => ({
  dtab,
  name: { stamp, name: wire(path), ns: 'default' },
  clientId: [],
});

describe('thriftpy client (plain framed thrift)', () => {
  test('bind: the namespace dtab plus the request dtab; a poll with the current stamp waits for the change', () =>
    withNamer(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      fx.namer.bind('api', addrBound([address('127.0.0.1', 8081)]));
      const peer = await thriftpyPeer(fx.port);
      try {
        const first = await peer.call({ op: 'bind', path: ['svc', 'web', 'extra'] });
        assert.deepEqual(first.ok?.['root'], { leaf: { id: ['#', 'test', 'web'], residual: ['extra'] } });
        assert.equal(first.ok?.['ns'], 'default');
        const stamp = first.ok?.['stamp'] as string;
        assert.equal(stamp.length, 16, 'an 8-byte stamp');
        // The request dtab goes after the stored one, so it wins; alternatives travel as node ids.
        const union = await peer.call({ op: 'bind', path: ['svc', 'web'], dtab: '/svc/web => 3 * /#/test/api & 1 * /#/test/web' });
        assert.deepEqual(union.ok?.['root'], { weighted: [[3, 0], [1, 1]] });
        assert.deepEqual(union.ok?.['nodes'], { '0': { leaf: { id: ['#', 'test', 'api'], residual: [] } }, '1': { leaf: { id: ['#', 'test', 'web'], residual: [] } } });
        // The same stamp again: answered only once the value changes.
        peer.send({ op: 'bind', path: ['svc', 'web', 'extra'], stamp });
        await assert.rejects(peer.next(300), /did not answer/);
        await fx.store.put('default', readDtab('/svc => /#/test; /svc/web => /#/test/api'));
        const next = await peer.next();
        assert.deepEqual(next.ok?.['root'], { leaf: { id: ['#', 'test', 'api'], residual: ['extra'] } });
        assert.notEqual(next.ok?.['stamp'], stamp);
        // An old stamp gets the current value at once.
        const again = await peer.call({ op: 'bind', path: ['svc', 'web', 'extra'], stamp });
        assert.equal(again.ok?.['stamp'], next.ok?.['stamp']);
        const neg = await peer.call({ op: 'bind', path: ['nothing', 'here'] });
        assert.deepEqual(neg.ok?.['root'], { neg: true });
      } finally {
        await peer.close();
      }
    }));

  test('bind failures carry namerd reasons and the retry hint (retryBaseSecs plus up to retryJitterSecs)', () =>
    withNamer(
      async (fx) => {
        const peer = await thriftpyPeer(fx.port);
        try {
          const empty = await peer.call({ op: 'bind', path: [] });
          assert.equal(empty.failure?.reason, 'empty path');
          assert.ok((empty.failure?.retryInSeconds ?? 0) >= 30 && (empty.failure?.retryInSeconds ?? 0) <= 35, `retry hint ${empty.failure?.retryInSeconds}`);
          const badDtab = await peer.call({ op: 'bind', path: ['svc', 'web'], dtab: '/svc => =>' });
          assert.match(badDtab.failure?.reason ?? '', /.+/);
          fx.namer.set('broken', { kind: 'failed', error: new Error('namer exploded') });
          const failing = await peer.call({ op: 'bind', path: ['svc', 'broken'] });
          assert.equal(failing.failure?.reason, 'namer exploded');
          // The connection still serves.
          fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
          const ok = await peer.call({ op: 'bind', path: ['svc', 'web'] });
          assert.ok(ok.ok);
        } finally {
          await peer.close();
        }
      },
      { default: DTAB },
      { retryBaseSecs: 30, retryJitterSecs: 5 },
    ));

  test('addr: IP bytes, ports and metadata; long-polled; Neg; transformer prefixes dropped', () =>
    withNamer(async (fx) => {
      const web = fx.namer.bind('web', addrBound([address('127.0.0.1', 8080, 1, { nodeName: 'node-a' }), address('::1', 8081, 2.5)], { authority: 'web.example' }));
      const peer = await thriftpyPeer(fx.port);
      try {
        const first = await peer.call({ op: 'addr', path: ['#', 'test', 'web'] });
        assert.deepEqual(first.ok?.['addrs'], [
          { ip: '00000000000000000000000000000001', port: 8081, meta: { endpoint_addr_weight: 2.5 } },
          { ip: '127.0.0.1', port: 8080, meta: { nodeName: 'node-a' } },
        ]);
        assert.deepEqual(first.ok?.['meta'], { authority: 'web.example' });
        peer.send({ op: 'addr', path: ['#', 'test', 'web'], stamp: first.ok?.['stamp'] });
        await assert.rejects(peer.next(300), /did not answer/);
        web.update(addrBound([address('127.0.0.2', 9000)]));
        const next = await peer.next();
        assert.deepEqual(next.ok?.['addrs'], [{ ip: '127.0.0.2', port: 9000, meta: null }]);
        const viaTransformer = await peer.call({ op: 'addr', path: ['%', 'io.prx.port', '4141', '#', 'test', 'web'] });
        assert.deepEqual(viaTransformer.ok?.['addrs'], [{ ip: '127.0.0.2', port: 9000, meta: null }]);
        const neg = await peer.call({ op: 'addr', path: ['#', 'test', 'nope'] });
        assert.equal(neg.ok?.['neg'], true);
        web.update(addrFailed(new Error('endpoints unavailable')));
        const failed = await peer.call({ op: 'addr', path: ['#', 'test', 'web'] });
        assert.equal(failed.failure?.reason, 'endpoints unavailable');
      } finally {
        await peer.close();
      }
    }));

  test('dtab: the stored text, long-polled; delegate explains step by step', () =>
    withNamer(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const peer = await thriftpyPeer(fx.port);
      try {
        const d = await peer.call({ op: 'dtab' });
        assert.equal(readDtab(d.ok?.['dtab'] as string).show, readDtab(DTAB).show);
        peer.send({ op: 'dtab', stamp: d.ok?.['stamp'] });
        await assert.rejects(peer.next(300), /did not answer/);
        await fx.store.put('default', readDtab('/svc => /#/test; /web => /svc/web'));
        const changed = await peer.next();
        assert.equal(readDtab(changed.ok?.['dtab'] as string).show, readDtab('/svc => /#/test; /web => /svc/web').show);

        const del = await peer.call({ op: 'delegate', path: ['web'] });
        const nodes = del.ok?.['nodes'] as Record<string, Record<string, unknown>>;
        const root = del.ok?.['root'] as Record<string, unknown>;
        assert.deepEqual(root['path'], ['web']);
        const step1 = nodes[String(root['delegate'])] as Record<string, unknown>;
        assert.deepEqual(step1['path'], ['svc', 'web']);
        assert.equal(step1['dentry'], '/web=>/svc/web');
        const step2 = nodes[String(step1['delegate'])] as Record<string, unknown>;
        assert.deepEqual(step2['path'], ['#', 'test', 'web']);
        const leaf = nodes[String(step2['delegate'])] ?? step2;
        assert.deepEqual((leaf['boundLeaf'] as { id: string[] }).id, ['#', 'test', 'web']);
        assert.equal((del.ok?.['stamp'] as string).length > 0, true, 'a delegation answer carries a stamp');
      } finally {
        await peer.close();
      }
    }));

  test('an unknown method is a TApplicationException; bytes that are not thrift close only that connection', () =>
    withNamer(async (fx) => {
      const call = new ThriftWriter('binary').messageBegin('resolveEverything', MessageType.CALL, 7).structBegin().field(TType.STRING, 1).string('x').structEnd().toBuffer();
      const framed = Buffer.concat([Buffer.from([0, 0, 0, 0]), call]);
      framed.writeInt32BE(call.length, 0);
      const reply = await rawExchange(fx.port, framed);
      assert.match(reply.toString('latin1'), /Invalid method name: 'resolveEverything'/);
      // A frame that claims to be thrift but is not: that connection is closed.
      const junk = Buffer.from([0, 0, 0, 8, 0x80, 0x01, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff]);
      await rawExchange(fx.port, junk);
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const peer = await thriftpyPeer(fx.port);
      try {
        assert.ok((await peer.call({ op: 'bind', path: ['svc', 'web'] })).ok);
      } finally {
        await peer.close();
      }
    }));

  test('waiting polls share one encoded answer, each sent with its own seqid; a closed connection withdraws its poll', () =>
    withNamer(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const first = decodeNamerReply('bind', await framedCall(fx.port, encodeNamerCall('bind', 5, bindReq('/svc/web'))));
      assert.ok('ok' in first.result);
      const stamp = first.result.ok.stamp;
      // Three plain thrift connections wait on the same observation with seqids 41 to 43; the third goes away.
      const waiting = [41, 42].map((seqid) => framedCall(fx.port, encodeNamerCall('bind', seqid, bindReq('/svc/web', stamp))));
      const leaving = connect(fx.port, '127.0.0.1', () => leaving.write(frame(encodeNamerCall('bind', 43, bindReq('/svc/web', stamp)))));
      await eventually(() => activeBindings(fx) === 1, 3000, 'the polls wait');
      leaving.destroy();
      await new Promise((r) => setTimeout(r, 100));
      await fx.store.put('default', readDtab('/svc => /#/test; /svc/web => /#/test/web/v2'));
      const answers = (await Promise.all(waiting)).map((b) => decodeNamerReply('bind', b));
      assert.deepEqual(answers.map((a) => a.seqid), [41, 42]);
      for (const a of answers) {
        assert.ok('ok' in a.result);
        assert.notEqual(a.result.ok.stamp.toString('hex'), stamp.toString('hex'));
      }
      assert.equal(activeBindings(fx), 0);
      // A poll alone on its observation: its connection closing leaves nothing waiting.
      const newest = (answers[0]!.result as { ok: { stamp: Buffer } }).ok.stamp;
      const alone = connect(fx.port, '127.0.0.1', () => alone.write(frame(encodeNamerCall('bind', 44, bindReq('/svc/web', newest)))));
      await eventually(() => activeBindings(fx) === 1, 3000, 'the poll waits');
      alone.destroy();
      await eventually(() => activeBindings(fx) === 0, 3000, 'the closed connection withdrew its poll');
    }));
});

/** `msg` in a thrift frame (its length first). */
function frame(msg: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeInt32BE(msg.length, 0);
  return Buffer.concat([head, msg]);
}

/** One framed call on its own connection: the reply's message (unframed). */
function framedCall(port: number, msg: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const s = connect(port, '127.0.0.1', () => s.write(frame(msg)));
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        s.destroy();
        resolve(buf.subarray(4, 4 + buf.readInt32BE(0)));
      }
    });
    s.on('error', reject);
    setTimeout(() => reject(new Error('no reply within 5 s')), 5000).unref();
  });
}

/** Writes `bytes`, returns what comes back until the peer closes or 1 s passes. */
function rawExchange(port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = connect(port, '127.0.0.1', () => s.write(bytes));
    const done = (): void => {
      s.destroy();
      resolve(Buffer.concat(chunks));
    };
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      setTimeout(done, 50);
    });
    s.on('error', done);
    s.on('close', done);
    setTimeout(done, 1000);
  });
}

describe('ThriftMux (prx link)', () => {
  test('bind over mux: the long poll waits, a discard withdraws it, many polls share one observation', () =>
    withNamer(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const l = link(fx.port);
      try {
        const first = await l.call('bind', bindReq('/svc/web'), AbortSignal.timeout(5000));
        assert.ok('ok' in first);
        const stamp = first.ok.stamp;
        // 20 polls with the current stamp wait on one observation.
        const polls = Array.from({ length: 20 }, () => l.call('bind', bindReq('/svc/web', stamp), AbortSignal.timeout(5000)));
        await eventually(() => activeBindings(fx) === 1, 3000, 'one active observation');
        await fx.store.put('default', readDtab('/svc => /#/test; /svc/web => /#/test/web/v2'));
        const answers = await Promise.all(polls);
        for (const a of answers) {
          assert.ok('ok' in a);
          assert.equal(a.ok.stamp.toString('hex'), (answers[0] as { ok: { stamp: Buffer } }).ok.stamp.toString('hex'));
        }
        // A discarded poll releases its place: the observation goes inactive.
        const abort = new AbortController();
        const newest = (answers[0] as { ok: { stamp: Buffer } }).ok.stamp;
        const withdrawn = l.call('bind', bindReq('/svc/web', newest), abort.signal);
        await eventually(() => activeBindings(fx) === 1, 3000, 'the poll waits');
        abort.abort(new Error('gave up'));
        await assert.rejects(withdrawn);
        await eventually(() => activeBindings(fx) === 0, 3000, 'the discard reached the resolver');
      } finally {
        l.close();
      }
    }));

  test('the active capacity bounds waiting observations; the inactive ones are bounded too', () =>
    withNamer(
      async (fx) => {
        for (const n of ['a', 'b', 'c', 'd']) fx.namer.bind(n, addrBound([address('127.0.0.1', 8000)]));
        const l = link(fx.port);
        const abort = new AbortController();
        const waiting: Promise<unknown>[] = [];
        try {
          const stampOf = async (n: string): Promise<Buffer> => {
            const r = await l.call('bind', bindReq(`/svc/${n}`), AbortSignal.timeout(5000));
            assert.ok('ok' in r);
            return r.ok.stamp;
          };
          // Two polls wait (the active capacity); a third that would wait is refused at once.
          for (const n of ['a', 'b']) {
            const stamp = await stampOf(n);
            waiting.push(l.call('bind', bindReq(`/svc/${n}`, stamp), abort.signal).catch(() => undefined));
            await eventually(() => activeBindings(fx) === waiting.length, 3000, `${n} waits`);
          }
          const c = await stampOf('c');
          const refused = await l.call('bind', bindReq('/svc/c', c), AbortSignal.timeout(5000));
          assert.ok('failure' in refused);
          assert.equal(refused.failure.reason, 'The maximum number of concurrent observations has been reached (2)');
          // Answered at once (not waiting) needs no capacity; the inactive set keeps one (c or d).
          await stampOf('d');
          assert.equal(fx.iface.service.observations.bindings, 3);
        } finally {
          abort.abort();
          await Promise.all(waiting);
          l.close();
        }
      },
      { default: DTAB },
      { cache: { bindingCacheActive: 2, bindingCacheInactive: 1, bindingCacheInactiveTTLSecs: 600, addrCacheActive: 10, addrCacheInactive: 10, addrCacheInactiveTTLSecs: 600 } },
    ));

  test('closing the interface nacks the waiting polls at once', () =>
    withNamer(async (fx) => {
      fx.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
      const l = link(fx.port);
      try {
        const first = await l.call('bind', bindReq('/svc/web'), AbortSignal.timeout(5000));
        assert.ok('ok' in first);
        const waiting = l.call('bind', bindReq('/svc/web', first.ok.stamp), AbortSignal.timeout(5000)).then(
          () => undefined,
          (e: unknown) => e,
        );
        await eventually(() => activeBindings(fx) === 1, 3000, 'the poll waits');
        const started = Date.now();
        await fx.iface.close(5000);
        assert.match(String(await waiting), /nacked/);
        assert.ok(Date.now() - started < 2000, 'close did not wait for the poll');
      } finally {
        l.close();
      }
    }));
});
