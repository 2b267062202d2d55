import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { addIssue, interpreterShape, pathText, lazySchema } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import type { Logger } from '../core/log.js';
import { type Addr, BoundName, type Dtab, type NameInterpreter, type NameTree, type Namer, type Path, readPath, showTree } from '../naming/index.js';
import { type PBoundNameTree, type PReplicas, boundTreeFromProto, dtabToProto, pathToProto, replicasToAddr } from '../protocol/mesh/convert.js';
import type { Backoff } from '../service/policy/index.js';
import type { InterpreterContext } from './context.js';
import { failureThresholdSchema } from './liveness.js';
import type * as MeshClient from './mesh-client.js';
import type { MeshChannel } from './mesh-client.js';
import { type MeshChannelOptions, type MeshTls, MeshWatch, type MeshWatchStatus } from './mesh-watch.js';
import { resolverClientTlsSchema, resolverRetrySchema, retryBackoff } from './resolver-http.js';
import { type LinkHandlers, type LinkState, ResolverLink } from './resolver-link.js';
import { buildTransformers, withTransformers } from './transformer.js';
import './transformers/index.js';

// Also exported from here, beside the mesh interpreter's other config pieces.
export { failureThresholdSchema, type FailureThresholdConfig } from './liveness.js';

/** A root such as `/default`: exactly one segment, the namespace. */
const rootPath = lazySchema(() => pathText.superRefine((text, ctx) => {
  let size: number;
  try {
    size = readPath(text).size;
  } catch {
    return; // pathText reported it
  }
  if (size !== 1) addIssue(ctx, [], 'must be a path of exactly one segment (the namespace), e.g. /default', { value: text });
}));

/**
 * `io.prx.mesh`: names are bound by the resolver over its gRPC mesh interface (Linkerd's
 * `io.l5d.mesh`); the proxy's own namers are unused, its transformers still apply.
 *
 * ```yaml
 * interpreter:
 *   kind: io.prx.mesh
 *   dst: /$/inet/127.0.0.1/4321
 *   root: /default
 *   retry: {baseSeconds: 5, maxSeconds: 600}
 *   tls: {commonName: resolver.example, caCert: /etc/prx/ca.pem}
 *   failureThreshold: {minPeriodMs: 5000, closeTimeoutMs: 4000}
 * ```
 *
 * Unlike Linkerd, the liveness check is always on (with the defaults above when
 * `failureThreshold` is absent): a watch that stalls silently is the failure this link exists to avoid.
 */
export const meshInterpreterSchema = lazySchema(() => z.strictObject({
  ...interpreterShape('io.prx.mesh'),
  dst: pathText,
  root: rootPath.default('/default'),
  retry: resolverRetrySchema.prefault({}),
  tls: resolverClientTlsSchema.optional(),
  failureThreshold: failureThresholdSchema.prefault({}),
}));
export type MeshInterpreterConfig = z.output<typeof meshInterpreterSchema>;

/** Tuning outside the config (tests use it). */
export interface MeshInterpreterOptions {
  /** Replaces the delays `retry` configures (and grpc-js's reconnection delays). */
  readonly backoff?: Backoff;
  readonly reconnectMs?: { readonly initialMs: number; readonly maxMs: number };
  readonly log?: Logger;
}

/** Largest message accepted from the resolver: bound trees and replica sets of large clusters fit. */
export const MAX_MESH_MESSAGE_BYTES = 16 * 1024 * 1024;

/** What `/<router>/interpreter_state/io.prx.mesh/<root>.json` shows. */
export interface MeshInterpreterState extends LinkState {
  readonly kind: 'io.prx.mesh';
  readonly root: string;
  readonly dst: string;
  readonly binds: readonly { path: string; dtab: string; tree: string | null; lastUpdatedAt: string | null; stream: MeshWatchStatus }[];
  readonly addrs: readonly { id: string; addr: unknown; lastUpdatedAt: string | null; stream: MeshWatchStatus }[];
}

/**
 * Binds through the resolver's mesh interface: each binding is a `StreamBoundTree` of
 * (root, path, dtab) — the dtab the router passes, its own plus the request's — and each bound id's
 * addresses a `StreamReplicas`. Streams run while something observes them. A lost stream is
 * reopened with jittered exponential backoff; until then the last values stay in force (see
 * {@link ResolverLink}).
 */
export class MeshInterpreter extends ResolverLink {
  readonly root: Path;
  protected readonly statusKey = 'stream';
  readonly #backoff: Backoff;
  readonly #channelOptions: MeshChannelOptions;
  readonly #log: Logger | undefined;
  readonly #channels = new Map<string, MeshChannel>();
  #client: Promise<typeof MeshClient> | undefined;

