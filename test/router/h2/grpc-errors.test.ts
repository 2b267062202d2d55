// Issue #17: gRPC errors through an h2 router: the backend's statuses pass unchanged (code,
// details, trailer metadata); prx's own failures are real gRPC statuses (UNAVAILABLE with a useful
// message and prx-err) rather than a 502 or a bare reset; UNAVAILABLE is retried under the gRPC
// classifier and only then.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { tempFsNamer, type TempFsNamer } from '../support.js';
import {
  echoClient,
  freePort,
  grpcError,
  grpcRouterConfig,
  say,
  startGrpcBackend,
  startH2Router,
  type EchoClient,
  type GrpcBackend,
  type H2RouterUnderTest,
} from './harness.js';

const DEADLINE = 10_000;

/** A fresh router for `cfg` and a client through it; both closed by the returned function. */
async function through(cfg: Record<string, unknown>, namers?: TempFsNamer['mounted'][]): Promise<{ rt: H2RouterUnderTest; client: EchoClient; close(): Promise<void> }> {
  const rt = await startH2Router(cfg, namers ? { namers } : {});
  const client = echoClient(rt.target);
  return {
    rt,
    client,
    close: async () => {
      client.close();
      await rt.close();
    },
  };
}

const prxErr = (e: grpc.ServiceError): string => String(e.metadata?.get('prx-err')[0] ?? '');

describe('gRPC statuses from the backend pass through unchanged', () => {
  let backend: GrpcBackend;
  let p: Awaited<ReturnType<typeof through>>;
  const codes = [
    grpc.status.CANCELLED,
    grpc.status.INVALID_ARGUMENT,
    grpc.status.NOT_FOUND,
    grpc.status.PERMISSION_DENIED,
    grpc.status.RESOURCE_EXHAUSTED,
    grpc.status.FAILED_PRECONDITION,
    grpc.status.UNIMPLEMENTED,
    grpc.status.INTERNAL,
    grpc.status.UNAVAILABLE,
    grpc.status.DATA_LOSS,
    grpc.status.UNAUTHENTICATED,
  ];

  before(async () => {
    backend = await startGrpcBackend({
      // The request names the status to fail with.
      Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const code = Number(call.request.toString());
        const metadata = new grpc.Metadata();
        metadata.set('x-why', `because ${code}`);
        metadata.set('x-detail-bin', Buffer.from([0, 1, 2, 255]));
        cb({ code, details: `failed with ${code}: ünïcödé 100% ✓`, metadata });
      },
      // Three messages, then a failure in the trailers.
      Stream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        for (let i = 0; i < 3; i++) call.write(Buffer.from(`m${i}`));
        const metadata = new grpc.Metadata();
        metadata.set('x-after', 'three');
        call.emit('error', { code: grpc.status.ABORTED, details: 'gave up after three', metadata });
      },
    });
    p = await through(grpcRouterConfig(`/$/inet/127.1/${backend.port}`));
  });
  after(async () => {
    await p.close();
    await backend.close();
  });

  for (const code of codes) {
    it(`${grpc.status[code]} (${code}): code, details and trailer metadata`, async () => {
      const e = await grpcError(say(p.client, Buffer.from(String(code)), { deadline: Date.now() + DEADLINE }));
      assert.equal(e.code, code);
      assert.equal(e.details, `failed with ${code}: ünïcödé 100% ✓`);
      assert.deepEqual(e.metadata.get('x-why'), [`because ${code}`]);
      assert.deepEqual(e.metadata.get('x-detail-bin'), [Buffer.from([0, 1, 2, 255])]);
      assert.deepEqual(e.metadata.get('prx-err'), [], 'a backend status is not a prx error');
    });
  }

  it('a failure after streamed messages: the messages, then the status from the trailers', async () => {
    const call = p.client.Stream(Buffer.from('x'), new grpc.Metadata(), { deadline: Date.now() + DEADLINE });
    const got: string[] = [];
    call.on('data', (m: Buffer) => got.push(m.toString()));
    const e = await new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    assert.deepEqual(got, ['m0', 'm1', 'm2']);
    assert.equal(e.code, grpc.status.ABORTED);
    assert.equal(e.details, 'gave up after three');
    assert.deepEqual(e.metadata.get('x-after'), ['three']);
  });
});

