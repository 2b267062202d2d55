import { isIPv4 } from 'node:net';
import type { ServerTlsConfig } from '../../config/tls.js';
import { type Addr, type BoundName, type Closable, Dtab, Path, Var, evalTree, readPath } from '../../naming/index.js';
import { GrpcStatus } from '../../protocol/h2/grpc.js';
import { type GrpcCallObserver, type GrpcServer, type GrpcServerCall, grpcMessage } from '../../protocol/h2/grpc-server.js';
import { decodeMessage, encodeMessage } from '../../protocol/mesh/messages.js';
import type { Counter } from '../../service/stats/index.js';
import { InterfaceNotListeningError } from '../errors.js';
import { GRPC_SERVER_DEFAULTS, grpcServer, grpcUrl } from './grpc-listener.js';
import type { InterfaceContext } from './interface-kind.js';

/** Where the server listens and what it binds: the `io.prx.destination` config object (port 0 picks a free port). */
export interface DestinationListenConfig {
  readonly ip: string;
  readonly port: number;
  readonly tls?: ServerTlsConfig | undefined;
  /** Path prefix of the bound names, e.g. `/svc`. */
  readonly prefix: string;
  /** Namespace whose dtab binds them. */
  readonly namespace: string;
}

/** Tuning outside the config (tests). */
export interface DestinationServerOptions {
  readonly keepaliveTimeMs?: number;
  readonly keepaliveTimeoutMs?: number;
}

/** What a destination currently resolves to: not known yet, nothing (Neg or failure), or IPv4 endpoints by `ip:port`. */
type Endpoints =
  | { readonly kind: 'pending' }
  | { readonly kind: 'none' }
  | { readonly kind: 'bound'; readonly addrs: ReadonlyMap<string, TcpAddr> };
interface TcpAddr {
  readonly ip: number;
  readonly port: number;
}

const PENDING: Endpoints = { kind: 'pending' };
const NONE: Endpoints = { kind: 'none' };
const GET_PATH = '/io.linkerd.proxy.destination.Destination/Get';
const PROFILE_PATH = '/io.linkerd.proxy.destination.Destination/GetProfile';

/**
 * The `io.prx.destination` interface's gRPC server. Each `Get` call keeps which published set its
 * client has been told and sends the messages that take it to the current one, one at a time: a
 * slow client gets one catch-up diff, never a queue of every change. Calls on the same service
 * share one observation, and the messages of each step are encoded once for all of them.
 */
export class DestinationServer {
  readonly #cfg: DestinationListenConfig;
  readonly #ctx: InterfaceContext;
  readonly #options: DestinationServerOptions;
  #server: GrpcServer | undefined;
  readonly #prefix: Path;
  readonly #streams = new Set<{ end(code: number, details: string): void }>();
  readonly #shared = new Map<string, SharedDestination>();
  readonly #requests: Counter;
  #address: { ip: string; port: number } | undefined;

