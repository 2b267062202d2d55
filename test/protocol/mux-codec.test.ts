// The mux codec pinned to the real wire. Golden frames come from two places, each said per test:
//  - bytes captured from real Finagle peers, as published in pixie-io/pixie's mux parser tests
//    (src/stirling/source_connectors/socket_tracer/protocols/mux/parse_test.cc): Finagle's
//    "tinit check" Rerr, an Rping, and the contexts of a Finagle Tdispatch (trace context, retries,
//    deadline with Finagle's "no deadline");
//  - the byte layouts of Finagle's mux specification (finagle-mux `mux/package.scala`, and the
//    encoders in `mux/transport/Message.scala`), written out by hand below, with the inputs of
//    Finagle's own MessageTest (tags 8388607/1/123, dentries `/a=>/b`, `/foo=>/$/inet/twitter.com/80`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEADLINE_KEY,
  MuxFailureFlag,
  RETRIES_KEY,
  TRACE_KEY,
  muxFailureContexts,
  readDeadline,
  readMuxFailure,
  readRetries,
  readTraceContext,
  writeRetries,
} from '../../src/protocol/mux/contexts.js';
import { MuxBadMessageError, MuxMessageTooLargeError, MuxPartialBudgetError } from '../../src/protocol/mux/errors.js';
import { Defragmenter, encodeFrame, FrameDecoder, frameHeader, MuxType, TAG_MSB, type MuxFrame } from '../../src/protocol/mux/frame.js';
import {
  decodeInit,
  decodeRdispatch,
  decodeRreq,
  decodeTdiscarded,
  decodeTdispatch,
  decodeTlease,
  decodeTreq,
  encodeInit,
  encodeRdispatchHead,
  encodeTdiscarded,
  encodeTdispatchHead,
  encodeTlease,
  encodeTreqHead,
  initHeader,
  ReplyStatus,
} from '../../src/protocol/mux/messages.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const ascii = (s: string): string => Buffer.from(s).toString('hex');

/** Every frame a decoder cuts from `bytes`, fed in chunks of `step`. */
function frames(bytes: Buffer, step = bytes.length, max = 1 << 20): MuxFrame[] {
  const out: MuxFrame[] = [];
  const d = new FrameDecoder({ frame: (type, tag, body) => out.push({ type, tag, body: Buffer.from(body) }) }, max);
  for (let i = 0; i < bytes.length; i += step) d.push(bytes.subarray(i, i + step));
  return out;
}

