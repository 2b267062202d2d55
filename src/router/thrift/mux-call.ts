import { errorMessage } from '../../core/errors.js';
import { Dtab, readDtab, type Path } from '../../naming/index.js';
import { epochNanos, MAX_TIMER_MS, MuxFailureFlag, muxFailureContexts, readDeadline, readTraceContext } from '../../protocol/mux/contexts.js';
import { ReplyStatus, type MuxContextEntry } from '../../protocol/mux/messages.js';
import type { MuxInbound, MuxServerSession } from '../../protocol/mux/server-session.js';
import type { RequestHeaderSource, ThriftRequest } from '../../protocol/thrift/client-transport.js';
import { MessageType, readMessageHeader, withSeqid, type MessageHeader, type ThriftProtocolName } from '../../protocol/thrift/message.js';
import type { RequestHeader } from '../../protocol/thrift/ttwitter.js';
import { FailureFlag, RequestCancelledError, RouterFailure } from '../../service/failures.js';
import type { Lease } from '../core/cache.js';
import { AttemptHandle } from '../core/transport.js';
import { outgoingHeader } from './call.js';
import { ThriftMuxBadRequestError, ThriftMuxDeadlineExceededError, ThriftMuxOverloadedError } from './errors.js';
import { failureReply } from './respond.js';
import type { ThriftPathService, ThriftRouterHost } from './types.js';

/** What a thriftmux call needs of its server. */
export interface ThriftMuxCallServer {
  readonly router: ThriftRouterHost;
  readonly protocol: ThriftProtocolName;
  /** The server's `clearContext`: the caller's contexts, dtab and destination are dropped. */
  readonly clearContext: boolean;
  /** The call is over (once): server stats. */
  end(call: ThriftMuxCall, success: boolean): void;
}

const EMPTY = Buffer.alloc(0);
const NO_CONTEXTS: readonly MuxContextEntry[] = [];

/**
 * One thrift call that came in a mux request (Finagle's thriftmux: a Tdispatch body is one thrift
 * message). Named as a thrift call is (`dstPrefix [/ dest] [/ service] [/ method]`) with the
 * Tdispatch destination as `dest`, its dtab made the local dtab, sent upstream as plain thrift
 * through the path cache; the reply (seqid restored) goes back in an Rdispatch ok. A failure is
 * answered as Finagle's thriftmux server does: a nack when it is safe to send elsewhere (nothing
 * reached a backend), else a TApplicationException inside an Rdispatch ok.
 */
export class ThriftMuxCall implements RequestHeaderSource {
  readonly started = performance.now();
  readonly handle = new AttemptHandle();
  readonly session: MuxServerSession;
  readonly tag: number;
  readonly inbound: MuxInbound;
  readonly #server: ThriftMuxCallServer;
  header: MessageHeader | undefined;
  dst: Path | undefined;
  localDtab: Dtab | undefined;
  clientId: string | undefined;
  #dest: string | undefined;
  #stop: ((err: Error) => void) | undefined;
  #stopped: Error | undefined;

  constructor(server: ThriftMuxCallServer, session: MuxServerSession, tag: number, inbound: MuxInbound) {
    this.#server = server;
    this.session = session;
    this.tag = tag;
    this.inbound = inbound;
  }

  /** The mux contexts that came with the request (none with clearContext, or on a Treq). */
  get contexts(): readonly MuxContextEntry[] {
    return this.inbound.kind === 'dispatch' && !this.#server.clearContext ? this.inbound.msg.contexts : NO_CONTEXTS;
  }

