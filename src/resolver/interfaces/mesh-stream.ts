import { PrxError, errorMessage } from '../../core/errors.js';
import { GrpcStatus } from '../../protocol/h2/grpc.js';
import type { GrpcCallObserver, GrpcServerCall } from '../../protocol/h2/grpc-server.js';
import { type Activity, type Closable, type Dtab, NAMING_BUDGET_CODES, type State, type Var } from '../../naming/index.js';

/**
 * What a mesh call currently has to send: nothing yet, one encoded response message (length-
 * prefixed for the wire), or the status that ends the call. Messages are encoded once per change
 * and shared by every call watching the same view.
 */
export type Frame =
  | { readonly kind: 'pending' }
  | { readonly kind: 'message'; readonly bytes: Buffer }
  | { readonly kind: 'end'; readonly status: GrpcError };

/** A gRPC status code with its details. */
export interface GrpcError {
  readonly code: number;
  readonly details: string;
}

export const PENDING_FRAME: Frame = Object.freeze({ kind: 'pending' });

export function grpcError(code: number, details: string): GrpcError {
  return { code, details };
}

export type SettledFrame = Exclude<Frame, { readonly kind: 'pending' }>;

export function endFrame(status: GrpcError): SettledFrame {
  return { kind: 'end', status };
}

/**
 * The status a failure is reported with: a request's own dtab that exceeds the naming budget and
 * an invalid namespace name are the caller's fault (INVALID_ARGUMENT), storage that is down is
 * UNAVAILABLE (clients retry), anything else INTERNAL.
 */
export function statusOf(e: unknown, extra?: Dtab): GrpcError {
  const code = e instanceof PrxError ? e.code : undefined;
  if (code === 'PRX_ERR_DTAB_INVALID_NAMESPACE' || code === 'PRX_ERR_MESH_MESSAGE') return grpcError(GrpcStatus.INVALID_ARGUMENT, errorMessage(e));
  if (code !== undefined && NAMING_BUDGET_CODES.has(code) && extra !== undefined && !extra.isEmpty) {
    return grpcError(GrpcStatus.INVALID_ARGUMENT, `Invalid dtab: ${errorMessage(e)}`);
  }
  if (code === 'PRX_ERR_STORAGE_UNAVAILABLE') return grpcError(GrpcStatus.UNAVAILABLE, errorMessage(e));
  return grpcError(GrpcStatus.INTERNAL, errorMessage(e));
}

/** An activity's states as frames: `encode` for values, `onFailure` (default {@link statusOf}) for failures. */
export function framesOf<T>(activity: Activity<T>, encode: (v: T) => Frame, onFailure: (e: Error) => GrpcError = (e) => statusOf(e)): Var<Frame> {
  return activity.states.map((s: State<T>): Frame => {
    switch (s.kind) {
      case 'pending':
        return PENDING_FRAME;
      case 'ok':
        return encode(s.value);
      case 'failed':
        return endFrame(onFailure(s.error));
    }
  });
}

/**
 * One server-streaming call fed from a frame source. At most one message is in flight at a time;
 * while it waits for flow control (a slow consumer, a full HTTP/2 window) only the newest frame is
 * kept, so a stalled client costs one pending message however many updates happen (latest value
 * wins). A message equal to the last one written is not sent again. An `end` frame ends the call
 * with its status; the observation of the source is closed however the call ends.
 */
export class FrameWriter implements GrpcCallObserver {
  readonly #call: GrpcServerCall;
  readonly #onEnd: () => void;
  readonly #once: boolean;
  #sub: Closable | undefined;
  #last: Buffer | undefined;
  #queued: Frame | undefined;
  #writing = false;
  #done = false;
  /** Messages handed to the call (tests compare it with the updates made). */
  written = 0;

  /** With `once`, the call ends (status OK) after its first message. */
  constructor(call: GrpcServerCall, source: Var<Frame>, onEnd: () => void, once = false) {
    this.#call = call;
    this.#onEnd = onEnd;
    this.#once = once;
    call.observer = this;
    const sub = source.observe((f) => this.#onFrame(f));
    if (this.#done) sub.close();
    else this.#sub = sub;
  }

  get ended(): boolean {
    return this.#done;
  }

  /** Ends the call with `status` (shutdown). */
  end(status: GrpcError): void {
    this.#queued = undefined;
    this.#writing = false;
    this.#onFrame(endFrame(status));
  }

  sent(): void {
    this.#writing = false;
    const next = this.#queued;
    this.#queued = undefined;
    if (next !== undefined) this.#onFrame(next);
  }

  cancelled(): void {
    this.#finish();
  }

  #onFrame(f: Frame): void {
    if (this.#done || f.kind === 'pending') return;
    if (this.#writing) {
      this.#queued = f;
      return;
    }
    if (f.kind === 'end') {
      this.#finish();
      this.#call.end(f.status.code, f.status.details);
      return;
    }
    if (this.#last !== undefined && this.#last.equals(f.bytes)) return;
    this.#last = f.bytes;
    this.written++;
    if (this.#once) {
      this.#finish();
      this.#call.send(f.bytes);
      this.#call.end(GrpcStatus.OK);
      return;
    }
    this.#writing = !this.#call.send(f.bytes);
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#queued = undefined;
    this.#sub?.close();
    this.#sub = undefined;
    this.#onEnd();
  }
}

/**
 * The first settled frame of `source` (a message or an end), for a unary call; an end status when
 * nothing settles within `timeoutMs`.
 */
export function firstFrame(source: Var<Frame>, timeoutMs: number): Promise<SettledFrame> {
  return new Promise((resolve) => {
    let settled = false;
    let sub: Closable | undefined = undefined;
    const timer = setTimeout(() => settle(endFrame(grpcError(GrpcStatus.DEADLINE_EXCEEDED, 'Request timed out.'))), timeoutMs);
    function settle(f: SettledFrame): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Closing inside observe() would run before `sub` is assigned: defer it.
      queueMicrotask(() => sub?.close());
      resolve(f);
    }
    sub = source.observe((f) => {
      if (f.kind === 'message' || f.kind === 'end') settle(f);
    });
  });
}
