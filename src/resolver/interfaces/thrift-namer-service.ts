import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { type Activity, type Addr, type BoundName, Dtab, type NameTree, type Path, type State, readDtab } from '../../naming/index.js';
import { AppExceptionType, encodeAppException } from '../../protocol/thrift/app-exception.js';
import { readMessageHeader } from '../../protocol/thrift/message.js';
import {
  addrToThrift, boundTreeToThrift, delegateTreeToThrift, delegationRequestPaths, pathFromThrift,
} from '../../protocol/thrift/name-interface/convert.js';
import {
  type AddrReq, type BindReq, type DelegateReq, type DtabReq, type NameRef, type NamerCall, type NamerMethod, type NamerResult,
  decodeNamerCall, encodeAddrReply, encodeAddrVal, encodeBindReply, encodeBoundTree, encodeNamerReply, encodeUnknownMethod,
} from '../../protocol/thrift/name-interface/messages.js';
import type { EncodedStruct } from '../../protocol/thrift/name-interface/schema-codec.js';
import type { Counter, StatsReceiver } from '../../service/stats/index.js';
import type { ResolverNaming } from '../naming.js';
import { type Observation, ObserverCache, PollWaiter, type Reading, Stamper } from './observer-cache.js';

/** The `cache` object of the interface: entry counts and seconds. */
export interface ThriftNamerCacheConfig {
  readonly bindingCacheActive: number;
  readonly bindingCacheInactive: number;
  readonly bindingCacheInactiveTTLSecs: number;
  readonly addrCacheActive: number;
  readonly addrCacheInactive: number;
  readonly addrCacheInactiveTTLSecs: number;
}

export interface ThriftNamerServiceOptions {
  readonly retryBaseSecs: number;
  readonly retryJitterSecs: number;
  readonly cache: ThriftNamerCacheConfig;
  /** How long a delegation may wait for storage and namers before it fails (default 10 s). */
  readonly answerTimeoutMs?: number;
  readonly log?: Logger;
  readonly random?: () => number;
}

/** A delegation is not a long poll: its answers carry this stamp, which marks a repeat request (see `delegate`). */
const DELEGATION_STAMP = Buffer.from([0, 0, 0, 0, 0, 0, 0, 1]);
const DEFAULT_ANSWER_TIMEOUT_MS = 10_000;
/** The dtab cache is per namespace: a handful. */
const DTAB_CACHE = { active: 100, inactive: 10, ttlMs: 600_000 };

const readTree = (s: State<unknown>): Reading<EncodedStruct> => {
  if (s.kind === 'pending') return undefined;
  if (s.kind === 'failed') return { error: s.error };
  return { value: encodeBoundTree(boundTreeToThrift(s.value as NameTree<BoundName>)) };
};

const readAddr = (s: State<unknown>): Reading<EncodedStruct> => {
  if (s.kind === 'pending') return undefined;
  if (s.kind === 'failed') return { error: s.error };
  const a = s.value as Addr;
  if (a.kind === 'pending') return undefined;
  if (a.kind === 'failed') return { error: a.error };
  return { value: encodeAddrVal(addrToThrift(a)) };
};

const readDtabText = (s: State<unknown>): Reading<string> => {
  if (s.kind === 'pending') return undefined;
  if (s.kind === 'failed') return { error: s.error };
  return { value: (s.value as Dtab).show };
};

/** A call of one of the service's methods. */
export type ServedCall = Exclude<NamerCall, { method: undefined }>;

/** Where one call's reply goes. `reply` is called at most once, and never after the call is withdrawn. */
export interface NamerReplySink {
  /**
   * The reply. With `seqidAt` at -1 it is this call's own message. Otherwise it is shared by every
   * poll one observation answers and carries seqid 0: the sink sends a copy with its call's seqid
   * written (32 bits, big-endian) at that offset.
   */
  reply(message: Buffer, seqidAt: number): void;
}

/** A call still waiting for its answer: withdrawn when its client discards it or goes away. */
export interface PendingCall {
  withdraw(): void;
}

/** `message` with `seqid` written at `seqidAt` (a copy; -1 leaves it as it is). */
export function withSeqid(message: Buffer, seqidAt: number, seqid: number): Buffer {
  if (seqidAt < 0) return message;
  const b = Buffer.allocUnsafe(message.length);
  message.copy(b);
  b.writeInt32BE(seqid | 0, seqidAt);
  return b;
}

/** Where a reply's seqid is, in a strict binary message: version (4), name length (4), the name. */
const seqidAt = (method: NamerMethod): number => 8 + method.length;
const BIND_SEQID_AT = seqidAt('bind');
const ADDR_SEQID_AT = seqidAt('addr');

const sameEncoded = (a: EncodedStruct, b: EncodedStruct): boolean => a.bytes.equals(b.bytes);