  /** What an upgraded upstream connection is told: the caller's trace and contexts, its destination and dtab. */
  requestHeader(): RequestHeader {
    const incoming: RequestHeader = {};
    const contexts = this.contexts;
    const t = readTraceContext(contexts);
    if (t !== undefined) {
      incoming.traceId = t.traceId;
      incoming.spanId = t.spanId;
      incoming.flags = t.flags;
      if (t.traceIdHigh !== undefined) incoming.traceIdHigh = t.traceIdHigh;
    }
    if (contexts.length > 0) incoming.contexts = contexts.map((c) => [c.key, c.value] as const);
    return outgoingHeader(incoming, this.#dest, this.localDtab ?? Dtab.empty);
  }

  /** Routes the call and answers it; never throws. `overloadedAt`: the server's limit when over it. */
  async serve(overloadedAt: number | undefined): Promise<void> {
    const router = this.#server.router;
    const proto = this.#server.protocol;
    let lease: Lease<ThriftPathService> | undefined;
    let svc: ThriftPathService | undefined;
    let timer: NodeJS.Timeout | undefined;
    let success = false;
    try {
      if (overloadedAt !== undefined) throw new ThriftMuxOverloadedError(overloadedAt);
      const body = this.inbound.msg.body;
      const h = (this.header = this.#readHeader(body));
      this.#name();
      const dst = this.dst as Path;
      lease = router.pathService(dst, this.localDtab ?? Dtab.empty);
      svc = lease.value;
      const stop = new Promise<never>((_resolve, reject) => (this.#stop = reject));
      stop.catch(noop);
      if (this.#stopped !== undefined) throw this.#stopped;
      const deadline = readDeadline(this.contexts);
      if (deadline !== undefined) {
        const leftMs = Number(deadline.deadlineNanos - epochNanos()) / 1e6;
        const totalMs = Math.max(0, Number(deadline.deadlineNanos - deadline.timestampNanos) / 1e6);
        if (leftMs <= 0) throw new ThriftMuxDeadlineExceededError(totalMs, dst.show);
        if (leftMs <= MAX_TIMER_MS) timer = setTimeout(() => this.#interrupt(new ThriftMuxDeadlineExceededError(totalMs, dst.show)), leftMs);
      }
      const oneway = h.type === MessageType.ONEWAY;
      const req: ThriftRequest = { message: body, header: h, oneway, context: this, encodedHeader: undefined };
      const serving = svc.serve(req, this.handle, Date.now() + router.bindingTimeoutMs, this.started);
      serving.catch(noop);
      const served = await Promise.race([serving, stop]);
      const ex = served.attempt.exchange;
      success = served.responseClass === 'success';
      this.clientId = served.client.id;
      const reply = ex.reply;
      const rh = ex.replyHeader;
      // A oneway call is answered with an empty body (Finagle's thriftmux clients wait for one).
      const out = oneway || reply === undefined || rh === undefined ? EMPTY : withSeqid(proto, reply, rh, h.seqid);
      this.session.reply(this.tag, ReplyStatus.Ok, NO_CONTEXTS, out);
      svc.record(success, performance.now() - this.started);
    } catch (err) {
      svc?.record(false, performance.now() - this.started, err);
      this.#fail(err);
    } finally {
      clearTimeout(timer);
      lease?.release();
      this.#server.end(this, success);
    }
  }

  /** The client discarded the request (or its session went away): stop, and interrupt the upstream. */
  discarded(): void {
    this.#interrupt(new RequestCancelledError());
  }

  #interrupt(err: Error): void {
    if (this.#stopped !== undefined) return;
    this.#stopped = err;
    this.handle.abort(err, true);
    this.#stop?.(err);
  }

  #readHeader(body: Buffer): MessageHeader {
    let h: MessageHeader | undefined;
    try {
      h = readMessageHeader(this.#server.protocol, body);
    } catch (e) {
      throw new ThriftMuxBadRequestError(`the request is not a ${this.#server.protocol} thrift message: ${errorMessage(e)}`);
    }
    if (h === undefined) throw new ThriftMuxBadRequestError('the request is shorter than a thrift message header');
    if (h.type !== MessageType.CALL && h.type !== MessageType.ONEWAY) throw new ThriftMuxBadRequestError(`a client sent a thrift message of type ${h.type} (${h.name})`);
    return h;
  }

  /** The call's name and local dtab from its method, Tdispatch destination and dtab. */
  #name(): void {
    const router = this.#server.router;
    const inbound = this.inbound;
    if (inbound.kind === 'dispatch' && !this.#server.clearContext) {
      const msg = inbound.msg;
      if (msg.dst !== '' && msg.dst !== '/') this.#dest = msg.dst;
      if (msg.dtab.length > 0) {
        try {
          this.localDtab = readDtab(msg.dtab.map((d) => `${d.prefix}=>${d.dst}`).join(';'));
        } catch (e) {
          throw new ThriftMuxBadRequestError(`bad Tdispatch dtab: ${errorMessage(e)}`);
        }
      }
    }
    try {
      this.dst = router.identifier.identify((this.header as MessageHeader).name, this.#dest);
    } catch (e) {
      throw new ThriftMuxBadRequestError(`bad Tdispatch destination ${JSON.stringify(this.#dest)}: ${errorMessage(e)}`);
    }
  }

  #fail(err: unknown): void {
    const router = this.#server.router;
    if (!this.session.pending(this.tag)) return;
    router.log.debug({ err: errorMessage(err), dst: this.dst?.show, method: this.header?.name }, 'thriftmux call failed');
    // Safe to send again and never acted on: a nack (Finagle's thriftmux server passes retryable
    // failures on as nacks). A request that is no thrift call has no method to answer as.
    if (err instanceof RouterFailure && err.is(FailureFlag.Retryable) && !err.is(FailureFlag.Timeout)) {
      return this.session.reply(this.tag, ReplyStatus.Nack, muxFailureContexts(MuxFailureFlag.Retryable | MuxFailureFlag.Rejected), EMPTY);
    }
    const h = this.header;
    if (h === undefined || err instanceof ThriftMuxBadRequestError) {
      return this.session.reply(this.tag, ReplyStatus.Error, NO_CONTEXTS, Buffer.from(errorMessage(err), 'utf8'));
    }
    if (h.type === MessageType.ONEWAY) return this.session.reply(this.tag, ReplyStatus.Ok, NO_CONTEXTS, EMPTY);
    const reply = failureReply(this.#server.protocol, h.name, h.seqid, err, { dst: this.dst?.show, baseDtab: router.baseDtab, localDtab: this.localDtab });
    this.session.reply(this.tag, ReplyStatus.Ok, NO_CONTEXTS, reply);
  }
}

function noop(): void {}
