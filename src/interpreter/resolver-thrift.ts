import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { interpreterShape, pathText, shortName } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import type { Logger } from '../core/log.js';
import {
  Activity, type Addr, AddrPending, type Address, BoundName, type Closable, type Dtab, type NameInterpreter, type NameTree, type Namer, type Path,
  Pending, type State, Var, addrFailed, addrJson, failed, ok, readPath, showTree,
} from '../naming/index.js';
import { ThriftMuxNamerLink } from '../protocol/thriftmux/namer-link.js';
import { addrFromThrift, boundTreeFromThrift, pathToThrift } from '../protocol/thrift/name-interface/convert.js';
import type { Backoff } from '../service/policy/index.js';
import type { ClientTlsSettings } from '../service/tls-settings.js';
import type { ClosableInterpreter, InterpreterContext, StatefulInterpreter } from './context.js';
import { ResolverDstError, ResolverThriftError } from './errors.js';
import { type FailureThresholdConfig, failureThresholdSchema } from './mesh.js';
import { dstAddresses, resolverClientTlsSchema, resolverRetrySchema, retryBackoff } from './resolver-http.js';
import { type PolledMethod, ThriftPollWatch, type PollWatchStatus } from './thrift-poll-watch.js';
import { buildTransformers, withTransformers } from './transformer.js';
import './transformers/index.js';

/**
 * `io.prx.resolver`: names are bound by the resolver service over its thrift name interface
 * (`io.prx.thriftNameInterpreter`, Linkerd's `io.l5d.namerd`); the proxy's own namers are unused,
 * its transformers still apply.
 *
 * ```yaml
 * interpreter:
 *   kind: io.prx.resolver
 *   dst: /$/inet/127.0.0.1/4100
 *   namespace: default
 *   retry: {baseSeconds: 5, maxSeconds: 600}
 *   tls: {commonName: resolver.example, caCert: /etc/prx/ca.pem}
 *   failureThreshold: {minPeriodMs: 5000, threshold: 2, windowSize: 100, closeTimeoutMs: 4000}
 * ```
 *
 * Unlike Linkerd, the liveness check is on by default (the defaults above): a long poll that
 * stalls silently behind a dead link is the failure this link exists to avoid.
 */
export const resolverThriftInterpreterSchema = z.strictObject({
  ...interpreterShape('io.prx.resolver'),
  dst: pathText,
  namespace: shortName.default('default'),
  retry: resolverRetrySchema.prefault({}),
  tls: resolverClientTlsSchema.optional(),
  failureThreshold: failureThresholdSchema.prefault({}),
});
export type ResolverThriftConfig = z.output<typeof resolverThriftInterpreterSchema>;

/** Tuning outside the config (tests use it). */
export interface ResolverThriftOptions {
  readonly backoff?: Backoff;
  readonly handshakeTimeoutMs?: number;
  readonly log?: Logger;
}

/** The connection and mux handshake's time limit: a resolver that accepts but never answers is a lost one. */
const HANDSHAKE_TIMEOUT_MS = 5000;

interface BindEntry {
  readonly path: string;
  readonly dtab: string;
  readonly watch: ThriftPollWatch<'bind'>;
  tree: string | null;
  updatedAt: Date | undefined;
}

interface AddrEntry {
  readonly id: string;
  readonly watch: ThriftPollWatch<'addr'>;
  addr: Addr;
  updatedAt: Date | undefined;
}

/** What `/<router>/interpreter_state/io.prx.resolver/<namespace>.json` shows. */
export interface ResolverThriftState {
  readonly kind: 'io.prx.resolver';
  readonly namespace: string;
  readonly dst: string;
  readonly closed: boolean;
  readonly liveness: FailureThresholdConfig;
  readonly binds: readonly { path: string; dtab: string; tree: string | null; lastUpdatedAt: string | null; poll: PollWatchStatus }[];
  readonly addrs: readonly { id: string; addr: unknown; lastUpdatedAt: string | null; poll: PollWatchStatus }[];
}

/**
 * Binds through the resolver's thrift name interface: each binding is a long-polled `bind` of
 * (namespace, path, dtab) — the dtab the router passes, its own plus the request's — and each
 * bound id's addresses a long-polled `addr`. Polls run while something observes them; all share
 * one mux session per resolver address, watched by the threshold failure detector. A lost session
 * fails every poll on it, and each is made again after its backoff; until then the last values
 * stay in force. A refusal before a watch ever had a value fails that binding (or address).
 */
export class ResolverThriftInterpreter implements StatefulInterpreter, ClosableInterpreter {
  readonly namespace: string;
  readonly dst: Path;
  readonly #liveness: FailureThresholdConfig;
  readonly #backoff: Backoff;
  readonly #tls: ClientTlsSettings | undefined;
  readonly #handshakeTimeoutMs: number;
  readonly #log: Logger | undefined;
  readonly #dstAddresses: Var<State<readonly Address[]>>;
  readonly #dstActivity: Activity<readonly Address[]>;
  readonly #links = new Map<string, ThriftMuxNamerLink>();
  #dstHold: Closable | undefined;
  #holds = 0;
  #next = 0;
  readonly #addrs = new Map<string, Var<Addr>>();
  readonly #bindEntries = new Set<BindEntry>();
  readonly #addrEntries = new Set<AddrEntry>();
  #closed = false;