type MethodCounters = Readonly<Record<NamerMethod, { readonly requests: Counter; readonly failures: Counter }>>;

/** What the polls' replies share: each observation's reply encoded once, the retry hint, the counters. */
class Replies {
  readonly #templates = new WeakMap<object, Buffer>();
  readonly retryIn: () => number;
  readonly counters: MethodCounters;

  constructor(retryIn: () => number, counters: MethodCounters) {
    this.retryIn = retryIn;
    this.counters = counters;
  }

  /** The reply (seqid 0) every poll of `obs` gets: a bound tree's is encoded once for all. */
  bound(obs: Observation<EncodedStruct> & { ok: true }, ns: string): Buffer {
    let t = this.#templates.get(obs);
    if (t === undefined) this.#templates.set(obs, (t = encodeBindReply(0, obs.stamp, obs.value, ns)));
    return t;
  }

  addr(obs: Observation<EncodedStruct> & { ok: true }): Buffer {
    let t = this.#templates.get(obs);
    if (t === undefined) this.#templates.set(obs, (t = encodeAddrReply(0, obs.stamp, obs.value)));
    return t;
  }

  /** Sends `method`'s failure reply to `sink`, counted (undefined: nothing is left pending). */
  fail<M extends NamerMethod>(sink: NamerReplySink, method: M, seqid: number, failure: Extract<NamerResult<M>, { failure: unknown }>['failure']): undefined {
    this.counters[method].failures.incr();
    sink.reply(encodeNamerReply(method, seqid, { failure } as NamerResult<M>), -1);
    return undefined;
  }
}

/** A long poll of this service, waiting: where its answer goes, and how it fails. */
abstract class NamerPoll<V> extends PollWaiter<V> implements PendingCall {
  readonly cache: ObserverCache<V>;
  readonly replies: Replies;
  readonly sink: NamerReplySink;
  readonly seqid: number;

  constructor(cache: ObserverCache<V>, replies: Replies, sink: NamerReplySink, seqid: number) {
    super();
    this.cache = cache;
    this.replies = replies;
    this.sink = sink;
    this.seqid = seqid;
  }

  withdraw(): void {
    this.cache.withdraw(this);
  }

  /** Answers the failure `reason`. */
  abstract fail(reason: string): void;
}

/**
 * A bind or addr long poll: all it keeps besides its answer's way is the name it asked for, which
 * a failure answer carries (ten thousand of these wait between updates on a busy resolver).
 */
abstract class NamedPoll extends NamerPoll<EncodedStruct> {
  readonly ref: NameRef;

  constructor(cache: ObserverCache<EncodedStruct>, replies: Replies, sink: NamerReplySink, seqid: number, ref: NameRef) {
    super(cache, replies, sink, seqid);
    this.ref = ref;
  }
}

class BindPoll extends NamedPoll {
  deliver(o: Observation<EncodedStruct>): void {
    if (o.ok) this.sink.reply(this.replies.bound(o, this.ref.ns), BIND_SEQID_AT);
    else this.fail(o.error.message);
  }

  fail(reason: string): void {
    const ref = this.ref;
    this.replies.fail(this.sink, 'bind', this.seqid, { reason, retryInSeconds: this.replies.retryIn(), name: ref, ns: ref.ns });
  }
}

class AddrPoll extends NamedPoll {
  deliver(o: Observation<EncodedStruct>): void {
    if (o.ok) this.sink.reply(this.replies.addr(o), ADDR_SEQID_AT);
    else this.fail(o.error.message);
  }

  fail(reason: string): void {
    this.replies.fail(this.sink, 'addr', this.seqid, { reason, retryInSeconds: this.replies.retryIn(), name: this.ref });
  }
}

/** A dtab long poll (a handful per namespace: each answer is encoded for its own call). */
class DtabPoll extends NamerPoll<string> {
  deliver(o: Observation<string>): void {
    if (o.ok) this.sink.reply(encodeNamerReply('dtab', this.seqid, { ok: { stamp: o.stamp, dtab: o.value } }), -1);
    else this.fail(o.error.message);
  }

  fail(reason: string): void {
    this.replies.fail(this.sink, 'dtab', this.seqid, { reason });
  }
}

/** A delegation never answered (see `delegate`): nothing to withdraw. */
const NEVER_ANSWERED: PendingCall = { withdraw: () => {} };

/**
 * The `Namer` service of the resolver's thrift name interface over its naming: bind, addr and
 * dtab are long polls on stamped observations (see {@link ObserverCache}); a change is encoded
 * once and the same bytes answer every poll waiting on it, in the turn it changes. delegate
 * answers as soon as its delegation is explained.
 */
