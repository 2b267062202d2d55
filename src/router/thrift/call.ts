import { Dentry, Dtab, readNameTree, readPrefix, type Path } from '../../naming/index.js';
import { errorMessage } from '../../core/errors.js';
import { MaxConcurrentRequestsError } from '../../protocol/http/headers/proxy-errors.js';
import type { RequestHeaderSource, ThriftRequest } from '../../protocol/thrift/client-transport.js';
import { MessageType, withSeqid, type MessageHeader, type ThriftProtocolName } from '../../protocol/thrift/message.js';
import type { RequestHeader } from '../../protocol/thrift/ttwitter.js';
import { randomSpanId, TraceId } from '../../service/tracing.js';
import type { Lease } from '../core/cache.js';
import { AttemptHandle } from '../core/transport.js';
import { failureReply } from './respond.js';
import type { ThriftPathService, ThriftRouterHost } from './types.js';

/** What a call needs of the connection it came on. */
export interface CallConnection {
  readonly router: ThriftRouterHost;
  readonly protocol: ThriftProtocolName;
  /** Whether incoming TTwitter delegations and contexts are ignored (the server's clearContext). */
  readonly clearContext: boolean;
  /** The call has its answer (or, oneway, is done). */
  done(call: ThriftCall): void;
}

/**
 * One downstream call through the router: named from its method (and TTwitter `dest`), its
 * delegations made the request's local dtab, routed through the path cache; the upstream reply
 * (or the failure as a TApplicationException) gets the downstream's seqid back.
 */
export class ThriftCall implements RequestHeaderSource {
  readonly started = performance.now();
  readonly handle = new AttemptHandle();
  readonly header: MessageHeader;
  readonly #conn: CallConnection;
  readonly #message: Buffer;
  readonly #incoming: RequestHeader | undefined;
  /** The bytes to send back (the reply with the downstream seqid); null: nothing (oneway); undefined: not yet. */
  out: Buffer | null | undefined;
  success = false;
  dst: Path | undefined;
  localDtab: Dtab | undefined;
  #lease: Lease<ThriftPathService> | undefined;

  constructor(conn: CallConnection, message: Buffer, header: MessageHeader, incoming: RequestHeader | undefined) {
    this.#conn = conn;
    this.#message = message;
    this.header = header;
    this.#incoming = incoming;
  }

  /** The call's size as read (what the connection holds for it until answered). */
  get requestBytes(): number {
    return this.#message.length;
  }

  /** The server span of a call: the caller's span from its TTwitter header, else a new root. */
  traceId(): TraceId {
    const h = this.#incoming;
    if (h?.traceId === undefined || h.spanId === undefined) return TraceId.root();
    const u = (v: bigint): bigint => BigInt.asUintN(64, v);
    return new TraceId({
      traceId: u(h.traceId),
      spanId: u(h.spanId),
      parentId: u(h.parentSpanId ?? h.spanId),
      sampled: h.sampled,
      flags: h.flags === undefined ? undefined : u(h.flags),
      traceIdHigh: h.traceIdHigh === undefined ? undefined : u(h.traceIdHigh),
    });
  }

  requestHeader(): RequestHeader {
    const incoming = this.#conn.clearContext ? undefined : this.#incoming;
    return outgoingHeader(incoming, this.#incoming?.dest, this.localDtab ?? Dtab.empty);
  }

  get oneway(): boolean {
    return this.header.type === MessageType.ONEWAY;
  }

  /** The client id the call was sent with, if served. */
  clientId: string | undefined;

  /** Routes the call; never throws (failures become the answer). */
  async serve(overloaded: boolean): Promise<void> {
    const router = this.#conn.router;
    const h = this.header;
    const seqid = h.seqid;
    let svc: ThriftPathService | undefined;
    try {
      if (overloaded) throw new MaxConcurrentRequestsError();
      const incoming = this.#conn.clearContext ? undefined : this.#incoming;
      const localDtab = (this.localDtab = delegationsDtab(incoming?.delegations));
      const dst = (this.dst = router.identifier.identify(h.name, this.#incoming?.dest));
      const lease = (this.#lease = router.pathService(dst, localDtab));
      svc = lease.value;
      const req: ThriftRequest = {
        message: this.#message,
        header: h,
        oneway: this.oneway,
        context: this,
        encodedHeader: undefined,
      };
      if (this.handle.cancelled !== undefined) throw this.handle.cancelled;
      const served = await svc.serve(req, this.handle, Date.now() + router.bindingTimeoutMs, this.started);
      const ex = served.attempt.exchange;
      this.success = served.responseClass === 'success';
      this.clientId = served.client.id;
      const reply = ex.reply;
      const rh = ex.replyHeader;
      this.out = reply === undefined || rh === undefined || this.oneway ? null : withSeqid(this.#conn.protocol, reply, rh, seqid);
      svc.record(this.success, performance.now() - this.started);
    } catch (err) {
      this.success = false;
      router.log.debug({ err: errorMessage(err), dst: this.dst?.show, method: h.name }, 'thrift call failed');
      svc?.record(false, performance.now() - this.started, err);
      this.out = this.oneway ? null : failureReply(this.#conn.protocol, h.name, seqid, err, { dst: this.dst?.show, baseDtab: router.baseDtab, localDtab: this.localDtab });
    } finally {
      this.#lease?.release();
      this.#lease = undefined;
    }
    this.#conn.done(this);
  }
}

/** TTwitter delegations as a dtab (Finagle sends its Dtab.local this way); throws on a bad dentry. */
function delegationsDtab(d: readonly (readonly [string, string])[] | undefined): Dtab {
  if (d === undefined || d.length === 0) return Dtab.empty;
  return new Dtab(d.map(([src, dst]) => new Dentry(readPrefix(src), readNameTree(dst))));
}

/**
 * The RequestHeader sent to an upgraded upstream: the call's `dest` and local dtab (so an override
 * travels to the next hop), the caller's trace as the parent of a new span, its client id and
 * broadcast contexts as they came.
 */
export function outgoingHeader(incoming: RequestHeader | undefined, dest: string | undefined, localDtab: Dtab): RequestHeader {
  const out: RequestHeader = { spanId: randomSpanId() };
  if (incoming?.traceId !== undefined) {
    out.traceId = incoming.traceId;
    if (incoming.spanId !== undefined) out.parentSpanId = incoming.spanId;
    if (incoming.traceIdHigh !== undefined) out.traceIdHigh = incoming.traceIdHigh;
  } else out.traceId = out.spanId as bigint;
  if (incoming?.sampled !== undefined) out.sampled = incoming.sampled;
  if (incoming?.flags !== undefined) out.flags = incoming.flags;
  if (incoming?.clientId !== undefined) out.clientId = incoming.clientId;
  if (incoming?.contexts !== undefined) out.contexts = incoming.contexts;
  if (dest !== undefined) out.dest = dest;
  if (localDtab.size > 0) out.delegations = localDtab.dentries.map((e) => [e.prefix.show, showTree(e)] as const);
  return out;
}

function showTree(e: Dentry): string {
  const s = e.show;
  return s.slice(s.indexOf('=>') + 2);
}