describe('prx failures are gRPC statuses', () => {
  let fs: TempFsNamer;
  before(() => {
    fs = tempFsNamer({ 'test.Echo': '' });
  });
  after(() => fs.close());

  async function unavailable(cfg: Record<string, unknown>, namers?: TempFsNamer['mounted'][]): Promise<grpc.ServiceError> {
    const p = await through(cfg, namers);
    try {
      return await grpcError(say(p.client, Buffer.from('hi'), { deadline: Date.now() + DEADLINE }));
    } finally {
      await p.close();
    }
  }

  it('no route (the dtab sends the name to /$/nil): UNAVAILABLE naming the service, with prx-err', async () => {
    const e = await unavailable(grpcRouterConfig('/$/nil'));
    assert.equal(e.code, grpc.status.UNAVAILABLE, e.message);
    assert.match(e.details, /test\.Echo/);
    assert.notEqual(prxErr(e), '');
  });

  it('a name bound to no endpoints: UNAVAILABLE with prx-err', async () => {
    const e = await unavailable({ ...grpcRouterConfig('/#/io.prx.fs/test.Echo'), bindingTimeoutMs: 2000 }, [fs.mounted]);
    assert.equal(e.code, grpc.status.UNAVAILABLE, e.message);
    assert.notEqual(e.details, '');
    assert.notEqual(prxErr(e), '');
  });

  it('the backend is down: UNAVAILABLE naming the address, with prx-err', async () => {
    const port = await freePort();
    const e = await unavailable(grpcRouterConfig(`/$/inet/127.1/${port}`));
    assert.equal(e.code, grpc.status.UNAVAILABLE, e.message);
    assert.match(e.details, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.notEqual(prxErr(e), '');
  });

  it('an unidentified gRPC request (no path segment to route by): UNAVAILABLE with prx-err', async () => {
    // A header identifier on a header the client never sends.
    const e = await unavailable({ dtab: '/svc/x => /$/nil', identifier: { kind: 'io.prx.header.token', header: 'x-route-to' } });
    assert.equal(e.code, grpc.status.UNAVAILABLE, e.message);
    assert.notEqual(prxErr(e), '');
  });
});

describe('UNAVAILABLE is retried under io.prx.h2.grpc.default', () => {
  /** A backend whose first Say call fails with UNAVAILABLE and later ones succeed. */
  async function flaky(): Promise<GrpcBackend> {
    let n = 0;
    return startGrpcBackend({
      Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        n++;
        if (n === 1) cb({ code: grpc.status.UNAVAILABLE, details: 'warming up' });
        else cb(null, Buffer.concat([Buffer.from('ok:'), call.request]));
      },
    });
  }

  it('the client sees success and the backend saw two calls', async () => {
    const backend = await flaky();
    const p = await through(grpcRouterConfig(`/$/inet/127.1/${backend.port}`, { service: { responseClassifier: { kind: 'io.prx.h2.grpc.default' } } }));
    try {
      const res = await say(p.client, Buffer.from('again'), { deadline: Date.now() + DEADLINE });
      assert.equal(res.toString(), 'ok:again');
      assert.equal(backend.calls.length, 2);
    } finally {
      await p.close();
      await backend.close();
    }
  });

  it('under the default (HTTP status) classifier the UNAVAILABLE reaches the client, after one call', async () => {
    const backend = await flaky();
    const p = await through(grpcRouterConfig(`/$/inet/127.1/${backend.port}`));
    try {
      const e = await grpcError(say(p.client, Buffer.from('again'), { deadline: Date.now() + DEADLINE }));
      assert.equal(e.code, grpc.status.UNAVAILABLE);
      assert.equal(e.details, 'warming up');
      assert.equal(backend.calls.length, 1);
    } finally {
      await p.close();
      await backend.close();
    }
  });
});
