import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { type Addr, type BoundName, type Dtab, type NameTree, type Path, type State, readDtab } from '../../naming/index.js';
import { AppExceptionType, encodeAppException } from '../../protocol/thrift/app-exception.js';
import { readMessageHeader } from '../../protocol/thrift/message.js';
import {
  addrToThrift, boundTreeToThrift, delegateTreeToThrift, delegationRequestPaths, pathFromThrift,
} from '../../protocol/thrift/name-interface/convert.js';
import {
  type AddrReq, type BindReq, type DelegateReq, type DtabReq, type NamerCall, type NamerMethod, type NamerResult,
  decodeNamerCall, encodeAddrReply, encodeAddrVal, encodeBindReply, encodeBoundTree, encodeNamerReply, encodeUnknownMethod,
} from '../../protocol/thrift/name-interface/messages.js';
import type { EncodedStruct } from '../../protocol/thrift/name-interface/schema-codec.js';
import type { Counter, StatsReceiver } from '../../service/stats/index.js';
import type { ResolverNaming } from '../naming.js';
import { type Interest, ObserverCache, type Reading, Stamper } from './observer-cache.js';

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

const sameEncoded = (a: EncodedStruct, b: EncodedStruct): boolean => a.bytes.equals(b.bytes);

/**
 * The `Namer` service of the resolver's thrift name interface over its naming: bind, addr and
 * dtab are long polls on stamped observations (see {@link ObserverCache}); a change is encoded
 * once and the same bytes answer every poll waiting on it. delegate answers at once.
 */
export class ThriftNamerService {
  readonly #naming: ResolverNaming;
  readonly #opts: ThriftNamerServiceOptions;
  readonly #random: () => number;
  readonly #bindings: ObserverCache<EncodedStruct>;
  readonly #addrs: ObserverCache<EncodedStruct>;
  readonly #dtabs: ObserverCache<string>;
  readonly #counters: Readonly<Record<NamerMethod, { readonly requests: Counter; readonly failures: Counter }>>;
  /** Each observation's reply, encoded once for every poll it answers. */
  readonly #templates = new WeakMap<object, Buffer>();