  constructor(cfg: ResolverThriftConfig, system: Namer, opts: ResolverThriftOptions = {}) {
    this.namespace = cfg.namespace;
    this.dst = readPath(cfg.dst);
    this.#liveness = cfg.failureThreshold;
    this.#backoff = opts.backoff ?? retryBackoff(cfg.retry);
    this.#handshakeTimeoutMs = opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
    this.#log = opts.log;
    this.#tls = cfg.tls && {
      servername: cfg.tls.commonName,
      ca: cfg.tls.caCert === undefined ? undefined : readFileSync(cfg.tls.caCert),
      rejectUnauthorized: true,
    };
    this.#dstAddresses = dstAddresses(system, this.dst);
    this.#dstActivity = new Activity(this.#dstAddresses);
  }

  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> {
    const name = pathToThrift(path);
    const dtabText = dtab.show;
    const ns = this.namespace;
    return new Activity(
      Var.async<State<NameTree<BoundName>>>(Pending, (set) => {
        let had = false;
        const watch = this.#newWatch('bind', (stamp) => ({ dtab: dtabText, name: { stamp, name, ns }, clientId: [] }), {
          onValue: (reply) => {
            if (reply.tree === undefined) throw new ResolverThriftError('a bind answer has no tree');
            const tree = boundTreeFromThrift(reply.tree, this.#boundName);
            had = true;
            entry.tree = showTree(tree, (b) => `${b.idStr}${b.residual.isEmpty ? '' : `+${b.residual.show}`}`);
            entry.updatedAt = new Date();
            set(ok(tree));
          },
          onResolverError: (e) => {
            if (!had) set(failed(e));
          },
        });
        const entry: BindEntry = { path: path.show, dtab: dtabText, watch, tree: null, updatedAt: undefined };
        return this.#open(this.#bindEntries, entry);
      }),
    );
  }

  /** The live addresses of a bound id (one poll per id, shared by every binding that reaches it). */
  addr(id: Path): Var<Addr> {
    const key = id.show;
    let v = this.#addrs.get(key);
    if (v === undefined) {
      const name = pathToThrift(id);
      const ns = this.namespace;
      v = Var.async<Addr>(AddrPending, (set) => {
        let had = false;
        const watch = this.#newWatch('addr', (stamp) => ({ name: { stamp, name, ns }, clientId: [] }), {
          onValue: (reply) => {
            if (reply.value === undefined) throw new ResolverThriftError('an addr answer has no value');
            const addr = addrFromThrift(reply.value);
            had = true;
            entry.addr = addr;
            entry.updatedAt = new Date();
            set(addr);
          },
          onResolverError: (e) => {
            if (had) return;
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

  state(): ResolverThriftState {
    return {
      kind: 'io.prx.resolver',
      namespace: this.namespace,
      dst: this.dst.show,
      closed: this.#closed,
      liveness: this.#liveness,
      binds: [...this.#bindEntries].map((e) => ({ path: e.path, dtab: e.dtab, tree: e.tree, lastUpdatedAt: e.updatedAt?.toISOString() ?? null, poll: e.watch.status() })),
      addrs: [...this.#addrEntries].map((e) => ({ id: e.id, addr: addrJson(e.addr), lastUpdatedAt: e.updatedAt?.toISOString() ?? null, poll: e.watch.status() })),
    };
  }

  /** Stops every poll and closes the sessions; bindings observed later stay pending. */
  close(): void {
    this.#closed = true;
    for (const e of [...this.#bindEntries, ...this.#addrEntries]) e.watch.stop();
    for (const l of this.#links.values()) l.close();
    this.#links.clear();
  }

  readonly #boundName = (id: Path, residual: Path): BoundName => new BoundName(id, this.addr(id), residual);

  #newWatch<M extends PolledMethod>(
    method: M,
    request: ConstructorParameters<typeof ThriftPollWatch<M>>[0]['request'],
    handlers: Pick<ConstructorParameters<typeof ThriftPollWatch<M>>[0], 'onValue' | 'onResolverError'>,
  ): ThriftPollWatch<M> {
    return new ThriftPollWatch<M>({ method, request, link: (signal) => this.#link(signal), backoff: this.#backoff, log: this.#log, ...handlers });
  }

  #open<E extends { readonly watch: { start(): void; stop(): void } }>(entries: Set<E>, entry: E): Closable {
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

  /**
   * The link to use: the resolver's addresses taken in turn, passing over a link the failure
   * detector judges busy while another address is there to try.
   */
  async #link(signal: AbortSignal): Promise<ThriftMuxNamerLink> {
    const addresses = await this.#dstActivity.toPromise(signal);
    if (addresses.length === 0) throw new ResolverDstError(this.dst.show, 'has no addresses');
    let chosen: ThriftMuxNamerLink | undefined;
    for (let i = 0; i < addresses.length; i++) {
      const link = this.#linkTo(addresses[this.#next++ % addresses.length] as Address);
      chosen ??= link;
      if (!link.busy) return link;
    }
    return chosen as ThriftMuxNamerLink;
  }

  #linkTo(a: Address): ThriftMuxNamerLink {
    const key = `${a.host}:${a.port}`;
    let link = this.#links.get(key);
    if (link === undefined) {
      const t = this.#liveness;
      link = new ThriftMuxNamerLink(a.host, a.port, {
        tls: this.#tls,
        pingIntervalMs: t.minPeriodMs,
        closeTimeoutMs: t.closeTimeoutMs,
        threshold: t.threshold,
        windowSize: t.windowSize,
        handshakeTimeoutMs: this.#handshakeTimeoutMs,
        log: this.#log,
      });
      if (this.#closed) link.close();
      else this.#links.set(key, link);
    }
    return link;
  }
}

registerKind({
  family: 'interpreter',
  kind: 'io.prx.resolver',
  schema: resolverThriftInterpreterSchema,
  create: (cfg: ResolverThriftConfig, ctx: InterpreterContext): NameInterpreter =>
    withTransformers(
      new ResolverThriftInterpreter(cfg, ctx.system, ctx.log === undefined ? {} : { log: ctx.log }),
      buildTransformers(cfg.transformers, ctx),
    ),
});