  constructor(cfg: MeshInterpreterConfig, system: Namer, opts: MeshInterpreterOptions = {}) {
    super(system, readPath(cfg.dst), cfg.failureThreshold);
    this.root = readPath(cfg.root);
    this.#backoff = opts.backoff ?? retryBackoff(cfg.retry);
    this.#log = opts.log;
    const tls: MeshTls | undefined = cfg.tls && {
      commonName: cfg.tls.commonName,
      ...(cfg.tls.caCert === undefined ? {} : { ca: readFileSync(cfg.tls.caCert) }),
    };
    this.#channelOptions = {
      keepalive: { timeMs: cfg.failureThreshold.minPeriodMs, timeoutMs: cfg.failureThreshold.closeTimeoutMs },
      reconnect: opts.reconnectMs ?? { initialMs: cfg.retry.baseSeconds * 1000, maxMs: cfg.retry.maxSeconds * 1000 },
      maxMessageBytes: MAX_MESH_MESSAGE_BYTES,
      tls,
    };
  }

  protected bindWatch(dtab: Dtab, path: Path, h: LinkHandlers<NameTree<BoundName>>): MeshWatch {
    const request = { root: pathToProto(this.root), name: pathToProto(path), dtab: dtabToProto(dtab) };
    let last: Buffer | undefined;
    return this.#newWatch('StreamBoundTree', request, {
      onMessage: (m, bytes) => {
        if (last !== undefined && last.equals(bytes)) return;
        const tree = boundTreeFromProto((m as { tree?: PBoundNameTree | null }).tree, this.#boundName);
        last = bytes;
        h.value(tree, showTree(tree, (b) => `${b.idStr}${b.residual.isEmpty ? '' : `+${b.residual.show}`}`));
      },
      onResolverError: (e) => h.refused(e),
    });
  }

  protected addrWatch(id: Path, h: LinkHandlers<Addr>): MeshWatch {
    const request = { id: pathToProto(id) };
    let last: Buffer | undefined;
    return this.#newWatch('StreamReplicas', request, {
      onMessage: (m, bytes) => {
        if (last !== undefined && last.equals(bytes)) return;
        const addr = replicasToAddr(m as PReplicas);
        last = bytes;
        h.value(addr, undefined);
      },
      onResolverError: (e) => h.refused(e),
    });
  }

  protected stateHead(): Readonly<Record<string, unknown>> {
    return { kind: 'io.prx.mesh', root: this.root.show, dst: this.dst.show };
  }

  override state(): MeshInterpreterState {
    return super.state() as MeshInterpreterState;
  }

  /** Stops every watch and closes the channels; bindings observed later stay pending. */
  override close(): void {
    super.close();
    for (const c of this.#channels.values()) c.close();
    this.#channels.clear();
  }

  readonly #boundName = (id: Path, residual: Path): BoundName => new BoundName(id, this.addr(id), residual);

  #newWatch(
    method: 'StreamBoundTree' | 'StreamReplicas',
    request: object,
    handlers: Pick<ConstructorParameters<typeof MeshWatch>[0], 'onMessage' | 'onResolverError'>,
  ): MeshWatch {
    return new MeshWatch({
      method,
      request,
      channel: (signal) => this.#channel(signal),
      backoff: this.#backoff,
      log: this.#log,
      ...handlers,
    });
  }

  /** The channel to the next of the resolver's addresses (round robin); loads grpc-js on first use. */
  async #channel(signal: AbortSignal): Promise<MeshChannel> {
    const a = await this.nextAddress(signal);
    const target = a.host.includes(':') ? `ipv6:[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
    this.#client ??= import('./mesh-client.js');
    const { MeshChannel } = await this.#client;
    let channel = this.#channels.get(target);
    if (channel === undefined) {
      channel = new MeshChannel(target, this.#channelOptions);
      if (this.closed) channel.close();
      else this.#channels.set(target, channel);
    }
    return channel;
  }
}

registerKind({
  family: 'interpreter',
  kind: 'io.prx.mesh',
  schema: meshInterpreterSchema,
  create: (cfg: MeshInterpreterConfig, ctx: InterpreterContext): NameInterpreter =>
    withTransformers(
      new MeshInterpreter(cfg, ctx.system, ctx.log === undefined ? {} : { log: ctx.log }),
      buildTransformers(cfg.transformers, ctx),
    ),
});
