/**
 * A gRPC channel to a mixer (`istio.mixer.v1.Mixer`): Check and Report, each a call of its own
 * carrying one request, as Linkerd 1 used the streaming methods. Reached by a dynamic import, so a
 * proxy without the mesh-control authorizer or logger never loads grpc-js or protobufjs.
 */
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { MIXER_DESCRIPTOR } from './mixer-descriptor.js';
import { attributesMessage, type AttributeBag } from './attributes.js';

const root = protobuf.Root.fromJSON(MIXER_DESCRIPTOR as unknown as protobuf.INamespace);
const CheckRequest = root.lookupType('istio.mixer.v1.CheckRequest');
const CheckResponse = root.lookupType('istio.mixer.v1.CheckResponse');
const ReportRequest = root.lookupType('istio.mixer.v1.ReportRequest');

/** A check that got no answer is UNKNOWN, so the request is refused (Linkerd 1 failed closed). */
const UNKNOWN = 2;

/** A check's outcome: the mixer's status (gRPC code and message); `answered` false when it gave none. */
export interface CheckStatus {
  readonly code: number;
  readonly message: string;
  readonly answered: boolean;
}

function encoder(type: protobuf.Type): (value: object) => Buffer {
  return (value) => {
    const bytes = type.encode(type.fromObject(value)).finish();
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

export class MixerChannel {
  readonly target: string;
  readonly #client: grpc.Client;
  #index = 0;

  constructor(host: string, port: number) {
    this.target = `${host}:${port}`;
    this.#client = new grpc.Client(this.target, grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      // A mixer back from an outage is used again within seconds (grpc-js would back off to 2 minutes).
      'grpc.initial_reconnect_backoff_ms': 500,
      'grpc.max_reconnect_backoff_ms': 5000,
    });
  }

  /** Asks the mixer whether a request may go on; never rejects (no answer within `timeoutMs` is UNKNOWN). */
  check(bag: AttributeBag, timeoutMs: number): Promise<CheckStatus> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (s: CheckStatus): void => {
        if (settled) return;
        settled = true;
        resolve(s);
      };
      const call = this.#client.makeBidiStreamRequest<object, Buffer>(
        '/istio.mixer.v1.Mixer/Check',
        encoder(CheckRequest),
        (b) => b,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
      );
      call.on('data', (bytes: Buffer) => {
        try {
          const rsp = CheckResponse.toObject(CheckResponse.decode(bytes)) as { result?: { code?: number; message?: string } | null };
          const result = rsp.result;
          settle(
            result === undefined || result === null
              ? { code: UNKNOWN, message: 'the check response has no result', answered: false }
              : { code: result.code ?? 0, message: result.message ?? '', answered: true },
          );
        } catch (e) {
          settle({ code: UNKNOWN, message: `a malformed check response: ${e instanceof Error ? e.message : String(e)}`, answered: false });
        }
      });
      call.on('error', () => {});
      call.on('status', (s: grpc.StatusObject) => {
        settle({ code: UNKNOWN, message: `no answer from the mixer at ${this.target}: ${grpc.status[s.code] ?? s.code} ${s.details}`, answered: false });
      });
      // One request, then half-close: a mixer answering per message and one answering at the end both reply.
      call.write({ request_index: this.#index++, attribute_update: attributesMessage(bag) });
      call.end();
    });
  }

  /** Sends a report; resolves when the mixer answered or the call failed (with its error text). */
  report(bag: AttributeBag, timeoutMs: number): Promise<string | undefined> {
    return new Promise((resolve) => {
      const call = this.#client.makeBidiStreamRequest<object, Buffer>('/istio.mixer.v1.Mixer/Report', encoder(ReportRequest), (b) => b, new grpc.Metadata(), {
        deadline: Date.now() + timeoutMs,
      });
      call.on('data', () => call.end());
      call.on('error', () => {});
      call.on('status', (s: grpc.StatusObject) => resolve(s.code === grpc.status.OK ? undefined : `${grpc.status[s.code] ?? s.code} ${s.details}`));
      call.write({ request_index: this.#index++, attribute_update: attributesMessage(bag) });
      call.end();
    });
  }

  close(): void {
    this.#client.close();
  }
}
