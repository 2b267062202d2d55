// Issue #17: real @grpc/grpc-js clients and servers through an h2 router: the four call shapes,
// metadata both ways, and 8 MiB messages both ways (larger than any flow-control window).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  echoClient,
  grpcRouterConfig,
  say,
  startGrpcBackend,
  startH2Router,
  type EchoClient,
  type GrpcBackend,
  type H2RouterUnderTest,
} from './harness.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('gRPC calls through an h2 router', () => {
  let backend: GrpcBackend;
  let rt: H2RouterUnderTest;
  let client: EchoClient;

  before(async () => {
    backend = await startGrpcBackend({
      Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const echo = call.metadata.get('x-echo');
        if (echo.length > 0) {
          const md = new grpc.Metadata();
          md.set('x-echoed', String(echo[0]));
          call.sendMetadata(md);
        }
        cb(null, Buffer.concat([Buffer.from('echo:'), call.request]));
      },
      // The request names how many messages to send; each is `<i>`.
      Stream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        const n = Number(call.request.toString());
        for (let i = 0; i < n; i++) call.write(Buffer.from(String(i)));
        call.end();
      },
      // Answers with the message count and the total byte count.
      Collect: (call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        let n = 0;
        let bytes = 0;
        call.on('data', (m: Buffer) => {
          n++;
          bytes += m.length;
        });
        call.on('end', () => cb(null, Buffer.from(`${n} ${bytes}`)));
      },
      // Echoes every message as it arrives (the client waits for each echo before the next message).
      Chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.on('data', (m: Buffer) => call.write(m));
        call.on('end', () => call.end());
      },
    });
    rt = await startH2Router(grpcRouterConfig(`/$/inet/127.1/${backend.port}`));
    client = echoClient(rt.target);
  });
  after(async () => {
    client.close();
    await rt.close();
    await backend.close();
  });

  it('unary: the request reaches the backend and its response comes back, metadata both ways', async () => {
    const md = new grpc.Metadata();
    md.set('x-echo', 'hello-md');
    const got = await new Promise<{ res: Buffer; head: grpc.Metadata }>((resolve, reject) => {
      let head = new grpc.Metadata();
      const call = client.Say(Buffer.from('ping'), md, {}, (err, res) => (err ? reject(err) : resolve({ res: res ?? Buffer.alloc(0), head })));
      call.on('metadata', (m) => (head = m));
    });
    assert.equal(got.res.toString(), 'echo:ping');
    assert.deepEqual(got.head.get('x-echoed'), ['hello-md']);
    const seen = backend.calls.at(-1);
    assert.equal(seen?.method, 'Say');
    assert.deepEqual(seen?.metadata.get('x-echo'), ['hello-md']);
  });

  it('unary: many concurrent calls on one channel all complete', async () => {
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => say(client, Buffer.from(`m${i}`))));
    assert.deepEqual(
      replies.map((r) => r.toString()),
      Array.from({ length: 50 }, (_, i) => `echo:m${i}`),
    );
  });

  it('server-streaming: every message arrives in order, then OK', async () => {
    const call = client.Stream(Buffer.from('200'), new grpc.Metadata());
    const got: string[] = [];
    call.on('data', (m: Buffer) => got.push(m.toString()));
    const status = await new Promise<grpc.StatusObject>((resolve, reject) => {
      call.on('status', resolve);
      call.on('error', (e: grpc.ServiceError) => (e.code === grpc.status.OK ? undefined : reject(e)));
    });
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(
      got,
      Array.from({ length: 200 }, (_, i) => String(i)),
    );
  });

  it('client-streaming: every message reaches the backend before its single answer', async () => {
    const res = await new Promise<Buffer>((resolve, reject) => {
      const call = client.Collect(new grpc.Metadata(), {}, (err, r) => (err ? reject(err) : resolve(r ?? Buffer.alloc(0))));
      for (let i = 0; i < 100; i++) call.write(Buffer.alloc(1000, i));
      call.end();
    });
    assert.equal(res.toString(), '100 100000');
  });

  it('bidi: messages ping-pong one at a time (each echo arrives before the next message is sent)', async () => {
    const call = client.Chat(new grpc.Metadata());
    const replies: string[] = [];
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('error', () => {});
    for (let i = 0; i < 20; i++) {
      const reply = new Promise<Buffer>((resolve) => call.once('data', resolve));
      call.write(Buffer.from(`turn ${i}`));
      replies.push((await reply).toString());
    }
    call.end();
    assert.equal((await status).code, grpc.status.OK);
    assert.deepEqual(
      replies,
      Array.from({ length: 20 }, (_, i) => `turn ${i}`),
    );
  });

  it('8 MiB messages pass both ways (unary echo: 8 MiB up, 8 MiB + 5 bytes down)', async () => {
    const big = randomBytes(8 * 1024 * 1024);
    const res = await say(client, big, { deadline: Date.now() + 60_000 });
    assert.equal(res.length, big.length + 5);
    assert.equal(sha(res.subarray(5)), sha(big));
  });

  it('8 MiB messages pass both ways on a bidi stream, twice in a row', async () => {
    const call = client.Chat(new grpc.Metadata(), { deadline: Date.now() + 60_000 });
    call.on('error', () => {});
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    for (let i = 0; i < 2; i++) {
      const big = randomBytes(8 * 1024 * 1024);
      const reply = new Promise<Buffer>((resolve) => call.once('data', resolve));
      call.write(big);
      assert.equal(sha(await reply), sha(big), `message ${i}`);
    }
    call.end();
    assert.equal((await status).code, grpc.status.OK);
  });
});