describe('mux framing: golden frames captured from Finagle (pixie-io parse_test.cc)', () => {
  it('the "tinit check" Rerr Finagle sends first: type 127 (its legacy Rerr), tag 1', () => {
    const golden = hex('0000000f 7f 000001' + ascii('tinit check'));
    assert.deepEqual(encodeFrame(MuxType.BadRerr, 1, Buffer.from('tinit check')), golden);
    const [f] = frames(golden, 3);
    assert.deepEqual(f, { type: 127, tag: 1, body: Buffer.from('tinit check') });
  });

  it('Rping on tag 1 is type 0xbf (-65) with an empty body', () => {
    const golden = hex('00000004 bf 000001');
    assert.deepEqual(encodeFrame(MuxType.Rping, 1), golden);
    assert.deepEqual(frames(golden), [{ type: MuxType.Rping, tag: 1, body: Buffer.alloc(0) }]);
  });

  it("a Finagle Tdispatch's broadcast contexts: trace, retries, and a deadline of Time.Top (none)", () => {
    // Verbatim from the capture (tag 0x40000f; three contexts; empty dst; no dtab); the thrift
    // body after it is replaced by our own four bytes.
    const contextsAndDst = hex(
      '0003' +
        '0028' + ascii('com.twitter.finagle.tracing.TraceContext') +
        '0020' + '42ea40a4cb749ed6'.repeat(3) + '0000000000000000' +
        '001b' + ascii('com.twitter.finagle.Retries') + '0004' + '00000000' +
        '001c' + ascii('com.twitter.finagle.Deadline') + '0010' + '16953b99d17d7ec0' + '7fffffffffffffff' +
        '0000' + '0000',
    );
    const body = hex('80010001');
    const frame = Buffer.concat([frameHeader(MuxType.Tdispatch, 0x40000f, contextsAndDst.length + body.length), contextsAndDst, body]);
    const [f] = frames(frame, 7);
    assert.equal(f?.type, MuxType.Tdispatch);
    assert.equal(f?.tag, 0x40000f);
    const td = decodeTdispatch(f.body);
    assert.deepEqual(td.contexts.map((c) => c.key.toString()), [TRACE_KEY, RETRIES_KEY, DEADLINE_KEY]);
    const trace = readTraceContext(td.contexts);
    assert.equal(trace?.spanId, 4821737427585769174n);
    assert.equal(trace?.parentId, 4821737427585769174n);
    assert.equal(trace?.traceId, 4821737427585769174n);
    assert.equal(trace?.flags, 0n);
    assert.equal(readRetries(td.contexts), 0);
    // Finagle's "no deadline" (Long.MaxValue) is no deadline at all.
    assert.equal(readDeadline(td.contexts), undefined);
    assert.equal(td.dst, '');
    assert.deepEqual(td.dtab, []);
    assert.deepEqual(td.body, body);
    // Re-encoding gives the captured bytes back.
    assert.deepEqual(encodeTdispatchHead(td.contexts, td.dst, td.dtab), contextsAndDst);
  });
});

