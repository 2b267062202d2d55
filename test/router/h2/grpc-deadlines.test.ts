// Issue #17: gRPC deadlines and cancellation through an h2 router: the client's deadline reaches
// the backend (grpc-timeout), an expired call is DEADLINE_EXCEEDED, prx's own timeout is a
// DEADLINE_EXCEEDED status with prx-err, and a cancelled call is cancelled at the backend within
// a second (Linkerd 1's cancellations hung: #1008, #1696).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  echoClient,
  grpcError,
  grpcRouterConfig,
  say,
  startGrpcBackend,
  startH2Router,
  type EchoClient,
  type GrpcBackend,
  type H2RouterUnderTest,
} from './harness.js';

/** Named events the backend reports (a call started, a call was cancelled), with when they happened. */
class Signals {
  readonly at = new Map<string, number>();
  readonly #waiters = new Map<string, () => void>();
  mark(key: string): void {
    this.at.set(key, Date.now());
    this.#waiters.get(key)?.();
  }
  wait(key: string): Promise<void> {
    if (this.at.has(key)) return Promise.resolve();
    return new Promise((r) => this.#waiters.set(key, r));
  }
}
const started = new Signals();
const cancelled = new Signals();

/** Resolves with the time `p` settled, failing after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

describe('gRPC deadlines and cancellation through an h2 router', () => {
  let backend: GrpcBackend;
  let rt: H2RouterUnderTest;
  let client: EchoClient;

  before(async () => {
    // Every method holds its call open until the client (or a deadline) cancels it.
    const hold = (call: grpc.ServerUnaryCall<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>, key: string): void => {
      started.mark(key);
      call.on('cancelled', () => cancelled.mark(key));
    };
    backend = await startGrpcBackend({
      Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>) => hold(call, call.request.toString()),
      Stream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        call.write(Buffer.from('first'));
        call.on('cancelled', () => cancelled.mark(call.request.toString()));
      },
      Chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.once('data', (m: Buffer) => {
          call.write(m);
          hold(call, m.toString());
        });
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

  it('a deadline shorter than the backend: DEADLINE_EXCEEDED at the client; the backend saw the deadline and the cancellation', async () => {
    const start = Date.now();
    const e = await grpcError(say(client, Buffer.from('deadline-1'), { deadline: start + 500 }));
    assert.equal(e.code, grpc.status.DEADLINE_EXCEEDED, e.message);
    const seen = backend.calls.find((c) => c.method === 'Say');
    assert.ok(seen, 'the call reached the backend');
    const deadline = seen.deadline instanceof Date ? seen.deadline.getTime() : Number(seen.deadline);
    // grpc-timeout carries the remaining time: the backend's deadline is the client's, give or take transit.
    assert.ok(Number.isFinite(deadline), `the backend saw no deadline (${String(seen.deadline)})`);
    assert.ok(deadline > start && deadline <= start + 600, `backend deadline ${deadline - start} ms after the call started`);
    await within(cancelled.wait('deadline-1'), 2000, 'the backend sees the expired call cancelled');
  });

  it('a unary call cancelled by the client is cancelled at the backend within a second', async () => {
    const call = client.Say(Buffer.from('cancel-unary'), new grpc.Metadata(), {}, () => {});
    await within(started.wait('cancel-unary'), 3000, 'the call reaches the backend');
    const at = Date.now();
    call.cancel();
    await within(cancelled.wait('cancel-unary'), 1000, 'backend cancellation');
    assert.ok((cancelled.at.get('cancel-unary') ?? Infinity) - at < 1000);
  });

  it('a server stream cancelled after its first message is cancelled at the backend within a second', async () => {
    const call = client.Stream(Buffer.from('cancel-stream'), new grpc.Metadata());
    call.on('error', () => {});
    await new Promise((r) => call.once('data', r));
    call.cancel();
    await within(cancelled.wait('cancel-stream'), 1000, 'backend cancellation');
  });

  it('a bidi stream cancelled mid-conversation is cancelled at the backend within a second', async () => {
    const call = client.Chat(new grpc.Metadata());
    call.on('error', () => {});
    const echoed = new Promise<Buffer>((r) => call.once('data', r));
    call.write(Buffer.from('cancel-bidi'));
    assert.equal((await echoed).toString(), 'cancel-bidi');
    call.cancel();
    await within(cancelled.wait('cancel-bidi'), 1000, 'backend cancellation');
  });
});

describe("prx's own timeout is a gRPC status", () => {
  it('service.totalTimeoutMs shorter than the backend: DEADLINE_EXCEEDED with prx-err, long before the client deadline', async () => {
    const backend = await startGrpcBackend({ Say: () => {} });
    const rt = await startH2Router(grpcRouterConfig(`/$/inet/127.1/${backend.port}`, { service: { totalTimeoutMs: 300 } }));
    const client = echoClient(rt.target);
    try {
      const start = Date.now();
      const e = await grpcError(say(client, Buffer.from('slow'), { deadline: start + 10_000 }));
      assert.equal(e.code, grpc.status.DEADLINE_EXCEEDED, e.message);
      assert.notDeepEqual(e.metadata.get('prx-err'), [], 'prx-err names the proxy as the source');
      assert.ok(Date.now() - start < 5000, 'the proxy timed out, not the client');
    } finally {
      client.close();
      await rt.close();
      await backend.close();
    }
  });
});
