// Issue #17 item 7: an h2 router's stats as for HTTP (server, service, client scopes), plus gRPC
// statuses under grpc/<code>, open streams and resets by reason.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startRawResetBackend, type RawResetBackend } from './frames.js';
import {
  echoClient,
  eventually,
  grpcError,
  h2Connect,
  h2Request,
  say,
  startGrpcBackend,
  startH2Router,
  type EchoClient,
  type GrpcBackend,
  type H2RouterUnderTest,
} from './harness.js';

describe('h2 router stats', () => {
  let backend: GrpcBackend;
  let resetting: RawResetBackend;
  let rt: H2RouterUnderTest;
  let client: EchoClient;
  let server: string;
  let service: string;
  let grpcClient: string;
  let resetClient: string;

  before(async () => {
    backend = await startGrpcBackend({
      Say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        if (call.request.toString() === 'missing') cb({ code: grpc.status.NOT_FOUND, details: 'no' });
        else cb(null, call.request);
      },
      Chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.on('data', (m: Buffer) => call.write(m));
        call.on('end', () => call.end());
      },
    });
    resetting = await startRawResetBackend(2);
    rt = await startH2Router({
      dtab: `/svc/test.Echo => /$/inet/127.0.0.1/${backend.port}; /svc/rst => /$/inet/127.0.0.1/${resetting.port}`,
      identifier: { kind: 'io.prx.header.path', segments: 1 },
    });
    client = echoClient(rt.target);
    server = `rt/h2/server/127.0.0.1/${rt.port}`;
    service = 'rt/h2/service/svc/test.Echo';
    grpcClient = `rt/h2/client/$/inet/127.0.0.1/${backend.port}`;
    resetClient = `rt/h2/client/$/inet/127.0.0.1/${resetting.port}`;
  });
  after(async () => {
    client.close();
    await rt.close();
    await resetting.close();
    await backend.close();
  });

  it('gRPC statuses are counted under grpc/<code> in the server and client scopes', async () => {
    await say(client, Buffer.from('a'));
    await say(client, Buffer.from('b'));
    assert.equal((await grpcError(say(client, Buffer.from('missing')))).code, grpc.status.NOT_FOUND);
    await eventually(() => rt.metric(`${grpcClient}/grpc/5`) === 1 && rt.metric(`${server}/grpc/5`) === 1, 3000, 'grpc counters');
    for (const s of [server, grpcClient]) {
      assert.equal(rt.metric(`${s}/grpc/0`), 2, `${s}/grpc/0`);
      assert.equal(rt.metric(`${s}/grpc/5`), 1, `${s}/grpc/5`);
      assert.equal(rt.metric(`${s}/requests`), 3, `${s}/requests`);
      assert.equal(rt.metric(`${s}/status/200`), 3, `${s}/status/200`);
    }
    assert.equal(rt.metric(`${service}/requests`), 3);
  });

  it('gRPC statuses are counted under grpc/<code> in the service scope too', () => {
    // Counted by the test above: two OK, one NOT_FOUND.
    assert.equal(rt.metric(`${service}/grpc/0`), 2);
    assert.equal(rt.metric(`${service}/grpc/5`), 1);
  });

  it('the streams gauge counts the server’s open streams', async () => {
    const call = client.Chat(new grpc.Metadata());
    call.on('error', () => {});
    const echoed = new Promise<Buffer>((r) => call.once('data', r));
    call.write(Buffer.from('open'));
    await echoed;
    assert.equal(rt.metric(`${server}/streams`), 1);
    const status = new Promise<grpc.StatusObject>((r) => call.on('status', r));
    call.end();
    assert.equal((await status).code, grpc.status.OK);
    await eventually(() => rt.metric(`${server}/streams`) === 0, 3000, 'the stream gauge back to 0');
  });

  it('resets are counted by reason: the upstream’s on the client, the one sent downstream on the server', async () => {
    const s = h2Connect(rt.port);
    try {
      const r = await h2Request(s, { ':path': '/rst/x', ':authority': 'web' }).done;
      assert.equal(r.rstCode, 2);
    } finally {
      s.close();
    }
    await eventually(() => rt.metric(`${server}/resets/INTERNAL_ERROR`) === 1, 3000, 'server resets/INTERNAL_ERROR');
    assert.equal(rt.metric(`${resetClient}/resets/INTERNAL_ERROR`), 1);
    assert.equal(rt.metric(`${server}/failures`), 1);
  });
});
