// prx's own HTTP/2 server session against @grpc/grpc-js: a unary call answered with a
// length-prefixed message and `grpc-status: 0` trailers, and an error as a trailers-only response.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, describe, it } from 'node:test';
import type { H2Fields, H2ServerStream } from '../../src/protocol/h2/wire/server-stream.js';
import { readBody, startServer, type TestServer } from './h2-server-harness.js';

/** A gRPC message: compressed flag 0, 4-byte length, the bytes. */
function grpcFrame(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** Answers /test.Echo/Say with the request message reversed; /test.Echo/Fail with NOT_FOUND, trailers-only. */
function handle(stream: H2ServerStream, headers: H2Fields): void {
  void readBody(stream).then(({ body }) => {
    if (headers[':path'] === '/test.Echo/Fail') {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'no such thing' }, { endStream: true });
      return;
    }
    const message = body.subarray(5, 5 + body.readUInt32BE(1));
    stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-seen-te': String(headers['te']) }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': '' }));
    stream.end(grpcFrame(Buffer.from([...message].reverse())));
  });
}

describe('own h2 server session with a grpc-js client', () => {
  let server: TestServer;
  let client: grpc.Client;
  after(async () => {
    client?.close();
    await server?.close();
  });

  function call(path: string, message: Buffer): Promise<{ err: grpc.ServiceError | null; value: Buffer | undefined; metadata: grpc.Metadata | undefined }> {
    return new Promise((resolve) => {
      let metadata: grpc.Metadata | undefined;
      const c = client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, message, (err, value) => resolve({ err, value, metadata }));
      c.on('metadata', (m: grpc.Metadata) => (metadata = m));
    });
  }

  it('answers a unary call (message, grpc-status 0 in trailers) and an error status (trailers-only)', async () => {
    server = await startServer(handle);
    client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    const ok = await call('/test.Echo/Say', Buffer.from('hello'));
    assert.equal(ok.err, null);
    assert.equal(ok.value?.toString(), 'olleh');
    assert.deepEqual(ok.metadata?.get('x-seen-te'), ['trailers']);
    const failed = await call('/test.Echo/Fail', Buffer.from('x'));
    assert.equal(failed.err?.code, grpc.status.NOT_FOUND);
    assert.equal(failed.err?.details, 'no such thing');
    // Both calls on one session.
    assert.equal(server.sessions.length, 1);
    assert.equal(server.streams.length, 2);
    await new Promise((r) => setImmediate(r));
    for (const s of server.streams) assert.ok(s.closed && s.writableFinished && s.rstCode === undefined, `stream ${s.id} closed cleanly`);
  });
});
