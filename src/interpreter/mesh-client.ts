import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { MESH_METHODS, decodeMessage, encodeMessage } from '../protocol/mesh/messages.js';
import type { MeshChannelOptions, MeshStreamEnd, MeshStreamMethod } from './mesh-watch.js';

// The gRPC side of the `io.prx.mesh` interpreter: one grpc-js channel per resolver address, on
// which watches open server streams. Loaded by a dynamic import on the first watch, so a proxy
// that does not use the mesh interpreter never loads grpc-js or protobufjs.

/**
 * A channel to one resolver address. grpc-js sends HTTP/2 PINGs every `keepalive.timeMs` and
 * drops the connection when one is not answered within `keepalive.timeoutMs`; every stream on it
 * then ends with UNAVAILABLE and its watch reconnects. A peer that goes silent (a black-holed
 * connection, a stalled load balancer) is therefore noticed within one period plus the timeout.
 */
export class MeshChannel {
  readonly target: string;
  readonly #client: grpc.Client;

  constructor(target: string, opts: MeshChannelOptions) {
    this.target = target;
    const options: grpc.ChannelOptions = {
      'grpc.keepalive_time_ms': opts.keepalive.timeMs,
      'grpc.keepalive_timeout_ms': opts.keepalive.timeoutMs,
      'grpc.keepalive_permit_without_calls': 1,
      'grpc.initial_reconnect_backoff_ms': opts.reconnect.initialMs,
      'grpc.max_reconnect_backoff_ms': opts.reconnect.maxMs,
      'grpc.max_receive_message_length': opts.maxMessageBytes,
      // One connection per resolver address, never shared with other clients in the process.
      'grpc.use_local_subchannel_pool': 1,
    };
    let creds = grpc.credentials.createInsecure();
    const tls = opts.tls;
    if (tls !== undefined) {
      options['grpc.ssl_target_name_override'] = tls.commonName;
      creds = grpc.credentials.createSsl(tls.ca ?? null, null, null, {
        checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(tls.commonName, cert),
      });
    }
    this.#client = new grpc.Client(target, creds, options);
  }

  /**
   * Opens `method` with `request`; each response message is passed to `onMessage` with its bytes
   * (a throw from it cancels the call). Resolves with how the stream ended; `signal` cancels it.
   */
  stream(
    method: MeshStreamMethod,
    request: object,
    onMessage: (message: unknown, bytes: Buffer) => void,
    signal: AbortSignal,
  ): Promise<MeshStreamEnd> {
    const m = MESH_METHODS[method];
    return new Promise((resolve) => {
      const call = this.#client.makeServerStreamRequest<object, Buffer>(
        m.path,
        (v) => encodeMessage(m.request, v),
        (b) => b,
        request,
      );
      let ended: MeshStreamEnd | undefined;
      const onAbort = (): void => call.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
      call.on('data', (bytes: Buffer) => {
        if (ended !== undefined) return;
        try {
          onMessage(decodeMessage(m.response, bytes), bytes);
        } catch (e) {
          ended = { code: grpc.status.INTERNAL, details: `a malformed message from the resolver: ${e instanceof Error ? e.message : String(e)}`, verdict: true };
          call.cancel();
        }
      });
      // 'error' repeats what 'status' reports; it must have a listener or it is thrown.
      call.on('error', () => {});
      call.on('status', (s: grpc.StatusObject) => {
        signal.removeEventListener('abort', onAbort);
        resolve(ended ?? { code: s.code, details: s.details, verdict: isResolverVerdict(s.code) });
      });
    });
  }

  close(): void {
    this.#client.close();
  }
}

/** Statuses that are the resolver's answer about the request, not a lost link. */
const VERDICTS: ReadonlySet<number> = new Set([
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.OUT_OF_RANGE,
]);

function isResolverVerdict(code: number): boolean {
  return VERDICTS.has(code);
}
