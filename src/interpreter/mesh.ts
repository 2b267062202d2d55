import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { addIssue, interpreterShape, pathText } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import type { Logger } from '../core/log.js';
import type {
  Path} from '../naming/index.js';
import {
  Activity, type Addr, AddrPending, type Address, BoundName, type Closable, type Dtab, type NameInterpreter, type NameTree, type Namer, Pending, type State, Var, addrFailed, addrJson, failed, ok, readPath, showTree,
} from '../naming/index.js';
import { type PBoundNameTree, type PReplicas, boundTreeFromProto, dtabToProto, pathToProto, replicasToAddr } from '../protocol/mesh/convert.js';
import type { Backoff } from '../service/policy/index.js';
import type { ClosableInterpreter, InterpreterContext, StatefulInterpreter } from './context.js';
import { ResolverDstError } from './errors.js';
import { type FailureThresholdConfig, failureThresholdSchema } from './liveness.js';
import type * as MeshClient from './mesh-client.js';
import type { MeshChannel } from './mesh-client.js';
import { type MeshChannelOptions, type MeshTls, MeshWatch, type MeshWatchStatus } from './mesh-watch.js';
import { dstAddresses, resolverClientTlsSchema, resolverRetrySchema, retryBackoff } from './resolver-http.js';
import { buildTransformers, withTransformers } from './transformer.js';
import './transformers/index.js';

// Also exported from here, beside the mesh interpreter's other config pieces.
export { failureThresholdSchema, type FailureThresholdConfig } from './liveness.js';

/** A root such as `/default`: exactly one segment, the namespace. */
const rootPath = pathText.superRefine((text, ctx) => {
  let size: number;
  try {
    size = readPath(text).size;
  } catch {
    return; // pathText reported it
  }
  if (size !== 1) addIssue(ctx, [], 'must be a path of exactly one segment (the namespace), e.g. /default', { value: text });
});

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
export const meshInterpreterSchema = z.strictObject({
  ...interpreterShape('io.prx.mesh'),
  dst: pathText,
  root: rootPath.default('/default'),
  retry: resolverRetrySchema.prefault({}),
  tls: resolverClientTlsSchema.optional(),
  failureThreshold: failureThresholdSchema.prefault({}),
});
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

interface BindEntry {
  readonly path: string;
  readonly dtab: string;
  readonly watch: MeshWatch;
  tree: string | null;
  updatedAt: Date | undefined;
}

interface AddrEntry {
  readonly id: string;
  readonly watch: MeshWatch;
  addr: Addr;
  updatedAt: Date | undefined;
}

/** What `/<router>/interpreter_state/io.prx.mesh/<root>.json` shows. */
export interface MeshInterpreterState {
  readonly kind: 'io.prx.mesh';
  readonly root: string;
  readonly dst: string;
  readonly closed: boolean;
  readonly liveness: FailureThresholdConfig;
  readonly binds: readonly { path: string; dtab: string; tree: string | null; lastUpdatedAt: string | null; stream: MeshWatchStatus }[];
  readonly addrs: readonly { id: string; addr: unknown; lastUpdatedAt: string | null; stream: MeshWatchStatus }[];
}

/**
 * Binds through the resolver's mesh interface: each binding is a `StreamBoundTree` of
 * (root, path, dtab) — the dtab the router passes, its own plus the request's — and each bound id's
 * addresses a `StreamReplicas`. Streams run while something observes them. A lost stream is
 * reopened with jittered exponential backoff; until then the last values stay in force. A refusal
 * by the resolver before a stream ever had a value fails that binding (or address).
 */
export class MeshInterpreter implements StatefulInterpreter, ClosableInterpreter {
  readonly root: Path;
  readonly dst: Path;
  readonly #liveness: FailureThresholdConfig;
  readonly #backoff: Backoff;
  readonly #channelOptions: MeshChannelOptions;
  readonly #log: Logger | undefined;
  readonly #dstAddresses: Var<State<readonly Address[]>>;
  readonly #dstActivity: Activity<readonly Address[]>;
  readonly #channels = new Map<string, MeshChannel>();
  #client: Promise<typeof MeshClient> | undefined;
  #dstHold: Closable | undefined;
  #holds = 0;
  #next = 0;
  readonly #addrs = new Map<string, Var<Addr>>();
  readonly #bindEntries = new Set<BindEntry>();
  readonly #addrEntries = new Set<AddrEntry>();
  #closed = false;

