import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { addIssue, filePath, interpreterShape, nonEmptyString, pathText, positiveInt, shortName, lazySchema } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import type { Logger } from '../core/log.js';
import { type Addr, AddrPending, BoundName, type Dtab, type NameInterpreter, type NameTree, type Namer, Path, Var, addrFailed, readPath } from '../naming/index.js';
import { type Backoff, exponentialJittered, type Random } from '../service/policy/index.js';
import type { InterpreterContext } from './context.js';
import type { ResolverHttpError } from './errors.js';
import { failureThresholdSchema } from './liveness.js';
import { parseAddr, parseBoundTree } from './resolver-http-json.js';
import { type ControllerEndpoint, type ControllerTls, ControllerWatch, type WatchLiveness, type WatchStatus } from './resolver-http-watch.js';
import { type LinkHandlers, type LinkState, ResolverLink } from './resolver-link.js';
import { buildTransformers, withTransformers } from './transformer.js';
import './transformers/index.js';

/** A file that must exist when the config is read. */
const existingFile = lazySchema(() => filePath.superRefine((file, ctx) => {
  let isFile = false;
  try {
    isFile = statSync(file).isFile();
  } catch {
    // Reported below.
  }
  if (!isFile) addIssue(ctx, [], 'file does not exist', { value: file });
}));

/** Reconnection delays: jittered exponential from `baseSeconds`, capped at `maxSeconds`. */
export const resolverRetrySchema = lazySchema(() => z
  .strictObject({ baseSeconds: positiveInt.default(5), maxSeconds: positiveInt.default(600) })
  .superRefine((r, ctx) => {
    if (r.maxSeconds < r.baseSeconds) addIssue(ctx, ['maxSeconds'], `must be at least baseSeconds (${r.baseSeconds})`, { value: r.maxSeconds });
  }));
export type ResolverRetryConfig = z.output<typeof resolverRetrySchema>;

/** TLS to the resolver: the name its certificate must carry, and the CA to trust (default: the system's). */
export const resolverClientTlsSchema = lazySchema(() => z.strictObject({ commonName: nonEmptyString, caCert: existingFile.optional() }));

/**
 * `io.prx.resolver.http` (experimental): names are bound by the resolver service over its HTTP
 * controller's watch streams (Linkerd's `io.l5d.namerd.http`); the proxy's own namers are unused,
 * its transformers still apply.
 *
 * ```yaml
 * interpreter:
 *   kind: io.prx.resolver.http
 *   experimental: true
 *   dst: /$/inet/127.0.0.1/4180   # bound through the /$/ namer to find the controller
 *   namespace: default
 *   retry: {baseSeconds: 5, maxSeconds: 600}
 *   tls: {commonName: resolver.example, caCert: /etc/prx/ca.pem}
 *   failureThreshold: {minPeriodMs: 5000, closeTimeoutMs: 4000}
 * ```
 *
 * The liveness check is always on, as on `io.prx.mesh`: each watch asks the resolver for a
 * heartbeat every `minPeriodMs`, and one silent for `closeTimeoutMs` past that is reopened.
 */
export const resolverHttpInterpreterSchema = lazySchema(() => z.strictObject({
  ...interpreterShape('io.prx.resolver.http'),
  dst: pathText,
  namespace: shortName.default('default'),
  retry: resolverRetrySchema.prefault({}),
  tls: resolverClientTlsSchema.optional(),
  failureThreshold: failureThresholdSchema.prefault({}),
}));
export type ResolverHttpConfig = z.output<typeof resolverHttpInterpreterSchema>;

/** The reconnection delays of `retry` (Linkerd: `Backoff.exponentialJittered(base, max)`). */
export function retryBackoff(retry: ResolverRetryConfig, random: Random = Math.random): Backoff {
  return exponentialJittered(retry.baseSeconds * 1000, retry.maxSeconds * 1000, random);
}

/** Tuning outside the config (tests use it). */
export interface ResolverHttpOptions {
  /** Replaces the delays `retry` configures. */
  readonly backoff?: Backoff;
  readonly log?: Logger;
}

/** What `/<router>/interpreter_state/io.prx.resolver/<namespace>.json` shows. */
export interface ResolverHttpState extends LinkState {
  readonly kind: 'io.prx.resolver.http';
  readonly namespace: string;
  readonly dst: string;
  readonly binds: readonly {
    readonly path: string;
    readonly dtab: string;
    readonly tree: unknown;
    readonly lastUpdatedAt: string | null;
    readonly stream: WatchStatus;
  }[];
  readonly addrs: readonly {
    readonly id: string;
    readonly addr: unknown;
    readonly lastUpdatedAt: string | null;
    readonly stream: WatchStatus;
  }[];
}