describe('mux messages: the byte layouts of the mux specification', () => {
  it('Tdispatch: nc:2 (k~2 v~2){nc} dst~2 nd:2 (from~2 to~2){nd} body', () => {
    const head = encodeTdispatchHead([{ key: Buffer.from('k'), value: Buffer.from('vv') }], '/foo/bar/baz', [
      { prefix: '/a', dst: '/b' },
      { prefix: '/foo', dst: '/$/inet/twitter.com/80' },
    ]);
    const golden = hex(
      '0001 0001' + ascii('k') + '0002' + ascii('vv') +
        '000c' + ascii('/foo/bar/baz') +
        '0002' + '0002' + ascii('/a') + '0002' + ascii('/b') + '0004' + ascii('/foo') + '0016' + ascii('/$/inet/twitter.com/80'),
    );
    assert.deepEqual(head, golden);
    const td = decodeTdispatch(Buffer.concat([golden, hex('00010203')]));
    assert.equal(td.dst, '/foo/bar/baz');
    assert.deepEqual(td.dtab, [
      { prefix: '/a', dst: '/b' },
      { prefix: '/foo', dst: '/$/inet/twitter.com/80' },
    ]);
    assert.deepEqual(td.body, hex('00010203'));
  });

  it('Rdispatch ok, error and nack: status:1 nc:2 contexts body; MuxFailure flags on a nack', () => {
    assert.deepEqual(Buffer.concat([encodeRdispatchHead(ReplyStatus.Ok, []), hex('0102')]), hex('00 0000 0102'));
    const err = decodeRdispatch(hex('01 0000' + ascii('boom')));
    assert.equal(err.status, ReplyStatus.Error);
    assert.equal(err.body.toString(), 'boom');
    const nackHead = encodeRdispatchHead(ReplyStatus.Nack, muxFailureContexts(MuxFailureFlag.Retryable | MuxFailureFlag.Rejected));
    assert.deepEqual(nackHead, hex('02 0001 000a' + ascii('MuxFailure') + '0008 0000000000000003'));
    assert.equal(readMuxFailure(decodeRdispatch(nackHead).contexts), 3n);
    assert.throws(() => decodeRdispatch(hex('03 0000')), MuxBadMessageError);
  });

  it('Treq: n:1 (key:1 value~1){n} body, trace id (24 bytes) and flags; Rreq status:1 body', () => {
    const id = hex('0000000000000001 0000000000000002 0000000000000003');
    const head = encodeTreqHead(id, 1);
    assert.deepEqual(head, hex('02 01 18' + id.toString('hex') + '02 01 01'));
    const t = decodeTreq(Buffer.concat([head, hex('beef')]));
    assert.deepEqual(t.traceId, id);
    assert.equal(t.traceFlags, 1);
    assert.deepEqual(t.body, hex('beef'));
    assert.deepEqual(decodeTreq(hex('00 beef')).body, hex('beef'));
    assert.throws(() => decodeTreq(hex('01 01 05 0000')), MuxBadMessageError);
    assert.deepEqual(decodeRreq(hex('00 cafe')), { status: 0, body: hex('cafe') });
  });

  it('Tinit/Rinit: version:2 (key~4 value~4)*, with the mux-framer header', () => {
    const framer = Buffer.alloc(4);
    framer.writeUInt32BE(65536);
    const bytes = encodeInit({ version: 1, headers: [[Buffer.from('mux-framer'), framer]] });
    assert.deepEqual(bytes, hex('0001 0000000a' + ascii('mux-framer') + '00000004 00010000'));
    const init = decodeInit(bytes, 'Tinit');
    assert.equal(init.version, 1);
    assert.equal(initHeader(init, 'mux-framer')?.readUInt32BE(0), 65536);
    assert.throws(() => decodeInit(hex('0001 000000ff 00'), 'Tinit'), MuxBadMessageError);
  });

  it('Tdiscarded is a marker (tag 0) of type -62 as Finagle writes it: which:3 why', () => {
    const frame = encodeFrame(MuxType.BadTdiscarded, 0, encodeTdiscarded(8388607, 'gone'));
    assert.deepEqual(frame, hex('0000000b c2 000000 7fffff' + ascii('gone')));
    assert.deepEqual(decodeTdiscarded(frames(frame)[0]!.body), { which: 8388607, why: 'gone' });
    assert.throws(() => decodeTdiscarded(hex('0001')), MuxBadMessageError);
  });

  it('Tlease: unit:1 howlong:8 on the marker tag', () => {
    const frame = encodeFrame(MuxType.Tlease, 0, encodeTlease({ unit: 0, howLong: 4294967295n }));
    assert.deepEqual(frame, hex('0000000d 43 000000 00 00000000ffffffff'));
    assert.deepEqual(decodeTlease(frames(frame)[0]!.body), { unit: 0, howLong: 4294967295n });
  });

  it('control messages: Tdrain 64, Rdrain -64, Tping 65, Rdiscarded -66, Rerr -128, on their tags', () => {
    assert.deepEqual(encodeFrame(MuxType.Tdrain, 1), hex('00000004 40 000001'));
    assert.deepEqual(encodeFrame(MuxType.Rdrain, 1), hex('00000004 c0 000001'));
    assert.deepEqual(encodeFrame(MuxType.Tping, 123), hex('00000004 41 00007b'));
    assert.deepEqual(encodeFrame(MuxType.Rdiscarded, 2), hex('00000004 be 000002'));
    assert.deepEqual(encodeFrame(MuxType.Rerr, 2, Buffer.from('x')), hex('00000005 80 000002 78'));
    assert.throws(() => encodeFrame(MuxType.Tping, 1 << 24), MuxBadMessageError);
  });

  it('contexts: retries rewritten in place, unknown contexts untouched', () => {
    const contexts = [{ key: Buffer.from('x.unknown'), value: hex('ff') }, { key: Buffer.from(RETRIES_KEY), value: hex('00000000') }];
    writeRetries(contexts, 2);
    assert.equal(readRetries(contexts), 2);
    assert.deepEqual(contexts[0]!.value, hex('ff'));
    assert.equal(contexts.length, 2);
  });
});

