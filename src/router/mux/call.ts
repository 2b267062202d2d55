import type { Logger } from 'pino';
import { Dtab, readDtab, readPath, type Path } from '../../naming/index.js';
import type { MuxRequest } from '../../protocol/mux/client-transport.js';
import { encodeTraceContext, epochNanos, MAX_TIMER_MS, readDeadline } from '../../protocol/mux/contexts.js';
import type { MuxContextEntry } from '../../protocol/mux/messages.js';
import { ReplyStatus } from '../../protocol/mux/messages.js';
import type { MuxInbound, MuxServerSession } from '../../protocol/mux/server-session.js';
import { RequestCancelledError } from '../../service/failures.js';
import type { Lease } from '../core/cache.js';
import { AttemptHandle } from '../core/transport.js';
import { MuxBadDestinationError, MuxDeadlineExceededError, MuxServerOverloadedError } from './errors.js';
import { answerFor } from './respond.js';
import type { MuxPathService, MuxServed } from './types.js';

/** What a call needs of its router. */
export interface MuxCallHost {
  readonly log: Logger;
  readonly dstPrefix: Path;
  readonly baseDtab: Dtab;
  readonly bindingTimeoutMs: number;
  pathService(dst: Path, localDtab: Dtab): Lease<MuxPathService>;
}

/** What a call needs of its server. */
export interface MuxCallServer {
  readonly router: MuxCallHost;
  /** The server's `clearContext`: the caller's contexts and dtab are dropped, not used or forwarded. */
  readonly clearContext: boolean;
  /** The call is over (once): server stats. */
  end(call: MuxCall, success: boolean): void;
}

const TRACE_KEY = Buffer.from('com.twitter.finagle.tracing.TraceContext');

/**
 * One inbound request through the router: identification (`dstPrefix ++ dst`), the request's
 * dtab as its local dtab, routing through the path cache, then the upstream's reply written back
 * on the same tag, or the failure answered in mux's terms. The request's deadline context bounds
 * the whole call; a Tdiscarded from the client interrupts it (and the upstream's work).
 */
export class MuxCall {
  readonly started = performance.now();
  readonly handle = new AttemptHandle();
  readonly session: MuxServerSession;
  readonly tag: number;
  readonly inbound: MuxInbound;
  readonly #server: MuxCallServer;
  dst: Path | undefined;
  localDtab: Dtab | undefined;
  service: MuxPathService | undefined;
  served: MuxServed | undefined;
  /** What was sent upstream (its destination is the last attempt's residual). */
  upstream: MuxRequest | undefined;
  #stop: ((err: Error) => void) | undefined;
  #stopped: Error | undefined;

  constructor(server: MuxCallServer, session: MuxServerSession, tag: number, inbound: MuxInbound) {
    this.#server = server;
    this.session = session;
    this.tag = tag;
    this.inbound = inbound;
  }

  /** Routes the request and answers it; never throws. `overloadedAt`: the server's limit when over it. */
  async serve(overloadedAt: number | undefined): Promise<void> {
    const router = this.#server.router;
    let lease: Lease<MuxPathService> | undefined;
    let timer: NodeJS.Timeout | undefined;
    let success = false;
    try {
      if (overloadedAt !== undefined) throw new MuxServerOverloadedError(overloadedAt);
      const req = (this.upstream = this.#upstreamRequest());
      const dst = this.dst as Path;
      lease = router.pathService(dst, this.localDtab ?? (this.localDtab = EMPTY_DTAB));
      const svc = (this.service = lease.value);
      const stop = new Promise<never>((_resolve, reject) => (this.#stop = reject));
      stop.catch(noop);
      if (this.#stopped !== undefined) throw this.#stopped;
      const deadline = readDeadline(req.contexts);
      if (deadline !== undefined) {
        const leftMs = Number(deadline.deadlineNanos - epochNanos()) / 1e6;
        const totalMs = Number(deadline.deadlineNanos - deadline.timestampNanos) / 1e6;
        if (leftMs <= 0) throw new MuxDeadlineExceededError(Math.max(0, totalMs), dst.show);
        if (leftMs <= MAX_TIMER_MS) timer = setTimeout(() => this.#interrupt(new MuxDeadlineExceededError(Math.max(0, totalMs), dst.show)), leftMs);
      }
      const serving = svc.serve(req, this.handle, Date.now() + router.bindingTimeoutMs, this.started);
      serving.catch(noop);
      const served = await Promise.race([serving, stop]);
      this.served = served;
      const ex = served.attempt.exchange;
      success = served.responseClass === 'success';
      this.session.reply(this.tag, ex.status, ex.contexts, ex.body);
      svc.record(success, performance.now() - this.started);
    } catch (err) {
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

  /** Names the request and builds what goes upstream; throws what cannot go on. */
  #upstreamRequest(): MuxRequest {
    const router = this.#server.router;
    const inbound = this.inbound;
    if (inbound.kind === 'req') {
      // A Treq has no destination: it is routed by dstPrefix alone, and sent on as a Tdispatch
      // carrying its trace id as the trace context.
      this.dst = router.dstPrefix;
      const t = inbound.msg.traceId;
      const contexts: MuxContextEntry[] = [];
      if (t !== undefined) {
        contexts.push({
          key: TRACE_KEY,
          value: encodeTraceContext({ spanId: t.readBigUInt64BE(0), parentId: t.readBigUInt64BE(8), traceId: t.readBigUInt64BE(16), flags: BigInt(inbound.msg.traceFlags), traceIdHigh: undefined }),
        });
      }
      return { contexts, dst: '', dtab: [], body: inbound.msg.body, attempts: 0 };
    }
    const msg = inbound.msg;
    const clear = this.#server.clearContext;
    try {
      this.dst = msg.dst === '' ? router.dstPrefix : router.dstPrefix.concat(readPath(msg.dst));
    } catch (e) {
      throw new MuxBadDestinationError(`bad Tdispatch destination ${JSON.stringify(msg.dst)}: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (msg.dtab.length > 0 && !clear) {
      try {
        this.localDtab = readDtab(msg.dtab.map((d) => `${d.prefix}=>${d.dst}`).join(';'));
      } catch (e) {
        throw new MuxBadDestinationError(`bad Tdispatch dtab: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    if (clear) return { contexts: [], dst: '', dtab: [], body: msg.body, attempts: 0 };
    return { contexts: msg.contexts, dst: '', dtab: msg.dtab, body: msg.body, attempts: 0 };
  }

  #fail(err: unknown): void {
    const router = this.#server.router;
    this.service?.record(false, performance.now() - this.started, err);
    if (!this.session.pending(this.tag)) return;
    const answer = answerFor(err, { dst: this.dst?.show, baseDtab: router.baseDtab, localDtab: this.localDtab });
    router.log.debug({ err: err instanceof Error ? err.message : String(err), dst: this.dst?.show, answer: answer.kind }, 'mux request failed');
    switch (answer.kind) {
      case 'nack':
        return this.session.reply(this.tag, ReplyStatus.Nack, answer.contexts, EMPTY);
      case 'error':
        return this.session.reply(this.tag, ReplyStatus.Error, answer.contexts, Buffer.from(answer.message, 'utf8'));
      case 'rerr':
        return this.session.rerr(this.tag, answer.message);
    }
  }
}

const EMPTY = Buffer.alloc(0);
const EMPTY_DTAB: Dtab = Dtab.empty;

function noop(): void {}