  constructor(naming: ResolverNaming, opts: ThriftNamerServiceOptions, stats: StatsReceiver) {
    this.#naming = naming;
    this.#opts = opts;
    this.#random = opts.random ?? Math.random;
    const stamper = new Stamper();
    const c = opts.cache;
    this.#bindings = new ObserverCache({
      activeCapacity: c.bindingCacheActive, inactiveCapacity: c.bindingCacheInactive, inactiveTtlMs: c.bindingCacheInactiveTTLSecs * 1000,
      stamper, read: readTree, same: sameEncoded, stats: stats.scope('bindingcache'),
    });
    this.#addrs = new ObserverCache({
      activeCapacity: c.addrCacheActive, inactiveCapacity: c.addrCacheInactive, inactiveTtlMs: c.addrCacheInactiveTTLSecs * 1000,
      stamper, read: readAddr, same: sameEncoded, stats: stats.scope('addrcache'),
    });
    this.#dtabs = new ObserverCache({
      activeCapacity: DTAB_CACHE.active, inactiveCapacity: DTAB_CACHE.inactive, inactiveTtlMs: DTAB_CACHE.ttlMs,
      stamper, read: readDtabText, same: (a, b) => a === b, stats: stats.scope('dtabcache'),
    });
    const counters = (m: NamerMethod): { requests: Counter; failures: Counter } => ({ requests: stats.counter(m, 'requests'), failures: stats.counter(m, 'failures') });
    this.#counters = { bind: counters('bind'), addr: counters('addr'), delegate: counters('delegate'), dtab: counters('dtab') };
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

  /** The reply message to `call`; undefined when the client withdrew its interest first (it discarded the call). */
  answer(call: ServedCall, interest: Interest): Promise<Buffer | undefined> {
    const counters = this.#counters[call.method];
    counters.requests.incr();
    return this.#dispatch(call, interest).then((reply) => {
      if (reply === undefined || interest.withdrawn) return undefined;
      if ('failure' in reply.result) counters.failures.incr();
      return reply.bytes;
    });
  }

  /** {@link read}, then {@link answer}. */
  handle(msg: Buffer, interest: Interest): Promise<Buffer | undefined> {
    const r = this.read(msg);
    return 'reply' in r ? Promise.resolve(r.reply) : this.answer(r.call, interest);
  }

  close(): void {
    this.#bindings.close();
    this.#addrs.close();
    this.#dtabs.close();
  }

  #dispatch(call: ServedCall, interest: Interest): Promise<Reply | undefined> {
    switch (call.method) {
      case 'bind':
        return this.#bind(call.seqid, call.req, interest);
      case 'addr':
        return this.#addr(call.seqid, call.req, interest);
      case 'delegate':
        return this.#delegate(call.seqid, call.req, interest);
      case 'dtab':
        return this.#dtab(call.seqid, call.req, interest);
    }
  }

  /** Seconds a client is told to wait after a failure: the base plus up to the jitter. */
  #retryIn(): number {
    return this.#opts.retryBaseSecs + Math.floor(this.#random() * (this.#opts.retryJitterSecs + 1));
  }

  #bind(seqid: number, req: BindReq, interest: Interest): Promise<Reply> {
    const ref = req.name;
    const fail = (reason: string): Reply => failureReply('bind', seqid, { reason, retryInSeconds: this.#retryIn(), name: ref, ns: ref?.ns ?? '' });
    if (ref === undefined) return Promise.resolve(fail('no name given'));
    let path: Path;
    let extra: Dtab;
    try {
      path = pathFromThrift(ref.name);
      extra = readDtab(req.dtab);
    } catch (e) {
      return Promise.resolve(fail(errorMessage(e)));
    }
    if (path.isEmpty) return Promise.resolve(fail('empty path'));
    const ns = ref.ns;
    return this.#bindings.poll(`${ns}\n${extra.show}\n${path.show}`, ref.stamp, interest, () => this.#naming.bind(ns, extra, path)).then(
      (obs) => (obs.ok ? { result: OK, bytes: this.#fromTemplate('bind', obs, seqid, () => encodeBindReply(0, obs.stamp, obs.value, ns)) } : fail(obs.error.message)),
      (e: unknown) => fail(errorMessage(e)),
    );
  }

  #addr(seqid: number, req: AddrReq, interest: Interest): Promise<Reply> {
    const ref = req.name;
    const fail = (reason: string): Reply => failureReply('addr', seqid, { reason, retryInSeconds: this.#retryIn(), name: ref });
    if (ref === undefined) return Promise.resolve(fail('no name given'));
    let id: Path;
    try {
      id = pathFromThrift(ref.name);
    } catch (e) {
      return Promise.resolve(fail(errorMessage(e)));
    }
    if (id.isEmpty) return Promise.resolve(fail('empty path'));
    return this.#addrs.poll(id.show, ref.stamp, interest, () => this.#naming.addr(id)).then(
      (obs) => (obs.ok ? { result: OK, bytes: this.#fromTemplate('addr', obs, seqid, () => encodeAddrReply(0, obs.stamp, obs.value)) } : fail(obs.error.message)),
      (e: unknown) => fail(errorMessage(e)),
    );
  }

  #dtab(seqid: number, req: DtabReq, interest: Interest): Promise<Reply> {
    const ns = req.ns;
    const fail = (reason: string): Reply => failureReply('dtab', seqid, { reason });
    return this.#dtabs.poll(ns, req.stamp, interest, () => this.#naming.dtab(ns)).then(
      (obs) => (obs.ok ? reply('dtab', seqid, { ok: { stamp: obs.stamp, dtab: obs.value } }) : fail(obs.error.message)),
      (e: unknown) => fail(errorMessage(e)),
    );
  }

  /**
   * The reply to one poll on `obs`: every poll answered by one observation gets the same bytes
   * but for its seqid, so they are encoded once (with seqid 0) and copied with the seqid set.
   */
  #fromTemplate(method: 'bind' | 'addr', obs: object, seqid: number, encode: () => Buffer): Buffer {
    let t = this.#templates.get(obs);
    if (t === undefined) this.#templates.set(obs, (t = encode()));
    const b = Buffer.allocUnsafe(t.length);
    t.copy(b);
    // Strict binary header: version (4), name length (4), name, seqid.
    b.writeInt32BE(seqid | 0, 8 + method.length);
    return b;
  }

  /**
   * Answered at once; not a long poll. A request with a stamp comes from a client that polls
   * delegations as it polls bindings: as namerd does, it is never answered, so the client keeps the
   * delegation it has until it gives up the request.
   */
  async #delegate(seqid: number, req: DelegateReq, interest: Interest): Promise<Reply | undefined> {
    const signal = interest.signal;
    const fail = (reason: string): Reply => failureReply('delegate', seqid, { reason });
    const d = req.delegation;
    if (d === undefined || d.tree === undefined) return fail('no delegation tree given');
    if (d.stamp.length > 0) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      return undefined;
    }
    const timeout = AbortSignal.timeout(this.#opts.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS);
    const both = AbortSignal.any([signal, timeout]);
    try {
      const tree = delegationRequestPaths(d.tree);
      const extra = readDtab(req.dtab);
      const stored = await this.#naming.dtab(d.ns).toPromise(both);
      const explained = await this.#naming.delegateWith(stored.concat(extra), tree, both);
      return reply('delegate', seqid, { ok: { stamp: DELEGATION_STAMP, tree: delegateTreeToThrift(explained), ns: d.ns } });
    } catch (e) {
      if (signal.aborted) return undefined;
      return fail(timeout.aborted ? `delegation did not finish within ${this.#opts.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS} ms` : errorMessage(e));
    }
  }
}

interface Reply {
  readonly result: { readonly failure: unknown } | { readonly ok: true };
  readonly bytes: Buffer;
}

const OK = { ok: true } as const;

function reply<M extends NamerMethod>(method: M, seqid: number, result: NamerResult<M>): Reply {
  return { result: 'failure' in result ? { failure: result.failure } : OK, bytes: encodeNamerReply(method, seqid, result) };
}

function failureReply<M extends NamerMethod>(method: M, seqid: number, failure: Extract<NamerResult<M>, { failure: unknown }>['failure']): Reply {
  return reply(method, seqid, { failure } as NamerResult<M>);
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