/**
 * Binds through the resolver's HTTP controller: each binding watches
 * `GET /api/1/bind/<ns>?path=…&watch=true&dtab=…` (the dtab the router passes: its own plus the
 * request's), and each bound id's addresses `GET /api/1/addr/<ns>?path=<id>&watch=true`. Watches
 * run while something observes them and are aborted when the last observer leaves. A lost or
 * silent stream is reopened with jittered exponential backoff; until then the last values stay in
 * force (see {@link ResolverLink}).
 */
export class ResolverHttpInterpreter extends ResolverLink {
  readonly namespace: string;
  protected readonly statusKey = 'stream';
  readonly #backoff: Backoff;
  readonly #watchLiveness: WatchLiveness;
  readonly #tls: ControllerTls | undefined;
  readonly #log: Logger | undefined;

  constructor(cfg: ResolverHttpConfig, system: Namer, opts: ResolverHttpOptions = {}) {
    super(system, readPath(cfg.dst), cfg.failureThreshold);
    this.namespace = cfg.namespace;
    this.#backoff = opts.backoff ?? retryBackoff(cfg.retry);
    this.#watchLiveness = { periodMs: cfg.failureThreshold.minPeriodMs, closeTimeoutMs: cfg.failureThreshold.closeTimeoutMs };
    this.#log = opts.log;
    this.#tls = cfg.tls && {
      commonName: cfg.tls.commonName,
      ...(cfg.tls.caCert === undefined ? {} : { ca: readFileSync(cfg.tls.caCert) }),
    };
  }

  protected bindWatch(dtab: Dtab, path: Path, h: LinkHandlers<NameTree<BoundName>>): ControllerWatch {
    const target = `/api/1/bind/${this.#ns}?path=${encodeURIComponent(path.show)}&watch=true&dtab=${encodeURIComponent(dtab.show)}`;
    let lastText: string | undefined;
    return this.#newWatch(target, {
      onDocument: (json, text) => {
        if (text === lastText) return;
        const tree = parseBoundTree(json, this.#boundName);
        lastText = text;
        h.value(tree, json);
      },
      onServerError: (e) => h.refused(e),
    });
  }

  protected addrWatch(id: Path, h: LinkHandlers<Addr>): ControllerWatch {
    const target = `/api/1/addr/${this.#ns}?path=${encodeURIComponent(id.show)}&watch=true`;
    let lastText: string | undefined;
    return this.#newWatch(target, {
      onDocument: (json, text) => {
        if (text === lastText) return;
        const addr = parseAddr(json);
        lastText = text;
        h.value(addr, undefined);
      },
      onServerError: (e) => h.refused(e),
    });
  }

  protected stateHead(): Readonly<Record<string, unknown>> {
    return { kind: 'io.prx.resolver.http', namespace: this.namespace, dst: this.dst.show };
  }

  override state(): ResolverHttpState {
    return super.state() as ResolverHttpState;
  }

  get #ns(): string {
    return encodeURIComponent(this.namespace);
  }

  readonly #boundName = (id: Path | string, residual: Path, addr: unknown): BoundName =>
    id instanceof Path ? new BoundName(id, this.addr(id), residual) : new BoundName(id, Var.value(parseAddrOrFailed(addr)), residual);

  #newWatch(
    target: string,
    handlers: { onDocument: (json: unknown, text: string) => void; onServerError: (e: ResolverHttpError) => void },
  ): ControllerWatch {
    return new ControllerWatch({
      target,
      endpoint: async (signal): Promise<ControllerEndpoint> => {
        const a = await this.nextAddress(signal);
        return { host: a.host, port: a.port };
      },
      tls: this.#tls,
      backoff: this.#backoff,
      liveness: this.#watchLiveness,
      log: this.#log,
      ...handlers,
    });
  }
}

function parseAddrOrFailed(json: unknown): Addr {
  try {
    return json === undefined ? AddrPending : parseAddr(json);
  } catch (e) {
    return addrFailed(e);
  }
}

registerKind({
  family: 'interpreter',
  kind: 'io.prx.resolver.http',
  experimental: true,
  schema: resolverHttpInterpreterSchema,
  create: (cfg: ResolverHttpConfig, ctx: InterpreterContext): NameInterpreter =>
    withTransformers(
      new ResolverHttpInterpreter(cfg, ctx.system, ctx.log === undefined ? {} : { log: ctx.log }),
      buildTransformers(cfg.transformers, ctx),
    ),
});
