// Issue #18 (thrift codecs): message headers in binary (strict and old), compact; seqid rewrite;
// the buffered transport's message boundaries found byte at a time; framing; malformed, too deep
// and oversized input; TApplicationException and TTwitter headers read back by Apache Thrift.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeAppException, encodeAppException } from '../../src/protocol/thrift/app-exception.js';
import { ThriftMessageTooLargeError, ThriftProtocolError } from '../../src/protocol/thrift/errors.js';
import { frameHeader, MessageReader } from '../../src/protocol/thrift/framing.js';
import { headerWithSeqid, MessageType, readMessageHeader, withSeqid, type ThriftProtocolName } from '../../src/protocol/thrift/message.js';
import { MessageScanner } from '../../src/protocol/thrift/scanner.js';
import { decodeRequestHeader, encodeRequestHeader, structLength } from '../../src/protocol/thrift/ttwitter.js';
import { MT, protocolClass, readReply, T, thrift, type TProtocol } from '../router/thrift/apache.js';

/** A message with nested structs, lists, maps, bools and doubles, as Apache Thrift writes it (unframed). */
function richMessage(p: ThriftProtocolName, seqid: number, name = 'rich'): Buffer {
  let out: Buffer | undefined;
  const proto = new (protocolClass(p))(new thrift.TBufferedTransport(undefined, (b) => (out = Buffer.from(b))));
  proto.writeMessageBegin(name, MT.CALL, seqid);
  proto.writeStructBegin('args');
  proto.writeFieldBegin('a', T.STRING, 1);
  proto.writeString('x'.repeat(300));
  proto.writeFieldEnd();
  proto.writeFieldBegin('flag', T.BOOL, 2);
  proto.writeBool(true);
  proto.writeFieldEnd();
  proto.writeFieldBegin('d', T.DOUBLE, 40);
  proto.writeDouble(1.5);
  proto.writeFieldEnd();
  proto.writeFieldBegin('l', T.LIST, 3);
  proto.writeListBegin(T.STRUCT, 20);
  for (let i = 0; i < 20; i++) {
    proto.writeStructBegin('e');
    proto.writeFieldBegin('n', T.I32, 1);
    proto.writeI32(-i * 1000);
    proto.writeFieldEnd();
    proto.writeFieldBegin('m', T.MAP, 2);
    proto.writeMapBegin(T.STRING, T.BOOL, 2);
    proto.writeString(`k${i}`);
    proto.writeBool(false);
    proto.writeString(`j${i}`);
    proto.writeBool(true);
    proto.writeMapEnd();
    proto.writeFieldEnd();
    proto.writeFieldStop();
    proto.writeStructEnd();
  }
  proto.writeListEnd();
  proto.writeFieldEnd();
  proto.writeFieldBegin('empty', T.MAP, 4);
  proto.writeMapBegin(T.STRING, T.STRING, 0);
  proto.writeMapEnd();
  proto.writeFieldEnd();
  proto.writeFieldStop();
  proto.writeStructEnd();
  proto.writeMessageEnd();
  proto.flush();
  return out as Buffer;
}

/** A reader for Apache's protocols over a complete buffer. */
function apacheInput(p: ThriftProtocolName, bytes: Buffer): TProtocol {
  let input: TProtocol | undefined;
  thrift.TBufferedTransport.receiver((t) => (input = new (protocolClass(p))(t)))(bytes);
  return input as TProtocol;
}

