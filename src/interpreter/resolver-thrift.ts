import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { interpreterShape, pathText, shortName, lazySchema } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import type { Logger } from '../core/log.js';
import { type Addr, type Address, BoundName, type Dtab, type NameInterpreter, type NameTree, type Namer, type Path, readPath, showTree } from '../naming/index.js';
import { ThriftMuxNamerLink } from '../protocol/thriftmux/namer-link.js';
import { addrFromThrift, boundTreeFromThrift, pathToThrift } from '../protocol/thrift/name-interface/convert.js';
import type { Backoff } from '../service/policy/index.js';
import type { ClientTlsSettings } from '../service/tls-settings.js';
import type { InterpreterContext } from './context.js';
import { ResolverThriftError } from './errors.js';
import { type FailureThresholdConfig, failureThresholdSchema } from './liveness.js';
import { resolverClientTlsSchema, resolverRetrySchema, retryBackoff } from './resolver-http.js';
import { type LinkHandlers, ResolverLink, type LinkState } from './resolver-link.js';
import { type PolledMethod, type PollWatchOptions, ThriftPollWatch, type PollWatchStatus } from './thrift-poll-watch.js';
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
export const resolverThriftInterpreterSchema = lazySchema(() => z.strictObject({
  ...interpreterShape('io.prx.resolver'),
  dst: pathText,
  namespace: shortName.default('default'),
  retry: resolverRetrySchema.prefault({}),
  tls: resolverClientTlsSchema.optional(),
  failureThreshold: failureThresholdSchema.prefault({}),
}));
export type ResolverThriftConfig = z.output<typeof resolverThriftInterpreterSchema>;

/** Tuning outside the config (tests use it). */
export interface ResolverThriftOptions {
  readonly backoff?: Backoff;
  readonly handshakeTimeoutMs?: number;
  readonly log?: Logger;
}

/** The connection and mux handshake's time limit: a resolver that accepts but never answers is a lost one. */
const HANDSHAKE_TIMEOUT_MS = 5000;

/** What `/<router>/interpreter_state/io.prx.resolver/<namespace>.json` shows. */
export interface ResolverThriftState extends LinkState {
  readonly kind: 'io.prx.resolver';
  readonly namespace: string;
  readonly dst: string;
  readonly binds: readonly { path: string; dtab: string; tree: string | null; lastUpdatedAt: string | null; poll: PollWatchStatus }[];
  readonly addrs: readonly { id: string; addr: unknown; lastUpdatedAt: string | null; poll: PollWatchStatus }[];
}

/**
 * Binds through the resolver's thrift name interface: each binding is a long-polled `bind` of
 * (namespace, path, dtab) — the dtab the router passes, its own plus the request's — and each
 * bound id's addresses a long-polled `addr`. Polls run while something observes them; all share
 * one mux session per resolver address, watched by the threshold failure detector. A lost session
 * fails every poll on it, and each is made again after its backoff; until then the last values
 * stay in force (see {@link ResolverLink}).
 */
export class ResolverThriftInterpreter extends ResolverLink {
  readonly namespace: string;
  protected readonly statusKey = 'poll';
  readonly #liveness: FailureThresholdConfig;
  readonly #backoff: Backoff;
  readonly #tls: ClientTlsSettings | undefined;
  readonly #handshakeTimeoutMs: number;
  readonly #log: Logger | undefined;
  readonly #links = new Map<string, ThriftMuxNamerLink>();

  constructor(cfg: ResolverThriftConfig, system: Namer, opts: ResolverThriftOptions = {}) {
    super(system, readPath(cfg.dst), cfg.failureThreshold);
    this.namespace = cfg.namespace;
    this.#liveness = cfg.failureThreshold;
    this.#backoff = opts.backoff ?? retryBackoff(cfg.retry);
    this.#handshakeTimeoutMs = opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
    this.#log = opts.log;
    this.#tls = cfg.tls && {
      servername: cfg.tls.commonName,
      ca: cfg.tls.caCert === undefined ? undefined : readFileSync(cfg.tls.caCert),
      rejectUnauthorized: true,
    };
  }

  protected bindWatch(dtab: Dtab, path: Path, h: LinkHandlers<NameTree<BoundName>>): ThriftPollWatch<'bind'> {
    const name = pathToThrift(path);
    const dtabText = dtab.show;
    const ns = this.namespace;
    return this.#newWatch('bind', (stamp) => ({ dtab: dtabText, name: { stamp, name, ns }, clientId: [] }), {
      onValue: (reply) => {
        if (reply.tree === undefined) throw new ResolverThriftError('a bind answer has no tree');
        const tree = boundTreeFromThrift(reply.tree, this.#boundName);
        h.value(tree, showTree(tree, (b) => `${b.idStr}${b.residual.isEmpty ? '' : `+${b.residual.show}`}`));
      },
      onResolverError: (e) => h.refused(e),
    });
  }

  protected addrWatch(id: Path, h: LinkHandlers<Addr>): ThriftPollWatch<'addr'> {
    const name = pathToThrift(id);
    const ns = this.namespace;
    return this.#newWatch('addr', (stamp) => ({ name: { stamp, name, ns }, clientId: [] }), {
      onValue: (reply) => {
        if (reply.value === undefined) throw new ResolverThriftError('an addr answer has no value');
        h.value(addrFromThrift(reply.value), undefined);
      },
      onResolverError: (e) => h.refused(e),
    });
  }

  protected stateHead(): Readonly<Record<string, unknown>> {
    return { kind: 'io.prx.resolver', namespace: this.namespace, dst: this.dst.show };
  }

  override state(): ResolverThriftState {
    return super.state() as ResolverThriftState;
  }

  /** Stops every poll and closes the sessions. */
  override close(): void {
    super.close();
    for (const l of this.#links.values()) l.close();
    this.#links.clear();
  }

  readonly #boundName = (id: Path, residual: Path): BoundName => new BoundName(id, this.addr(id), residual);

  #newWatch<M extends PolledMethod>(
    method: M,
    request: PollWatchOptions<M>['request'],
    handlers: Pick<PollWatchOptions<M>, 'onValue' | 'onResolverError'>,
  ): ThriftPollWatch<M> {
    return new ThriftPollWatch<M>({ method, request, link: (signal) => this.#link(signal), backoff: this.#backoff, log: this.#log, ...handlers });
  }

  /**
   * The link to use: the resolver's addresses taken in turn, passing over a link the failure
   * detector judges busy while another address is there to try.
   */
  async #link(signal: AbortSignal): Promise<ThriftMuxNamerLink> {
    const { addresses, start } = await this.dstTurn(signal);
    let chosen: ThriftMuxNamerLink | undefined;
    for (let i = 0; i < addresses.length; i++) {
      const link = this.#linkTo(addresses[(start + i) % addresses.length] as Address);
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
      if (this.closed) link.close();
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