export class ThriftNamerService {
  readonly #naming: ResolverNaming;
  readonly #opts: ThriftNamerServiceOptions;
  readonly #random: () => number;
  readonly #bindings: ObserverCache<EncodedStruct>;
  readonly #addrs: ObserverCache<EncodedStruct>;
  readonly #dtabs: ObserverCache<string>;
  readonly #replies: Replies;

  constructor(naming: ResolverNaming, opts: ThriftNamerServiceOptions, stats: StatsReceiver) {
    this.#naming = naming;
    this.#opts = opts;
    this.#random = opts.random ?? Math.random;
    const stamper = new Stamper();
    const c = opts.cache;
    const deliveryFailed = (e: unknown): void => opts.log?.error({ err: errorMessage(e) }, 'thrift name interface failed to answer a long poll');
    this.#bindings = new ObserverCache({
      activeCapacity: c.bindingCacheActive, inactiveCapacity: c.bindingCacheInactive, inactiveTtlMs: c.bindingCacheInactiveTTLSecs * 1000,
      stamper, read: readTree, same: sameEncoded, stats: stats.scope('bindingcache'), deliveryFailed,
    });
    this.#addrs = new ObserverCache({
      activeCapacity: c.addrCacheActive, inactiveCapacity: c.addrCacheInactive, inactiveTtlMs: c.addrCacheInactiveTTLSecs * 1000,
      stamper, read: readAddr, same: sameEncoded, stats: stats.scope('addrcache'), deliveryFailed,
    });
    this.#dtabs = new ObserverCache({
      activeCapacity: DTAB_CACHE.active, inactiveCapacity: DTAB_CACHE.inactive, inactiveTtlMs: DTAB_CACHE.ttlMs,
      stamper, read: readDtabText, same: (a, b) => a === b, stats: stats.scope('dtabcache'), deliveryFailed,
    });
    const counters = (m: NamerMethod): { requests: Counter; failures: Counter } => ({ requests: stats.counter(m, 'requests'), failures: stats.counter(m, 'failures') });
    this.#replies = new Replies(() => this.#retryIn(), { bind: counters('bind'), addr: counters('addr'), delegate: counters('delegate'), dtab: counters('dtab') });
  }

  /** The bindings and addresses being watched (tests and figures read them). */
  get observations(): { readonly bindings: number; readonly addrs: number } {
    return { bindings: this.#bindings.activeSize + this.#bindings.inactiveSize, addrs: this.#addrs.activeSize + this.#addrs.inactiveSize };
  }

  /**
   * Reads a call at once (so nothing holds the bytes it came in): the reply when it can be given
   * now (an unknown method, a malformed call; undefined when `msg` is not a thrift call at all, for
   * the caller to answer at its own level), or the call for {@link answer}.
   */
  read(msg: Buffer): { readonly reply: Buffer | undefined } | { readonly call: ServedCall } {
    let call: NamerCall;
    try {
      call = decodeNamerCall(msg);
    } catch (e) {
      return { reply: protocolErrorReply(msg, e) };
    }
    if (call.method === undefined) return { reply: encodeUnknownMethod(call.name, call.seqid) };
    return { call };
  }

  /**
   * Answers `call` into `sink`: at once when it can be (then this returns undefined), else when
   * its observation changes or its delegation is explained; the returned call withdraws it.
   */
  answer(call: ServedCall, sink: NamerReplySink): PendingCall | undefined {
    this.#replies.counters[call.method].requests.incr();
    switch (call.method) {
      case 'bind':
        return this.#bind(call.seqid, call.req, sink);
      case 'addr':
        return this.#addr(call.seqid, call.req, sink);
      case 'delegate':
        return this.#delegate(call.seqid, call.req, sink);
      case 'dtab':
        return this.#dtab(call.seqid, call.req, sink);
    }
  }

  /**
   * {@link read}, then {@link answer}, as a promise (for a connection served one call at a time):
   * the reply; undefined when `msg` is not a thrift call, or when `withdrawn` fires first.
   */
  handle(msg: Buffer, withdrawn: (withdraw: () => void) => void): Promise<Buffer | undefined> {
    const r = this.read(msg);
    if ('reply' in r) return Promise.resolve(r.reply);
    const seqid = r.call.seqid;
    return new Promise((resolve) => {
      const pending = this.answer(r.call, { reply: (message, at) => resolve(withSeqid(message, at, seqid)) });
      if (pending !== undefined)
        withdrawn(() => {
          pending.withdraw();
          resolve(undefined);
        });
    });
  }

  close(): void {
    this.#bindings.close();
    this.#addrs.close();
    this.#dtabs.close();
  }

  /** Seconds a client is told to wait after a failure: the base plus up to the jitter. */
  #retryIn(): number {
    return this.#opts.retryBaseSecs + Math.floor(this.#random() * (this.#opts.retryJitterSecs + 1));
  }

  #bind(seqid: number, req: BindReq, sink: NamerReplySink): PendingCall | undefined {
    const ref = req.name;
    const fail = (reason: string): undefined => this.#replies.fail(sink, 'bind', seqid, { reason, retryInSeconds: this.#retryIn(), name: ref, ns: ref?.ns ?? '' });
    if (ref === undefined) return fail('no name given');
    let path: Path;
    let extra: Dtab;
    try {
      path = pathFromThrift(ref.name);
      extra = req.dtab === '' ? Dtab.empty : readDtab(req.dtab);
    } catch (e) {
      return fail(errorMessage(e));
    }
    if (path.isEmpty) return fail('empty path');
    const ns = ref.ns;
    const key = `${ns}\n${extra.show}\n${path.show}`;
    return this.#wait(this.#bindings, key, ref.stamp, () => this.#naming.bind(ns, extra, path), new BindPoll(this.#bindings, this.#replies, sink, seqid, ref));
  }

  #addr(seqid: number, req: AddrReq, sink: NamerReplySink): PendingCall | undefined {
    const ref = req.name;
    const fail = (reason: string): undefined => this.#replies.fail(sink, 'addr', seqid, { reason, retryInSeconds: this.#retryIn(), name: ref });
    if (ref === undefined) return fail('no name given');
    let id: Path;
    try {
      id = pathFromThrift(ref.name);
    } catch (e) {
      return fail(errorMessage(e));
    }
    if (id.isEmpty) return fail('empty path');
    return this.#wait(this.#addrs, id.show, ref.stamp, () => this.#naming.addr(id), new AddrPoll(this.#addrs, this.#replies, sink, seqid, ref));
  }

  #dtab(seqid: number, req: DtabReq, sink: NamerReplySink): PendingCall | undefined {
    const ns = req.ns;
    return this.#wait(this.#dtabs, ns, req.stamp, () => this.#naming.dtab(ns), new DtabPoll(this.#dtabs, this.#replies, sink, seqid));
  }

  /** Polls `cache` for `poll`: answered now (undefined) or waiting (the poll, to withdraw). */
  #wait<V>(cache: ObserverCache<V>, key: string, stamp: Buffer, source: () => Activity<unknown>, poll: NamerPoll<V>): PendingCall | undefined {
    let obs: Observation<V> | undefined;
    try {
      obs = cache.poll(key, stamp, source, poll);
    } catch (e) {
      poll.fail(errorMessage(e));
      return undefined;
    }
    if (obs === undefined) return poll;
    poll.deliver(obs);
    return undefined;
  }

  /**
   * Answered once explained; not a long poll. A request with a stamp comes from a client that polls
   * delegations as it polls bindings: as namerd does, it is never answered, so the client keeps the
   * delegation it has until it gives up the request.
   */
  #delegate(seqid: number, req: DelegateReq, sink: NamerReplySink): PendingCall | undefined {
    const d = req.delegation;
    if (d === undefined || d.tree === undefined) return this.#replies.fail(sink, 'delegate', seqid, { reason: 'no delegation tree given' });
    if (d.stamp.length > 0) return NEVER_ANSWERED;
    const withdrawn = new AbortController();
    const limitMs = this.#opts.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(limitMs);
    const both = AbortSignal.any([withdrawn.signal, timeout]);
    const explain = async (): Promise<Buffer> => {
      const tree = delegationRequestPaths(d.tree as NonNullable<typeof d.tree>);
      const extra = readDtab(req.dtab);
      const stored = await this.#naming.dtab(d.ns).toPromise(both);
      const explained = await this.#naming.delegateWith(stored.concat(extra), tree, both);
      return encodeNamerReply('delegate', seqid, { ok: { stamp: DELEGATION_STAMP, tree: delegateTreeToThrift(explained), ns: d.ns } });
    };
    explain().then(
      (reply) => {
        if (!withdrawn.signal.aborted) sink.reply(reply, -1);
      },
      (e: unknown) => {
        if (!withdrawn.signal.aborted) this.#replies.fail(sink, 'delegate', seqid, { reason: timeout.aborted ? `delegation did not finish within ${limitMs} ms` : errorMessage(e) });
      },
    );
    return { withdraw: () => withdrawn.abort() };
  }
}

/** A TApplicationException (PROTOCOL_ERROR) when the call's header can be read; else undefined. */
function protocolErrorReply(msg: Buffer, e: unknown): Buffer | undefined {
  try {
    const h = readMessageHeader('binary', msg);
    if (h === undefined) return undefined;
    return encodeAppException('binary', h.name, h.seqid, { type: AppExceptionType.PROTOCOL_ERROR, message: errorMessage(e) });
  } catch {
    return undefined;
  }
}
