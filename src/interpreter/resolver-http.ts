import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { addIssue, filePath, interpreterShape, nonEmptyString, pathText, positiveInt, shortName } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import type { Logger } from '../core/log.js';
import {
  Activity, type Addr, AddrPending, type Address, BoundName, type Closable, ConfiguredNamersInterpreter, Dtab, type NameInterpreter,
  type NameTree, type Namer, Path, Pending, type State, Var, addrFailed, addrJson, failed, leavesOf, ok, readPath,
} from '../naming/index.js';
import { type Backoff, exponentialJittered, type Random } from '../service/policy/index.js';
import type { ClosableInterpreter, InterpreterContext, StatefulInterpreter } from './context.js';
import { ResolverDstError, type ResolverHttpError } from './errors.js';
import { type FailureThresholdConfig, failureThresholdSchema } from './liveness.js';
import { parseAddr, parseBoundTree } from './resolver-http-json.js';
import { type ControllerEndpoint, type ControllerTls, ControllerWatch, type WatchLiveness, type WatchStatus } from './resolver-http-watch.js';
import { buildTransformers, withTransformers } from './transformer.js';
import './transformers/index.js';

/** A file that must exist when the config is read. */
const existingFile = filePath.superRefine((file, ctx) => {
  let isFile = false;
  try {
    isFile = statSync(file).isFile();
  } catch {
    // Reported below.
  }
  if (!isFile) addIssue(ctx, [], 'file does not exist', { value: file });
});

/** Reconnection delays: jittered exponential from `baseSeconds`, capped at `maxSeconds`. */
export const resolverRetrySchema = z
  .strictObject({ baseSeconds: positiveInt.default(5), maxSeconds: positiveInt.default(600) })
  .superRefine((r, ctx) => {
    if (r.maxSeconds < r.baseSeconds) addIssue(ctx, ['maxSeconds'], `must be at least baseSeconds (${r.baseSeconds})`, { value: r.maxSeconds });
  });
export type ResolverRetryConfig = z.output<typeof resolverRetrySchema>;

/** TLS to the resolver: the name its certificate must carry, and the CA to trust (default: the system's). */
export const resolverClientTlsSchema = z.strictObject({ commonName: nonEmptyString, caCert: existingFile.optional() });

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
export const resolverHttpInterpreterSchema = z.strictObject({
  ...interpreterShape('io.prx.resolver.http'),
  dst: pathText,
  namespace: shortName.default('default'),
  retry: resolverRetrySchema.prefault({}),
  tls: resolverClientTlsSchema.optional(),
  failureThreshold: failureThresholdSchema.prefault({}),
});
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

/** One open bind watch, as the interpreter state shows it. */
interface BindEntry {
  readonly path: string;
  readonly dtab: string;
  readonly watch: ControllerWatch;
  tree: unknown;
  updatedAt: Date | undefined;
}

/** One open address watch. */
interface AddrEntry {
  readonly id: string;
  readonly watch: ControllerWatch;
  addr: Addr;
  updatedAt: Date | undefined;
}

/** What `/<router>/interpreter_state/io.prx.resolver/<namespace>.json` shows. */
export interface ResolverHttpState {
  readonly kind: 'io.prx.resolver.http';
  readonly namespace: string;
  readonly dst: string;
  readonly closed: boolean;
  readonly liveness: FailureThresholdConfig;
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
 * run while something observes them and are aborted when the last observer leaves. A lost stream
 * is reopened with jittered exponential backoff; until then the last values stay in force. An
 * error the resolver reports before a watch ever had a value fails that binding (or address).
 */
export class ResolverHttpInterpreter implements StatefulInterpreter, ClosableInterpreter {
  readonly namespace: string;
  readonly dst: Path;
  readonly #backoff: Backoff;
  readonly #liveness: FailureThresholdConfig;
  readonly #watchLiveness: WatchLiveness;
  readonly #tls: ControllerTls | undefined;
  readonly #log: Logger | undefined;
  readonly #dstAddresses: Var<State<readonly Address[]>>;
  readonly #dstAddressesActivity: Activity<readonly Address[]>;
  #dstHold: Closable | undefined;
  #holds = 0;
  #nextAddress = 0;
  // Address vars per id, shared by every binding that reaches the id (Linkerd caches them too).
  readonly #addrs = new Map<string, Var<Addr>>();
  readonly #bindEntries = new Set<BindEntry>();
  readonly #addrEntries = new Set<AddrEntry>();
  #closed = false;

