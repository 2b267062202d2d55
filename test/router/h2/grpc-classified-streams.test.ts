// Streams under a gRPC classifier: the router reads a response ahead (up to the response buffer
// and classificationTimeoutMs) to learn its grpc-status before deciding a retry. A stream that
// outlives that window must then flow on: found by the 30-minute soak, where a bidi stream stopped
// after the messages read ahead.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { echoClient, grpcRouterConfig, startGrpcBackend, startH2Router, type EchoClient, type GrpcBackend, type H2RouterUnderTest } from './harness.js';

describe('gRPC streams under a gRPC classifier flow past the classification window', () => {
  let backend: GrpcBackend;
  let rt: H2RouterUnderTest;
  let client: EchoClient;

  before(async () => {
    backend = await startGrpcBackend({
      Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request),
      // One message every 25 ms: the stream lasts well past the 50 ms window.
      Stream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        const n = Number(call.request.toString());
        let i = 0;
        const timer = setInterval(() => {
          if (call.cancelled) return void clearInterval(timer);
          call.write(Buffer.from(String(i++)));
          if (i === n) {
            clearInterval(timer);
            call.end();
          }
        }, 25);
      },
      Collect: (_call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
      Chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.on('data', (m: Buffer) => call.write(m));
        call.on('end', () => call.end());
      },
    });
    rt = await startH2Router(
      grpcRouterConfig(`/$/inet/127.1/${backend.port}`, { service: { responseClassifier: { kind: 'io.prx.h2.grpc.default' }, classificationTimeoutMs: 50 } }),
    );
    client = echoClient(rt.target);
  });

  after(async () => {
    client.close();
    await rt.close();
    await backend.close();
  });

  it('a bidi stream keeps echoing after the window (turns 20 ms apart)', async () => {
    const call = client.Chat(new grpc.Metadata(), { deadline: Date.now() + 5_000 });
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('error', () => {});
    const replies: string[] = [];
    for (let i = 0; i < 15; i++) {
      // An echo, or the call's end (the deadline) if the stream stalled.
      const reply = Promise.race([new Promise<Buffer>((resolve) => call.once('data', resolve)), status.then((st) => Promise.reject(new Error(`call ended at turn ${i}: ${st.details}`)))]);
      call.write(Buffer.from(`turn ${i}`));
      replies.push((await reply).toString());
      await sleep(20);
    }
    call.end();
    assert.equal((await status).code, grpc.status.OK);
    assert.deepEqual(replies, Array.from({ length: 15 }, (_, i) => `turn ${i}`));
  });

  it('a server stream delivers every message after the window, then OK', async () => {
    const call = client.Stream(Buffer.from('12'), new grpc.Metadata(), { deadline: Date.now() + 5_000 });
    const got: string[] = [];
    call.on('data', (m: Buffer) => got.push(m.toString()));
    const status = await new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(got, Array.from({ length: 12 }, (_, i) => String(i)));
  });
});