  constructor(cfg: MeshInterpreterConfig, system: Namer, opts: MeshInterpreterOptions = {}) {
    this.root = readPath(cfg.root);
    this.dst = readPath(cfg.dst);
    this.#liveness = cfg.failureThreshold;
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
    this.#dstAddresses = dstAddresses(system, this.dst);
    this.#dstActivity = new Activity(this.#dstAddresses);
  }

  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> {
    const request = { root: pathToProto(this.root), name: pathToProto(path), dtab: dtabToProto(dtab) };
    return new Activity(
      Var.async<State<NameTree<BoundName>>>(Pending, (set) => {
        let last: Buffer | undefined;
        const watch = this.#newWatch('StreamBoundTree', request, {
          onMessage: (m, bytes) => {
            if (last !== undefined && last.equals(bytes)) return;
            const tree = boundTreeFromProto((m as { tree?: PBoundNameTree | null }).tree, this.#boundName);
            last = bytes;
            entry.tree = showTree(tree, (b) => `${b.idStr}${b.residual.isEmpty ? '' : `+${b.residual.show}`}`);
            entry.updatedAt = new Date();
            set(ok(tree));
          },
          onResolverError: (e) => {
            if (last === undefined) set(failed(e));
          },
        });
        const entry: BindEntry = { path: path.show, dtab: dtab.show, watch, tree: null, updatedAt: undefined };
        return this.#open(this.#bindEntries, entry);
      }),
    );
  }

  /** The live addresses of a bound id (one stream per id, shared by every binding that reaches it). */
  addr(id: Path): Var<Addr> {
    const key = id.show;
    let v = this.#addrs.get(key);
    if (v === undefined) {
      const request = { id: pathToProto(id) };
      v = Var.async<Addr>(AddrPending, (set) => {
        let last: Buffer | undefined;
        const watch = this.#newWatch('StreamReplicas', request, {
          onMessage: (m, bytes) => {
            if (last !== undefined && last.equals(bytes)) return;
            const addr = replicasToAddr(m as PReplicas);
            last = bytes;
            entry.addr = addr;
            entry.updatedAt = new Date();
            set(addr);
          },
          onResolverError: (e) => {
            if (last !== undefined) return;
            entry.addr = addrFailed(e);
            set(entry.addr);
          },
        });
        const entry: AddrEntry = { id: key, watch, addr: AddrPending, updatedAt: undefined };
        return this.#open(this.#addrEntries, entry);
      });
      this.#addrs.set(key, v);
    }
    return v;
  }

  state(): MeshInterpreterState {
    return {
      kind: 'io.prx.mesh',
      root: this.root.show,
      dst: this.dst.show,
      closed: this.#closed,
      liveness: this.#liveness,
      binds: [...this.#bindEntries].map((e) => ({
        path: e.path,
        dtab: e.dtab,
        tree: e.tree,
        lastUpdatedAt: e.updatedAt?.toISOString() ?? null,
        stream: e.watch.status(),
      })),
      addrs: [...this.#addrEntries].map((e) => ({
        id: e.id,
        addr: addrJson(e.addr),
        lastUpdatedAt: e.updatedAt?.toISOString() ?? null,
        stream: e.watch.status(),
      })),
    };
  }

  /** Stops every watch and closes the channels; bindings observed later stay pending. */
  close(): void {
    this.#closed = true;
    for (const e of [...this.#bindEntries, ...this.#addrEntries]) e.watch.stop();
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

  #open<E extends { readonly watch: MeshWatch }>(entries: Set<E>, entry: E): Closable {
    entries.add(entry);
    if (this.#holds++ === 0) this.#dstHold = this.#dstAddresses.observe(() => {});
    if (!this.#closed) entry.watch.start();
    let open = true;
    return {
      close: () => {
        if (!open) return;
        open = false;
        entry.watch.stop();
        entries.delete(entry);
        if (--this.#holds === 0) {
          this.#dstHold?.close();
          this.#dstHold = undefined;
        }
      },
    };
  }

  /** The channel to the next of the resolver's addresses (round robin); loads grpc-js on first use. */
  async #channel(signal: AbortSignal): Promise<MeshChannel> {
    const addresses = await this.#dstActivity.toPromise(signal);
    if (addresses.length === 0) throw new ResolverDstError(this.dst.show, 'has no addresses');
    const a = addresses[this.#next++ % addresses.length] as Address;
    const target = a.host.includes(':') ? `ipv6:[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
    this.#client ??= import('./mesh-client.js');
    const { MeshChannel } = await this.#client;
    let channel = this.#channels.get(target);
    if (channel === undefined) {
      channel = new MeshChannel(target, this.#channelOptions);
      if (this.#closed) channel.close();
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
