import type { ServerTlsConfig } from '../../config/tls.js';
import { PrxError } from '../../core/errors.js';
import { type Dtab, type Path, Var } from '../../naming/index.js';
import { GrpcStatus } from '../../protocol/h2/grpc.js';
import { type GrpcServer, type GrpcServerCall, grpcMessage } from '../../protocol/h2/grpc-server.js';
import { type AccessLog, routerAccessLog } from '../../protocol/http/access-log.js';
import {
  type PDtab, type PPath, addrToReplicas, boundTreeToProto, delegateTreeToProto, dtabFromProto, dtabRsp,
  pathFromProto, pathTreeFromProto,
} from '../../protocol/mesh/convert.js';
import { MESH_METHODS, type MeshMethod, type MeshMethodName, type MeshTypeName, decodeMessage, encodeMessage } from '../../protocol/mesh/messages.js';
import type { Counter } from '../../service/stats/index.js';
import { InterfaceNotListeningError } from '../errors.js';
import { GRPC_SERVER_DEFAULTS, grpcServer, grpcUrl } from './grpc-listener.js';
import type { InterfaceContext } from './interface-kind.js';
import {
  type Frame, FrameWriter, type GrpcError, PENDING_FRAME, endFrame, firstFrame, framesOf, grpcError, statusOf,
} from './mesh-stream.js';

/** Where and how the server listens: the `io.prx.mesh` config object (port 0 picks a free port). */
export interface MeshListenConfig {
  readonly ip: string;
  readonly port: number;
  readonly tls?: ServerTlsConfig | undefined;
  readonly h2AccessLog?: string | undefined;
  readonly h2AccessLogRollPolicy: string;
  readonly h2AccessLogAppend: boolean;
  readonly h2AccessLogRotateCount: number;
}

/** Tuning outside the config (tests shorten timeouts). */
export interface MeshServerOptions {
  /** How long a unary call waits for storage or namers (default 10 s). */
  readonly answerTimeoutMs?: number;
  /** Largest request message accepted (default {@link DEFAULT_MAX_REQUEST_BYTES}); larger: RESOURCE_EXHAUSTED. */
  readonly maxRequestBytes?: number;
  /** HTTP/2 PINGs to clients: period and how long an answer may take before the connection is dropped. */
  readonly keepaliveTimeMs?: number;
  readonly keepaliveTimeoutMs?: number;
}

export const DEFAULT_ANSWER_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_REQUEST_BYTES = GRPC_SERVER_DEFAULTS.maxRequestBytes;

type Request = Record<string, unknown>;
const NO_ROOT = grpcError(GrpcStatus.INVALID_ARGUMENT, 'No namespace specified');
const NO_NAME = grpcError(GrpcStatus.NOT_FOUND, 'No name given');
const ROOT_NOT_FOUND = grpcError(GrpcStatus.NOT_FOUND, 'Root not found');

/** A request that cannot be served: answered with its status at once (never logged as a failure). */
class MeshRequestRefusedError extends PrxError {
  readonly status: GrpcError;
  constructor(status: GrpcError) {
    super('PRX_ERR_MESH_REQUEST_REFUSED', status.details);
    this.status = status;
  }
}

/**
 * The `io.prx.mesh` interface's gRPC server (prx's own, protocol/h2/grpc-server.ts): the Interpreter, Resolver and Delegator
 * services of `io.linkerd.mesh` over the resolver's naming and storage. Streamed views are shared
 * between calls that watch the same thing and encoded once per change.
 */
export class MeshServer {
  readonly #cfg: MeshListenConfig;
  readonly #ctx: InterfaceContext;
  readonly #answerTimeoutMs: number;
  readonly #options: MeshServerOptions;
  #server: GrpcServer | undefined;
  readonly #accessLog: AccessLog | undefined;
  readonly #writers = new Set<FrameWriter>();
  readonly #shared = new Map<string, { readonly key: string; readonly source: Var<Frame>; users: number }>();
  readonly #requests: Counter;
  #address: { ip: string; port: number } | undefined;

  constructor(cfg: MeshListenConfig, ctx: InterfaceContext, options: MeshServerOptions = {}) {
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#answerTimeoutMs = options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS;
    this.#options = options;
    this.#accessLog = routerAccessLog(
      { path: cfg.h2AccessLog, rollPolicy: cfg.h2AccessLogRollPolicy, append: cfg.h2AccessLogAppend, rotateCount: cfg.h2AccessLogRotateCount },
      ctx.log,
    );
    this.#requests = ctx.stats.counter('requests');
    ctx.stats.gauge(['watches'], () => this.#writers.size);
  }

