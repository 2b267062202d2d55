import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { type Activity, type Addr, type BoundName, type Dtab, type NameTree, type Path, type State, readDtab } from '../../naming/index.js';
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
import { type Observation, ObserverCache, type Reading, Stamper } from './observer-cache.js';

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
   * The reply message to call `msg`; undefined when `signal` aborted first (the client discarded
   * it) or when `msg` is not a thrift call at all (the caller answers at its own level).
   */
  async handle(msg: Buffer, signal: AbortSignal): Promise<Buffer | undefined> {
    let call: NamerCall;
    try {
      call = decodeNamerCall(msg);
    } catch (e) {
      return protocolErrorReply(msg, e);
    }
    if (call.method === undefined) return encodeUnknownMethod(call.name, call.seqid);
    this.#counters[call.method].requests.incr();
    const reply = await this.#dispatch(call, signal);
    if (reply === undefined || signal.aborted) return undefined;
    if ('failure' in reply.result) this.#counters[call.method].failures.incr();
    return reply.bytes;
  }

  close(): void {
    this.#bindings.close();
    this.#addrs.close();
    this.#dtabs.close();
  }

  #dispatch(call: Exclude<NamerCall, { method: undefined }>, signal: AbortSignal): Promise<Reply | undefined> {
    switch (call.method) {
      case 'bind':
        return this.#bind(call.seqid, call.req, signal);
      case 'addr':
        return this.#addr(call.seqid, call.req, signal);
      case 'delegate':
        return this.#delegate(call.seqid, call.req, signal);
      case 'dtab':
        return this.#dtab(call.seqid, call.req, signal);
    }
  }

  /** Seconds a client is told to wait after a failure: the base plus up to the jitter. */
  #retryIn(): number {
    return this.#opts.retryBaseSecs + Math.floor(this.#random() * (this.#opts.retryJitterSecs + 1));
  }

  async #bind(seqid: number, req: BindReq, signal: AbortSignal): Promise<Reply | undefined> {
    const ref = req.name;
    const fail = (reason: string): Reply => failureReply('bind', seqid, { reason, retryInSeconds: this.#retryIn(), name: ref, ns: ref?.ns ?? '' });
    if (ref === undefined) return fail('no name given');
    let path: Path;
    let extra: Dtab;
    try {
      path = pathFromThrift(ref.name);
      extra = readDtab(req.dtab);
    } catch (e) {
      return fail(errorMessage(e));
    }
    if (path.isEmpty) return fail('empty path');
    const ns = ref.ns;
    const obs = await this.#poll(this.#bindings, `${ns}\n${extra.show}\n${path.show}`, ref, signal, () => this.#naming.bind(ns, extra, path));
    if (obs === undefined) return undefined;
    if ('failure' in obs) return fail(obs.failure);
    if (!obs.ok) return fail(obs.error.message);
    return { result: OK, bytes: encodeBindReply(seqid, obs.stamp, obs.value, ns) };
  }

  async #addr(seqid: number, req: AddrReq, signal: AbortSignal): Promise<Reply | undefined> {
    const ref = req.name;
    const fail = (reason: string): Reply => failureReply('addr', seqid, { reason, retryInSeconds: this.#retryIn(), name: ref });
    if (ref === undefined) return fail('no name given');
    let id: Path;
    try {
      id = pathFromThrift(ref.name);
    } catch (e) {
      return fail(errorMessage(e));
    }
    if (id.isEmpty) return fail('empty path');
    const obs = await this.#poll(this.#addrs, id.show, ref, signal, () => this.#naming.addr(id));
    if (obs === undefined) return undefined;
    if ('failure' in obs) return fail(obs.failure);
    if (!obs.ok) return fail(obs.error.message);
    return { result: OK, bytes: encodeAddrReply(seqid, obs.stamp, obs.value) };
  }

  async #dtab(seqid: number, req: DtabReq, signal: AbortSignal): Promise<Reply | undefined> {
    const ns = req.ns;
    const fail = (reason: string): Reply => failureReply('dtab', seqid, { reason });
    const obs = await this.#poll(this.#dtabs, ns, { stamp: req.stamp }, signal, () => this.#naming.dtab(ns));
    if (obs === undefined) return undefined;
    if ('failure' in obs) return fail(obs.failure);
    if (!obs.ok) return fail(obs.error.message);
    return reply('dtab', seqid, { ok: { stamp: obs.stamp, dtab: obs.value } });
  }

  /**
   * Answered at once; not a long poll. A request with a stamp comes from a client that polls
   * delegations as it polls bindings: as namerd does, it is never answered, so the client keeps the
   * delegation it has until it gives up the request.
   */
  async #delegate(seqid: number, req: DelegateReq, signal: AbortSignal): Promise<Reply | undefined> {
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

  /** A poll on `cache`; undefined when the client gave it up, `{failure}` when the cache refused it. */
  async #poll<V>(
    cache: ObserverCache<V>,
    key: string,
    ref: Pick<NameRef, 'stamp'>,
    signal: AbortSignal,
    source: () => Activity<unknown>,
  ): Promise<Observation<V> | { readonly failure: string } | undefined> {
    const aborted = new Promise<undefined>((resolve) => signal.addEventListener('abort', () => resolve(undefined), { once: true }));
    try {
      return await Promise.race([cache.poll(key, ref.stamp, signal, source), aborted]);
    } catch (e) {
      this.#opts.log?.debug({ err: errorMessage(e), key }, 'thrift name interface refused a poll');
      return { failure: errorMessage(e) };
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
