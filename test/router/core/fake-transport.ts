// An in-memory protocol for the router core (Finagle-style tests): each endpoint's behaviour is a
// script; requests are plain objects; nothing touches a socket. What a real adapter answers
// (replayable? requeueable? the class of a response?) the fake answers from the script.
import { addressKey, type Address } from '../../../src/naming/index.js';
import type { ClientProtocol, Exchange, ResponseStats, Transport } from '../../../src/router/core/transport.js';
import type { ResponseClass } from '../../../src/service/classifier.js';

export interface FakeRequest {
  readonly replayable: boolean;
  /** The endpoints the request was dispatched to, in order. */
  readonly tried: string[];
}

export function request(replayable = true): FakeRequest {
  return { replayable, tried: [] };
}

/** What an endpoint does with one request. */
export type Behaviour =
  | { readonly kind: 'answer' | 'stream'; readonly cls: ResponseClass; readonly delayMs?: number } // a whole response, or a head whose body ends later
  | { readonly kind: 'refuse' | 'reset' | 'hang' }; // connect fails (nothing written), fails after writing, never answers

export const answer = (cls: ResponseClass = 'success', delayMs = 0): Behaviour => ({ kind: 'answer', cls, delayMs });
export const stream = (cls: ResponseClass = 'success'): Behaviour => ({ kind: 'stream', cls });
export const REFUSE: Behaviour = { kind: 'refuse' };
export const RESET: Behaviour = { kind: 'reset' };
export const HANG: Behaviour = { kind: 'hang' };

/** Failures with the codes Node gives them (`exceptionName` records the code). */
export class FakeSocketError extends Error {
  readonly code: string;
  constructor(code: 'ECONNREFUSED' | 'ECONNRESET') {
    super(code);
    this.code = code;
  }
}

export class FakeExchange implements Exchange {
  readonly head: Promise<FakeExchange>;
  readonly cls: ResponseClass | undefined;
  error: Error | undefined;
  finished = false;
  outcomePending = false;
  headClass: ResponseClass | undefined;
  /** The request reached the peer. */
  written = false;
  discarded = false;
  /** The class the protocol reports at the end of the stream (`endClass`), if any. */
  endCls: ResponseClass | undefined;
  #reject: (e: Error) => void = () => {};
  readonly #onDone: (ex: FakeExchange) => void;

  constructor(b: Behaviour, onDone: (ex: FakeExchange) => void) {
    this.#onDone = onDone;
    this.cls = b.kind === 'answer' || b.kind === 'stream' ? b.cls : undefined;
    this.written = b.kind !== 'refuse';
    this.head = new Promise<FakeExchange>((resolve, reject) => {
      this.#reject = reject;
      if (b.kind === 'hang') return;
      const settle = (): void => {
        if (this.finished && this.error !== undefined) return;
        if (b.kind === 'answer') this.end();
        if (b.kind === 'refuse' || b.kind === 'reset') this.break(new FakeSocketError(b.kind === 'refuse' ? 'ECONNREFUSED' : 'ECONNRESET'));
        else resolve(this);
      };
      if ('delayMs' in b && b.delayMs !== undefined && b.delayMs > 0) setTimeout(settle, b.delayMs);
      else queueMicrotask(settle);
    });
    this.head.catch(() => {});
  }

  abort(err: Error): void {
    this.break(err);
  }

  discard(): void {
    this.discarded = true;
    this.end();
  }

  /** The response ends (with the class the protocol then knows, if any). */
  end(endCls?: ResponseClass): void {
    if (this.finished) return;
    this.endCls = endCls;
    this.finished = true;
    this.#onDone(this);
  }

  /** The exchange fails: before its head, the attempt fails; after it, the body breaks. */
  break(err: Error): void {
    if (this.finished) return;
    this.error = err;
    this.#reject(err);
    this.finished = true;
    this.#onDone(this);
  }
}

/** One endpoint of the fake network: its script and what happened to it. */
export class FakeEndpoint {
  script: Behaviour | ((n: number) => Behaviour) = answer();
  /** Requests in flight beyond which the transport is saturated (TooManyWaiters). */
  maxLoad = Infinity;
  dispatched = 0;
  readonly exchanges: FakeExchange[] = [];
  transports = 0;
  closed = 0;
  destroyed = 0;
}

export class FakeTransport implements Transport<FakeRequest, FakeExchange> {
  readonly #ep: FakeEndpoint;
  readonly #key: string;
  readonly #inFlight = new Set<FakeExchange>();
  #closed: (() => void) | undefined;
  constructor(key: string, ep: FakeEndpoint) {
    this.#key = key;
    this.#ep = ep;
    ep.transports++;
  }
  get connections(): number {
    return this.#inFlight.size;
  }
  saturated(load: number): boolean {
    return load >= this.#ep.maxLoad;
  }
  dispatch(req: FakeRequest, onDone: (ex: FakeExchange) => void): FakeExchange {
    const ep = this.#ep;
    req.tried.push(this.#key);
    const ex = new FakeExchange(typeof ep.script === 'function' ? ep.script(ep.dispatched) : ep.script, (done) => {
      this.#inFlight.delete(done);
      onDone(done);
      if (this.#inFlight.size === 0) this.#closed?.();
    });
    ep.dispatched++;
    ep.exchanges.push(ex);
    this.#inFlight.add(ex);
    return ex;
  }
  /** Resolves once the exchanges in flight have ended, as a pool's close does. */
  close(): Promise<void> {
    this.#ep.closed++;
    if (this.#inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#closed = resolve));
  }
  destroy(): Promise<void> {
    this.#ep.destroyed++;
    for (const ex of [...this.#inFlight]) ex.abort(new Error('destroyed'));
    return Promise.resolve();
  }
}

/** How the fake classifies a failed attempt (responses carry their class). */
export type FakeClassifier = (err: Error) => ResponseClass;

/** The fake protocol over a set of scripted endpoints, keyed `host:port`. */
export class FakeProtocol implements ClientProtocol<FakeRequest, FakeExchange, undefined, FakeClassifier> {
  readonly endpoints = new Map<string, FakeEndpoint>();
  /** Responses seen by each client's protocol stats. */
  recorded = 0;

  endpoint(key: string): FakeEndpoint {
    let ep = this.endpoints.get(key);
    if (ep === undefined) this.endpoints.set(key, (ep = new FakeEndpoint()));
    return ep;
  }
  transport(address: Address): FakeTransport {
    return new FakeTransport(addressKey(address), this.endpoint(addressKey(address)));
  }
  isReplayable(req: FakeRequest): boolean {
    return req.replayable;
  }
  isTlsFailure(): boolean {
    return false;
  }
  /** A socket failure before anything was written. */
  isRequeueable(err: unknown, ex: FakeExchange | undefined): boolean {
    return err instanceof FakeSocketError && ex?.written !== true;
  }
  classify(_c: FakeClassifier, _req: FakeRequest, ex: FakeExchange): ResponseClass {
    return ex.cls ?? 'failure';
  }
  classifyFailure(c: FakeClassifier, _req: FakeRequest, err: Error): ResponseClass {
    return c(err);
  }
  endClass(ex: FakeExchange): ResponseClass | undefined {
    return ex.endCls;
  }
  responseStats(): ResponseStats<FakeExchange> {
    return { record: () => void this.recorded++ };
  }
}