  async listen(): Promise<{ ip: string; port: number }> {
    const o = this.#options;
    const server = await grpcServer('io.prx.mesh', this.#cfg.tls, {
      maxRequestBytes: o.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
      keepaliveTimeMs: o.keepaliveTimeMs ?? GRPC_SERVER_DEFAULTS.keepaliveTimeMs,
      keepaliveTimeoutMs: o.keepaliveTimeoutMs ?? GRPC_SERVER_DEFAULTS.keepaliveTimeoutMs,
    });
    this.#addMethods(server);
    const { port } = await server.listen(this.#cfg.ip, this.#cfg.port);
    this.#server = server;
    this.#address = { ip: this.#cfg.ip, port };
    this.#ctx.log.info({ address: this.#address, kind: 'io.prx.mesh' }, 'io.prx.mesh listening');
    return this.#address;
  }

  get address(): { ip: string; port: number } {
    if (!this.#address) throw new InterfaceNotListeningError('io.prx.mesh');
    return this.#address;
  }

  get url(): string {
    const { ip, port } = this.address;
    return grpcUrl(this.#cfg.tls !== undefined, ip, port);
  }

  /** Open streamed calls. */
  get watchCount(): number {
    return this.#writers.size;
  }

  /** Views shared by open streams (tests check that they are released). */
  get sharedViewCount(): number {
    return this.#shared.size;
  }

  /** The open streams' writers (tests read how many messages each was handed). */
  get writers(): readonly FrameWriter[] {
    return [...this.#writers];
  }

  /**
   * Ends every stream with UNAVAILABLE (clients reconnect, to another resolver if there is one),
   * stops accepting, and drops calls still running after `graceMs`.
   */
  async close(graceMs = 0): Promise<void> {
    if (this.#address === undefined) return;
    this.#address = undefined;
    for (const w of [...this.#writers]) w.end(grpcError(GrpcStatus.UNAVAILABLE, 'the resolver is shutting down'));
    await this.#server?.close(graceMs);
    await this.#accessLog?.close();
  }

  // ---------------------------------------------------------------------------------------------
  // Services

  #addMethods(server: GrpcServer): void {
    const handlers: Record<MeshMethodName, (req: Request) => Var<Frame>> = {
      GetBoundTree: (req) => this.#bind(req),
      StreamBoundTree: (req) => this.#bind(req),
      GetReplicas: (req) => this.#replicas(req),
      StreamReplicas: (req) => this.#replicas(req),
      GetDtab: (req) => this.#dtab(req),
      StreamDtab: (req) => this.#dtab(req),
      GetDelegateTree: (req) => this.#delegate(req),
      StreamDelegateTree: (req) => this.#delegate(req),
    };
    for (const [name, m] of Object.entries(MESH_METHODS) as [MeshMethodName, MeshMethod][]) {
      const view = handlers[name];
      server.handle(m.path, (call, bytes) => {
        this.#begin(m, call);
        let request: Request;
        try {
          request = decodeMessage<Request>(m.request, bytes);
        } catch (e) {
          // As grpc-js answered a request it could not deserialize.
          call.end(GrpcStatus.INTERNAL, `Error deserializing request: ${e instanceof Error ? e.message : String(e)}`);
          return;
        }
        if (m.streaming) this.#serveStream(m, call, request, view);
        else void this.#serveUnary(call, request, view);
      });
    }
  }

  async #serveUnary(call: GrpcServerCall, request: Request, view: (req: Request) => Var<Frame>): Promise<void> {
    const source = this.#view(request, view);
    const f = source instanceof MeshRequestRefusedError ? endFrame(source.status) : await firstFrame(source, this.#answerTimeoutMs);
    if (f.kind === 'message') {
      call.send(f.bytes);
      call.end(GrpcStatus.OK);
    } else call.end(f.status.code, f.status.details);
  }

  #serveStream(m: MeshMethod, call: GrpcServerCall, request: Request, view: (req: Request) => Var<Frame>): void {
    const source = this.#view(request, view);
    if (source instanceof MeshRequestRefusedError) {
      call.end(source.status.code, source.status.details);
      return;
    }
    // Views are shared by what they show: the request message's bytes identify it.
    const key = `${m.path}\n${encodeMessage(m.request, request).toString('latin1')}`;
    let shared = this.#shared.get(key);
    if (shared === undefined) {
      shared = { key, source, users: 0 };
      this.#shared.set(key, shared);
    }
    // The callback keeps the entry (and its key), not this call's copy of the key.
    const entry = shared;
    entry.users++;
    let writer: FrameWriter | undefined = undefined;
    writer = new FrameWriter(call, entry.source, () => {
      if (writer !== undefined) this.#writers.delete(writer);
      if (--entry.users === 0 && this.#shared.get(entry.key) === entry) this.#shared.delete(entry.key);
    }, m === MESH_METHODS.StreamDelegateTree);
    if (!writer.ended) this.#writers.add(writer);
  }

  /** The view a request asks for, or why it is refused (a bad request is never a thrown error). */
  #view(req: Request, view: (req: Request) => Var<Frame>): Var<Frame> | MeshRequestRefusedError {
    try {
      return view(req);
    } catch (e) {
      if (e instanceof MeshRequestRefusedError) return e;
      return new MeshRequestRefusedError(statusOf(e));
    }
  }

  #begin(m: MeshMethod, call: GrpcServerCall): void {
    this.#requests.incr();
    this.#ctx.stats.counter(m.name, 'requests').incr();
    const log = this.#accessLog;
    if (log === undefined) return;
    const userAgent = call.headers['user-agent'];
    const authority = call.headers[':authority'];
    log.log({
      host: typeof authority === 'string' ? authority : '-',
      remoteHost: call.remoteAddress ?? '-',
      time: Date.now(),
      method: 'POST',
      uri: m.path,
      protocol: 'HTTP/2',
      status: 200,
      bytes: '-',
      ...(typeof userAgent === 'string' ? { userAgent } : {}),
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Views

  #bind(req: Request): Var<Frame> {
    const ns = namespaceOf(req['root']);
    const name = nameOf(req['name']);
    const extra = dtabFromProto(req['dtab'] as PDtab | null);
    return framesOf(
      this.#ctx.naming.bind(ns, extra, name),
      (tree) => message('BoundTreeRsp', { tree: boundTreeToProto(tree) }),
      (e) => statusOf(e, extra),
    );
  }

  #replicas(req: Request): Var<Frame> {
    const id = pathFromProto(req['id'] as PPath | null);
    // Linkerd answers a missing id with a failed result rather than an error status.
    if (id.isEmpty) return constant(message('Replicas', { failed: { message: 'No ID provided' } }));
    // A failure to resolve is a value of the stream (Replicas.failed), not its end.
    return this.#ctx.naming.addr(id).states.map((s): Frame => {
      switch (s.kind) {
        case 'pending':
          return message('Replicas', { pending: {} });
        case 'ok':
          return message('Replicas', addrToReplicas(s.value));
        case 'failed':
          return message('Replicas', { failed: { message: s.error.message } });
      }
    });
  }

  #dtab(req: Request): Var<Frame> {
    const ns = namespaceOf(req['root']);
    return framesOf(this.#ctx.store.observe(ns), (v) => (v === undefined ? endFrame(ROOT_NOT_FOUND) : message('DtabRsp', dtabRsp(v.dtab, v.version))));
  }

  /** Delegation answers once (StreamDelegateTree too, as in Linkerd). */
  #delegate(req: Request): Var<Frame> {
    const ns = namespaceOf(req['root']);
    if (req['tree'] == null) throw new MeshRequestRefusedError(NO_NAME);
    const tree = pathTreeFromProto(req['tree']);
    const extra: Dtab = dtabFromProto(req['dtab'] as PDtab | null);
    const naming = this.#ctx.naming;
    return naming.dtab(ns).states.flatMap((s): Var<Frame> => {
      if (s.kind === 'pending') return constant(PENDING_FRAME);
      if (s.kind === 'failed') return constant(endFrame(statusOf(s.error)));
      const dtab = s.value.concat(extra);
      return asyncFrame((signal) =>
        naming.delegateWith(dtab, tree, signal).then(
          (t) => message('DelegateTreeRsp', { tree: delegateTreeToProto(t) }),
          (e: unknown) => endFrame(statusOf(e, extra)),
        ),
      );
    });
  }
}

function message(type: MeshTypeName, value: object): Frame {
  return { kind: 'message', bytes: grpcMessage(encodeMessage(type, value)) };
}

function constant(f: Frame): Var<Frame> {
  return Var.value(f);
}

/** A frame computed once by `run`, abandoned (its signal aborted) when nobody watches any more. */
function asyncFrame(run: (signal: AbortSignal) => Promise<Frame>): Var<Frame> {
  return Var.async<Frame>(PENDING_FRAME, (set) => {
    const ac = new AbortController();
    void run(ac.signal).then((f) => {
      if (!ac.signal.aborted) set(f);
    });
    return { close: () => ac.abort() };
  });
}

/** The namespace a request's `root` names (exactly one segment), or the status refusing it. */
function namespaceOf(root: unknown): string {
  if (root == null) throw new MeshRequestRefusedError(NO_ROOT);
  const path = pathFromProto(root);
  if (path.size !== 1) throw new MeshRequestRefusedError(grpcError(GrpcStatus.INVALID_ARGUMENT, `Invalid root: \`${path.show}\` must have exactly one segment`));
  return path.elemUtf8(0);
}

function nameOf(name: unknown): Path {
  const path = name == null ? undefined : pathFromProto(name);
  if (path === undefined || path.isEmpty) throw new MeshRequestRefusedError(NO_NAME);
  return path;
}