for (const p of ['binary', 'compact'] as const) {
  describe(`thrift ${p} codec`, () => {
    it('reads the message header', () => {
      const m = richMessage(p, 123456, 'svc:method');
      const h = readMessageHeader(p, m);
      assert.ok(h);
      assert.equal(h.name, 'svc:method');
      assert.equal(h.type, MessageType.CALL);
      assert.equal(h.seqid, 123456);
      // Any prefix is incomplete, never an error.
      for (let n = 0; n < h.length; n++) assert.equal(readMessageHeader(p, m, 0, n), undefined);
    });

    it('rewrites the seqid (compact splices a varint of another length) and Apache reads it', () => {
      for (const [from, to] of [
        [1, 2],
        [1, 300000],
        [300000, 1],
        [5, -1],
      ] as const) {
        const m = richMessage(p, from);
        const h = readMessageHeader(p, m);
        assert.ok(h);
        const out = withSeqid(p, Buffer.from(m), h, to);
        const h2 = readMessageHeader(p, out);
        assert.equal(h2?.seqid, to);
        assert.deepEqual(h2, headerWithSeqid(p, h, to));
        // (Apache's compact reader gives the varint unsigned.)
        assert.equal(apacheInput(p, out).readMessageBegin().rseqid | 0, to);
        const s = new MessageScanner(p, 1 << 20);
        assert.equal(s.scan(out, 0, out.length)?.length, out.length);
      }
    });

    it('finds message boundaries byte at a time, in one read and back to back', () => {
      const m1 = richMessage(p, 1);
      const m2 = richMessage(p, 2, 'second');
      const both = Buffer.concat([m1, m2]);
      const r = new MessageReader({ framed: false, protocol: p, maxMessageBytes: 1 << 20 });
      const got: Buffer[] = [];
      for (let i = 0; i < both.length; i++) {
        r.push(both.subarray(i, i + 1));
        for (let m = r.next(); m !== undefined; m = r.next()) got.push(Buffer.from(m));
      }
      assert.deepEqual(got, [m1, m2]);
      const whole = new MessageReader({ framed: false, protocol: p, maxMessageBytes: 1 << 20 });
      whole.push(both);
      assert.deepEqual([whole.next(), whole.next(), whole.next()], [m1, m2, undefined]);
    });

    it('frames byte at a time', () => {
      const m = richMessage(p, 3);
      const framed = Buffer.concat([frameHeader(m.length), m, frameHeader(m.length), m]);
      const r = new MessageReader({ framed: true, protocol: p, maxMessageBytes: 1 << 20 });
      let n = 0;
      for (let i = 0; i < framed.length; i++) {
        r.push(framed.subarray(i, i + 1));
        for (let x = r.next(); x !== undefined; x = r.next()) {
          assert.deepEqual(x, m);
          n++;
        }
      }
      assert.equal(n, 2);
    });

    it('refuses oversized messages, framed (from the length) and buffered (while scanning)', () => {
      const m = richMessage(p, 1);
      const framed = new MessageReader({ framed: true, protocol: p, maxMessageBytes: 100 });
      framed.push(frameHeader(m.length));
      assert.throws(() => framed.next(), ThriftMessageTooLargeError);
      const buffered = new MessageReader({ framed: false, protocol: p, maxMessageBytes: 100 });
      buffered.push(m.subarray(0, 200));
      assert.throws(() => buffered.next(), ThriftMessageTooLargeError);
    });

    it('refuses a struct nested deeper than the limit', () => {
      const m = richMessage(p, 1);
      const h = readMessageHeader(p, m);
      assert.ok(h);
      // 100 nested struct fields (id 1), never closed.
      const nest = p === 'binary' ? Buffer.from([12, 0, 1]) : Buffer.from([0x1c]);
      const deep = Buffer.concat([m.subarray(0, h.length), ...Array.from({ length: 100 }, () => nest)]);
      assert.throws(() => new MessageScanner(p, 1 << 20).scan(deep, 0, deep.length), /nested deeper than 64/);
    });

    it('refuses unknown types and negative sizes', () => {
      const m = richMessage(p, 1);
      const h = readMessageHeader(p, m);
      assert.ok(h);
      const badType = Buffer.concat([m.subarray(0, h.length), Buffer.from(p === 'binary' ? [99, 0, 1] : [0x1e])]);
      assert.throws(() => new MessageScanner(p, 1 << 20).scan(badType, 0, badType.length), ThriftProtocolError);
      if (p === 'binary') {
        const neg = Buffer.concat([m.subarray(0, h.length), Buffer.from([11, 0, 1, 0xff, 0xff, 0xff, 0xf0])]);
        assert.throws(() => new MessageScanner(p, 1 << 20).scan(neg, 0, neg.length), /negative size/);
      }
    });

    it('encodes a TApplicationException Apache Thrift reads, and decodes it back', () => {
      const bytes = encodeAppException(p, 'm', 42, { type: 6, message: 'prx: no route' });
      const r = readReply(apacheInput(p, bytes));
      assert.deepEqual(r, { name: 'm', type: MT.EXCEPTION, seqid: 42, appException: { type: 6, message: 'prx: no route' } });
      const h = readMessageHeader(p, bytes);
      assert.ok(h);
      assert.deepEqual(decodeAppException(p, bytes, h), { type: 6, message: 'prx: no route' });
    });

    it('round-trips a TTwitter RequestHeader', () => {
      const header = {
        traceId: -5n,
        spanId: 1n << 62n,
        parentSpanId: 3n,
        sampled: true,
        clientId: 'me',
        flags: 0n,
        contexts: [[Buffer.from('k'), Buffer.from([0, 1, 2])]] as const,
        dest: '/users',
        delegations: [
          ['/a', '/b'],
          ['/c', '/$/inet/127.0.0.1/1'],
        ] as const,
        traceIdHigh: 99n,
      };
      const bytes = encodeRequestHeader(p, header);
      assert.equal(structLength(p, Buffer.concat([bytes, Buffer.from('rest')])), bytes.length);
      assert.deepEqual(decodeRequestHeader(p, bytes), { ...header, contexts: [[Buffer.from('k'), Buffer.from([0, 1, 2])]], delegations: header.delegations.map((d) => [...d]) });
    });
  });
}

describe('thrift binary: the old non-strict header', () => {
  it('reads name, type and seqid and rewrites the seqid', () => {
    const name = Buffer.from('ping');
    const m = Buffer.concat([Buffer.from([0, 0, 0, 4]), name, Buffer.from([MessageType.CALL, 0, 0, 0, 9, 0])]);
    const h = readMessageHeader('binary', m);
    assert.deepEqual(h && [h.name, h.type, h.seqid, h.length], ['ping', MessageType.CALL, 9, 13]);
    if (h) assert.equal(readMessageHeader('binary', withSeqid('binary', m, h, 77))?.seqid, 77);
    assert.equal(new MessageScanner('binary', 1024).scan(m, 0, m.length)?.length, m.length);
  });

  it('refuses a bad strict version and a bad compact id', () => {
    assert.throws(() => readMessageHeader('binary', Buffer.from([0x80, 0x02, 0, 1, 0, 0, 0, 0])), /bad binary protocol version/);
    assert.throws(() => readMessageHeader('compact', Buffer.from([0x81, 0x21, 0, 0])), /bad compact protocol id/);
  });
});