describe('mux framing: fragments, limits, malformed input', () => {
  it('reassembles a fragmented Tdispatch (tag MSB set on all but the last), interleaved with another tag', () => {
    const d = new Defragmenter(1 << 20);
    assert.equal(d.accept(MuxType.Tdispatch, 5 | TAG_MSB, hex('0102')), undefined);
    assert.deepEqual(d.accept(MuxType.Tping, 1, Buffer.alloc(0)), { type: MuxType.Tping, tag: 1, body: Buffer.alloc(0) });
    assert.equal(d.accept(MuxType.Tdispatch, 5 | TAG_MSB, hex('0304')), undefined);
    assert.deepEqual(d.accept(MuxType.Tdispatch, 5, hex('05')), { type: MuxType.Tdispatch, tag: 5, body: hex('0102030405') });
    assert.equal(d.pending, 0);
  });

  it('a Tdiscarded of a tag drops its partly received message', () => {
    const d = new Defragmenter(1 << 20);
    d.accept(MuxType.Tdispatch, 7 | TAG_MSB, hex('01'));
    assert.equal(d.pending, 1);
    d.accept(MuxType.BadTdiscarded, 0, encodeTdiscarded(7, 'x'));
    assert.equal(d.pending, 0);
  });

  it('refuses fragments past the message limit, and fragments of control messages', () => {
    const d = new Defragmenter(4);
    d.accept(MuxType.Rdispatch, 9 | TAG_MSB, hex('010203'));
    assert.throws(() => d.accept(MuxType.Rdispatch, 9 | TAG_MSB, hex('0405')), MuxMessageTooLargeError);
    assert.throws(() => new Defragmenter(100).accept(MuxType.Tping, 1 | TAG_MSB, Buffer.alloc(0)), MuxBadMessageError);
  });

  it('bounds partial messages per connection: bytes across tags, and the number of tags', () => {
    // Each message is within its 4 KiB limit; together they pass the 8 KiB budget.
    const d = new Defragmenter(4096);
    d.accept(MuxType.Tdispatch, 2 | TAG_MSB, Buffer.alloc(3000));
    d.accept(MuxType.Tdispatch, 3 | TAG_MSB, Buffer.alloc(3000));
    assert.equal(d.heldBytes, 6000);
    assert.throws(() => d.accept(MuxType.Tdispatch, 4 | TAG_MSB, Buffer.alloc(3000)), MuxPartialBudgetError);
    // Completed and discarded messages give their bytes back.
    const e = new Defragmenter(4096);
    e.accept(MuxType.Tdispatch, 2 | TAG_MSB, Buffer.alloc(3000));
    e.accept(MuxType.Tdispatch, 2, Buffer.alloc(1000));
    e.accept(MuxType.Tdispatch, 3 | TAG_MSB, Buffer.alloc(3000));
    e.accept(MuxType.BadTdiscarded, 0, encodeTdiscarded(3, 'x'));
    assert.equal(e.heldBytes, 0);
    assert.equal(e.pending, 0);
  });

  it('caps the tags with partial messages', () => {
    const d = new Defragmenter(1 << 20, 1 << 30, 4);
    for (let t = 2; t < 6; t++) d.accept(MuxType.Tdispatch, t | TAG_MSB, hex('01'));
    assert.throws(() => d.accept(MuxType.Tdispatch, 6 | TAG_MSB, hex('01')), MuxPartialBudgetError);
  });

  it('cuts frames across arbitrary chunk boundaries; refuses a size under 4 and a frame over the limit before buffering it', () => {
    const bytes = Buffer.concat([encodeFrame(MuxType.Tping, 2), encodeFrame(MuxType.Rerr, 3, Buffer.from('abc')), encodeFrame(MuxType.Tdrain, 1)]);
    for (const step of [1, 2, 5, 11]) assert.deepEqual(frames(bytes, step).map((f) => [f.type, f.tag]), [[65, 2], [-128, 3], [64, 1]]);
    assert.throws(() => frames(hex('00000003 41 0000')), MuxBadMessageError);
    assert.throws(() => frames(hex('7fffffff 02'), 5, 1024), MuxMessageTooLargeError);
  });
});