  constructor(cfg: ResolverHttpConfig, system: Namer, opts: ResolverHttpOptions = {}) {
    this.namespace = cfg.namespace;
    this.dst = readPath(cfg.dst);
    this.#backoff = opts.backoff ?? retryBackoff(cfg.retry);
    this.#liveness = cfg.failureThreshold;
    this.#watchLiveness = { periodMs: cfg.failureThreshold.minPeriodMs, closeTimeoutMs: cfg.failureThreshold.closeTimeoutMs };
    this.#log = opts.log;
    this.#tls = cfg.tls && {
      commonName: cfg.tls.commonName,
      ...(cfg.tls.caCert === undefined ? {} : { ca: readFileSync(cfg.tls.caCert) }),
    };
    this.#dstAddresses = dstAddresses(system, this.dst);
    this.#dstAddressesActivity = new Activity(this.#dstAddresses);
  }

  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> {
    const target = `/api/1/bind/${this.#ns}?path=${encodeURIComponent(path.show)}&watch=true&dtab=${encodeURIComponent(dtab.show)}`;
    return new Activity(
      Var.async<State<NameTree<BoundName>>>(Pending, (set) => {
        let lastText: string | undefined;
        const watch = this.#newWatch(target, {
          onDocument: (json, text) => {
            if (text === lastText) return;
            const tree = parseBoundTree(json, this.#boundName);
            lastText = text;
            entry.tree = json;
            entry.updatedAt = new Date();
            set(ok(tree));
          },
          onServerError: (e) => {
            if (lastText === undefined) set(failed(e));
          },
        });
        const entry: BindEntry = { path: path.show, dtab: dtab.show, watch, tree: null, updatedAt: undefined };
        return this.#open(this.#bindEntries, entry);
      }),
    );
  }

  /** The live addresses of a bound id. */
  addr(id: Path): Var<Addr> {
    const key = id.show;
    let v = this.#addrs.get(key);
    if (v === undefined) {
      const target = `/api/1/addr/${this.#ns}?path=${encodeURIComponent(key)}&watch=true`;
      v = Var.async<Addr>(AddrPending, (set) => {
        let lastText: string | undefined;
        const watch = this.#newWatch(target, {
          onDocument: (json, text) => {
            if (text === lastText) return;
            const addr = parseAddr(json);
            lastText = text;
            entry.addr = addr;
            entry.updatedAt = new Date();
            set(addr);
          },
          onServerError: (e) => {
            if (lastText !== undefined) return;
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

  state(): ResolverHttpState {
    return {
      kind: 'io.prx.resolver.http',
      namespace: this.namespace,
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

  /** Aborts every watch; bindings observed later stay pending. */
  close(): void {
    this.#closed = true;
    for (const e of [...this.#bindEntries, ...this.#addrEntries]) e.watch.stop();
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
      endpoint: (signal) => this.#endpoint(signal),
      tls: this.#tls,
      backoff: this.#backoff,
      liveness: this.#watchLiveness,
      log: this.#log,
      ...handlers,
    });
  }

  /** Starts `entry`'s watch (keeping the resolver's address resolved meanwhile); closing stops it. */
  #open<E extends { readonly watch: ControllerWatch }>(entries: Set<E>, entry: E): Closable {
    entries.add(entry);
    this.#hold();
    if (!this.#closed) entry.watch.start();
    let open = true;
    return {
      close: () => {
        if (!open) return;
        open = false;
        entry.watch.stop();
        entries.delete(entry);
        this.#release();
      },
    };
  }

  #hold(): void {
    if (this.#holds++ === 0) this.#dstHold = this.#dstAddresses.observe(() => {});
  }

  #release(): void {
    if (--this.#holds === 0) {
      this.#dstHold?.close();
      this.#dstHold = undefined;
    }
  }

  /** The next of the resolver's addresses (round robin), once `dst` has resolved. */
  async #endpoint(signal: AbortSignal): Promise<ControllerEndpoint> {
    const addresses = await this.#dstAddressesActivity.toPromise(signal);
    if (addresses.length === 0) throw new ResolverDstError(this.dst.show, 'has no addresses');
    const a = addresses[this.#nextAddress++ % addresses.length] as Address;
    return { host: a.host, port: a.port };
  }
}

/** The addresses `dst` binds to through the `/$/` namer: the first leaf's, live. */
export function dstAddresses(system: Namer, dst: Path): Var<State<readonly Address[]>> {
  return new ConfiguredNamersInterpreter([], { system }).bind(Dtab.empty, dst).states.flatMap((s): Var<State<readonly Address[]>> => {
    if (s.kind !== 'ok') return Var.value(s);
    const first = leavesOf(s.value)[0];
    if (first === undefined) return Var.value(failed(new ResolverDstError(dst.show, `does not bind (${s.value.type})`)));
    return first.addr.map((a): State<readonly Address[]> => {
      switch (a.kind) {
        case 'bound':
          return ok(a.addresses);
        case 'pending':
          return Pending;
        case 'neg':
          return failed(new ResolverDstError(dst.show, 'does not exist (Neg)'));
        case 'failed':
          return failed(new ResolverDstError(dst.show, `failed to resolve: ${a.error.message}`));
      }
    });
  });
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