  constructor(cfg: DestinationListenConfig, ctx: InterfaceContext, options: DestinationServerOptions = {}) {
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#prefix = readPath(cfg.prefix);
    this.#options = options;
    this.#requests = ctx.stats.counter('requests');
    ctx.stats.gauge(['watches'], () => this.#streams.size);
  }

  async listen(): Promise<{ ip: string; port: number }> {
    const server = await grpcServer('io.prx.destination', this.#cfg.tls, {
      maxRequestBytes: GRPC_SERVER_DEFAULTS.maxRequestBytes,
      keepaliveTimeMs: this.#options.keepaliveTimeMs ?? GRPC_SERVER_DEFAULTS.keepaliveTimeMs,
      keepaliveTimeoutMs: this.#options.keepaliveTimeoutMs ?? GRPC_SERVER_DEFAULTS.keepaliveTimeoutMs,
    });
    server.handle(GET_PATH, (call, bytes) => this.#serve(call, bytes, false));
    server.handle(PROFILE_PATH, (call, bytes) => this.#serve(call, bytes, true));
    const { port } = await server.listen(this.#cfg.ip, this.#cfg.port);
    this.#server = server;
    this.#address = { ip: this.#cfg.ip, port };
    this.#ctx.log.info({ address: this.#address, kind: 'io.prx.destination' }, 'io.prx.destination listening');
    return this.#address;
  }

  get address(): { ip: string; port: number } {
    if (!this.#address) throw new InterfaceNotListeningError('io.prx.destination');
    return this.#address;
  }

  get url(): string {
    const { ip, port } = this.address;
    return grpcUrl(this.#cfg.tls !== undefined, ip, port);
  }

  get watchCount(): number {
    return this.#streams.size;
  }

  get sharedViewCount(): number {
    return this.#shared.size;
  }

  async close(graceMs = 0): Promise<void> {
    if (this.#address === undefined) return;
    this.#address = undefined;
    for (const s of [...this.#streams]) s.end(GrpcStatus.UNAVAILABLE, 'the resolver is shutting down');
    await this.#server?.close(graceMs);
  }

  #serve(call: GrpcServerCall, bytes: Buffer, profile: boolean): void {
    this.#requests.incr();
    let request: GetDestination;
    try {
      request = decodeMessage<GetDestination>('GetDestination', bytes);
    } catch (e) {
      call.end(GrpcStatus.INTERNAL, `Error deserializing request: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    if (profile) this.#profile(call);
    else this.#get(call, request);
  }

  #get(call: GrpcServerCall, request: GetDestination): void {
    const { scheme, path } = request;
    if (!scheme.includes('k8s')) {
      call.end(GrpcStatus.UNIMPLEMENTED, `Unknown scheme: ${scheme || 'unknown'}`);
      return;
    }
    const service = serviceOf(path);
    if (service === undefined) {
      call.end(GrpcStatus.UNIMPLEMENTED, 'Empty request path');
      return;
    }
    const name = this.#prefix.concat(Path.utf8(service));
    const key = name.show;
    let shared = this.#shared.get(key);
    if (shared === undefined) {
      shared = new SharedDestination(key, endpointsOf(this.#ctx, this.#cfg.namespace, name));
      this.#shared.set(key, shared);
    }
    // The callback keeps the entry (and its key), not this call's copy of the key.
    const entry = shared;
    entry.users++;
    const stream = new DiffStream(call, entry, () => {
      this.#streams.delete(stream);
      if (--entry.users === 0 && this.#shared.get(entry.key) === entry) this.#shared.delete(entry.key);
    });
    if (!stream.ended) this.#streams.add(stream);
  }

  /** One empty profile, and the stream stays open (clients treat an ended profile stream as a failure). */
  #profile(call: GrpcServerCall): void {
    const stream = new ProfileStream(call, this.#streams);
    this.#streams.add(stream);
    call.send(EMPTY_PROFILE);
  }
}

const EMPTY_PROFILE = grpcMessage(encodeMessage('DestinationProfile', {}));

/** A `GetProfile` call: open until the client goes or the server ends it. */
class ProfileStream implements GrpcCallObserver {
  readonly #call: GrpcServerCall;
  readonly #streams: Set<unknown>;

  constructor(call: GrpcServerCall, streams: Set<unknown>) {
    this.#call = call;
    this.#streams = streams;
    call.observer = this;
  }

  end(code: number, details: string): void {
    this.#streams.delete(this);
    this.#call.end(code, details);
  }

  sent(): void {}

  cancelled(): void {
    this.#streams.delete(this);
  }
}

interface GetDestination {
  readonly scheme: string;
  readonly path: string;
}

/** `web.default.svc.cluster.local:8080` → `web`; undefined when there is no name. */
function serviceOf(authority: string): string | undefined {
  const dot = authority.indexOf('.');
  let name = dot < 0 ? authority : authority.slice(0, dot);
  const colon = name.indexOf(':');
  if (colon >= 0) name = name.slice(0, colon);
  return name === '' ? undefined : name;
}

/** The endpoints `name` binds to through `ns`'s dtab: every bound name the tree selects, their addresses merged. */
function endpointsOf(ctx: InterfaceContext, ns: string, name: Path): Var<Endpoints> {
  return ctx.naming.bind(ns, Dtab.empty, name).states.flatMap((s): Var<Endpoints> => {
    if (s.kind === 'pending') return Var.value(PENDING);
    if (s.kind === 'failed') return Var.value(NONE);
    const selected = evalTree(s.value);
    if (selected === undefined) return Var.value(NONE);
    return Var.collect([...selected].map((b: BoundName) => b.addr)).map(foldAddrs);
  });
}

/** Bound sets merge; a bound set wins over Neg or failure; all pending is pending; otherwise none. */
function foldAddrs(addrs: readonly Addr[]): Endpoints {
  if (addrs.length === 0) return { kind: 'bound', addrs: new Map() };
  const bound = addrs.filter((a) => a.kind === 'bound');
  if (bound.length === 0) return addrs.every((a) => a.kind === 'pending') ? PENDING : NONE;
  const out = new Map<string, TcpAddr>();
  for (const a of bound) {
    for (const x of a.addresses) {
      // The API's addresses are IPv4 here, as in Linkerd's implementation.
      if (!isIPv4(x.host)) continue;
      const [p, q, r, t] = x.host.split('.').map(Number) as [number, number, number, number];
      out.set(`${x.host}:${x.port}`, { ip: ((p << 24) | (q << 16) | (r << 8) | t) >>> 0, port: x.port });
    }
  }
  return { kind: 'bound', addrs: out };
}

const tcp = (a: TcpAddr): object => ({ ip: { ipv4: a.ip }, port: a.port });

/** One published value of a destination's endpoints (a new object per change, so calls compare by identity). */
interface Published {
  readonly endpoints: Endpoints;
}

const NO_MESSAGES: readonly Buffer[] = Object.freeze([]);
const NO_ADDRS: ReadonlyMap<string, TcpAddr> = new Map();

/**
 * The messages that take a client told `from` (undefined: nothing yet) to `to`: an `add` of what
 * is new and a `remove` of what is gone; `no_endpoints{exists:false}` when the destination is
 * gone; `no_endpoints{exists:true}` when it exists with no endpoints and the client had none.
 */
function diffMessages(from: Endpoints | undefined, to: Endpoints): readonly Buffer[] {
  if (to.kind === 'pending') return NO_MESSAGES;
  if (to.kind === 'none') return from?.kind === 'none' ? NO_MESSAGES : [update({ no_endpoints: { exists: false } })];
  const told = from?.kind === 'bound' ? from.addrs : NO_ADDRS;
  const out: Buffer[] = [];
  const added = [...to.addrs].filter(([k]) => !told.has(k));
  if (added.length > 0) out.push(update({ add: { addrs: added.map(([, a]) => ({ addr: tcp(a), weight: 1 })) } }));
  const removed = [...told].filter(([k]) => !to.addrs.has(k));
  if (removed.length > 0) out.push(update({ remove: { addrs: removed.map(([, a]) => tcp(a)) } }));
  // The destination exists but has no endpoints.
  if (out.length === 0 && from?.kind !== 'bound') out.push(update({ no_endpoints: { exists: true } }));
  return out;
}

/** An `Update` message, length-prefixed for the wire. */
function update(value: object): Buffer {
  return grpcMessage(encodeMessage('Update', value));
}

/**
 * The calls on one service: one observation of its endpoints, and the messages from each value a
 * client may have been told to the current one, encoded once for every client that needs them
 * (at a change, all clients in step share one encoding).
 */
class SharedDestination {
  readonly key: string;
  readonly source: Var<Published>;
  users = 0;
  #to: Published | undefined;
  readonly #steps = new Map<Published | undefined, readonly Buffer[]>();

  constructor(key: string, endpoints: Var<Endpoints>) {
    this.key = key;
    this.source = endpoints.map((e): Published => ({ endpoints: e }));
  }

  /** The messages from `from` to `to` (the current value). */
  steps(from: Published | undefined, to: Published): readonly Buffer[] {
    if (this.#to !== to) {
      this.#to = to;
      this.#steps.clear();
    }
    let messages = this.#steps.get(from);
    if (messages === undefined) {
      messages = diffMessages(from?.endpoints, to.endpoints);
      this.#steps.set(from, messages);
    }
    return messages;
  }
}

/** One `Get` call: the value its client has been told, and the messages still to send to reach the current one. */
class DiffStream implements GrpcCallObserver {
  readonly #call: GrpcServerCall;
  readonly #shared: SharedDestination;
  readonly #onEnd: () => void;
  #told: Published | undefined;
  #current: Published | undefined;
  #queue: readonly Buffer[] = NO_MESSAGES;
  #next = 0;
  #writing = false;
  #sub: Closable | undefined;
  #done = false;

  constructor(call: GrpcServerCall, shared: SharedDestination, onEnd: () => void) {
    this.#call = call;
    this.#shared = shared;
    this.#onEnd = onEnd;
    call.observer = this;
    const sub = shared.source.observe((p) => {
      this.#current = p;
      this.#pump();
    });
    if (this.#done) sub.close();
    else this.#sub = sub;
  }

  get ended(): boolean {
    return this.#done;
  }

  end(code: number, details: string): void {
    if (this.#done) return;
    this.#finish();
    this.#call.end(code, details);
  }

  sent(): void {
    this.#writing = false;
    this.#pump();
  }

  cancelled(): void {
    this.#finish();
  }

  /**
   * Sends the next message toward the current value, if any. A change that arrives while a step's
   * messages are being sent waits for them: the client then gets one diff to the newest value.
   */
  #pump(): void {
    while (!this.#done && !this.#writing) {
      if (this.#next >= this.#queue.length) {
        const current = this.#current;
        if (current === undefined || current === this.#told || current.endpoints.kind === 'pending') return;
        this.#queue = this.#shared.steps(this.#told, current);
        this.#next = 0;
        this.#told = current;
        if (this.#queue.length === 0) return;
      }
      const message = this.#queue[this.#next++] as Buffer;
      this.#writing = !this.#call.send(message);
    }
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#queue = NO_MESSAGES;
    this.#sub?.close();
    this.#sub = undefined;
    this.#onEnd();
  }
}
