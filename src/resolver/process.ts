import type { NamerConfig } from '../config/proxy-config.js';
import { lookupKind } from '../config/registry.js';
import type { ResolverConfig } from '../config/resolver-config.js';
import type { KindConfig } from '../config/schema.js';
import { errorMessage } from '../core/errors.js';
import { defaultLogRegistry, type LogRegistry, type Logger } from '../core/log.js';
import { dnsResolver } from '../namer/dns.js';
import type { EnumeratingNamer, NamerContext, RunningNamer } from '../namer/namer-kind.js';
import { type Closable, type HostResolver, type MountedNamer, Path, SystemNamer, readPath } from '../naming/index.js';
import { MetricsRegistry, broadcastStats, type StatsReceiver } from '../service/stats/index.js';
import { ProcessMetrics } from '../telemetry/process-metrics.js';
import type { Telemeter, TelemeterContext } from '../telemetry/telemeter.js';
import type { InterfaceContext, ResolverInterface } from './interfaces/interface-kind.js';
import { ResolverNaming } from './naming.js';
import { openDtabStore } from './storage/index.js';
import type { DtabStore } from './storage/types.js';

/** A configured namer, running, with where it is mounted. */
export interface ResolverNamer {
  readonly kind: string;
  /** `/#/<prefix>`. */
  readonly prefix: Path;
  readonly namer: RunningNamer;
}

/** What the admin interface is built from (the admin layer sits beside this one, so it is injected). */
export interface ResolverParts {
  readonly config: ResolverConfig;
  readonly logs: LogRegistry;
  readonly registry: MetricsRegistry;
  readonly store: DtabStore;
  readonly naming: ResolverNaming;
  readonly namers: readonly ResolverNamer[];
  /** The namers that can list their names (`/bound-names.json`). */
  readonly enumerating: readonly EnumeratingNamer[];
  readonly interfaces: readonly ResolverInterface[];
  /** The namespaces stored right now (kept current while the process runs), sorted. */
  namespaces(): readonly string[];
  /** Starts graceful shutdown (the admin's `/admin/shutdown`). */
  shutdown(): Promise<void>;
}

/** The admin interface as the process drives it. */
export interface ResolverAdmin {
  listen(): Promise<{ ip: string; port: number }>;
  close(): Promise<void>;
  readonly url: string;
}

export interface ResolverProcessOptions {
  /** Defaults to the process-wide registry (stdout). */
  readonly logs?: LogRegistry;
  /** Builds the admin interface; without it the process serves no admin (tests). */
  readonly buildAdmin?: (parts: ResolverParts) => ResolverAdmin;
  /** Resolves `/$/inet` host names; defaults to the system resolver, refreshed every 5 s. */
  readonly resolveHost?: HostResolver;
}

/** A kind's factory, typed by the caller (the registry is generic). */
function factoryOf<Ctx, Out>(family: 'namer' | 'telemeter' | 'iface', cfg: KindConfig): (cfg: KindConfig, ctx: Ctx) => Out {
  const def = lookupKind(family, cfg.kind);
  // Validation resolved every kind against the same registry, so a miss is a bug.
  if (!def) throw new Error(`${family} kind ${cfg.kind} is not registered`);
  return def.create as unknown as (cfg: KindConfig, ctx: Ctx) => Out;
}

/**
 * The resolver service, assembled from a validated config: telemetry, dtab storage, namers, name
 * resolution, the interfaces and (injected) the admin. {@link ResolverProcess.start} listens on
 * everything or, if any listener fails, closes what it built and rethrows.
 * {@link ResolverProcess.shutdown} is graceful: interfaces stop accepting and end their watches,
 * requests in flight get `admin.shutdownGraceMs`, then everything closes in reverse order.
 */
export class ResolverProcess {
  readonly parts: ResolverParts;
  readonly admin: ResolverAdmin | undefined;
  readonly #log: Logger;
  readonly #telemeters: readonly Telemeter[];
  readonly #processMetrics: ProcessMetrics;
  readonly #namespaceWatch: Closable;
  #stopping: Promise<void> | undefined;
  #resolveStopped: () => void = () => {};
  /** Settles once the process has shut down (however it was asked to). */
  readonly stopped: Promise<void> = new Promise((resolve) => {
    this.#resolveStopped = resolve;
  });

  private constructor(config: ResolverConfig, options: ResolverProcessOptions) {
    const logs = options.logs ?? defaultLogRegistry;
    this.#log = logs.get('prx.resolver');
    const registry = new MetricsRegistry();
    this.#processMetrics = new ProcessMetrics(registry.stats);
    this.#telemeters = config.telemetry.map((t) =>
      factoryOf<TelemeterContext, Telemeter>('telemeter', t)(t, { registry, logger: logs.get(`prx.telemetry.${t.kind}`) }),
    );
    if (this.#telemeters.some((t) => t.tracer !== undefined)) {
      this.#log.info('the resolver does not trace: tracers of the configured telemeters are ignored');
    }
    const stats: StatsReceiver = broadcastStats([registry.stats, ...this.#telemeters.flatMap((t) => (t.stats ? [t.stats] : []))]);

    const store = openDtabStore(config.storage, {
      log: logs.get(`prx.storage.${config.storage.kind}`),
      stats: stats.scope('storage', config.storage.kind),
    });
    const namers = config.namers.map((n: NamerConfig): ResolverNamer => {
      const prefix = Path.of('#').concat(readPath(n.prefix));
      const ctx: NamerContext = { prefix, log: logs.get(`prx.namer.${n.kind}`) };
      return { kind: n.kind, prefix, namer: factoryOf<NamerContext, RunningNamer>('namer', n)(n, ctx) };
    });
    const mounted: MountedNamer[] = namers.map((n) => ({ prefix: n.prefix, namer: n.namer }));
    const enumerating = namers.map((n) => n.namer).filter(isEnumerating);
    const naming = new ResolverNaming(store, {
      namers: mounted,
      system: new SystemNamer({ resolveHost: options.resolveHost ?? dnsResolver() }),
      enumerating,
    });
    const interfaces = config.interfaces.map((i) => {
      const ctx: InterfaceContext = { store, naming, log: logs.get(`prx.interface.${i.kind}`), stats: stats.scope(i.kind) };
      return factoryOf<InterfaceContext, ResolverInterface>('iface', i)(i, ctx);
    });

    // The namespace list is kept observed for the life of the process: the admin's delegator
    // reads it synchronously, and stores share one backend watch between observers.
    let namespaces: readonly string[] = [];
    this.#namespaceWatch = store.list().observe((s) => {
      if (s.kind === 'ok') namespaces = [...s.value].sort();
    });

    this.parts = {
      config,
      logs,
      registry,
      store,
      naming,
      namers,
      enumerating,
      interfaces,
      namespaces: () => namespaces,
      shutdown: () => this.shutdown(),
    };
    this.admin = options.buildAdmin?.(this.parts);
  }

  /** Builds the process from `config` and starts every listener. */
  static async start(config: ResolverConfig, options: ResolverProcessOptions = {}): Promise<ResolverProcess> {
    const proc = new ResolverProcess(config, options);
    try {
      await proc.#listen();
    } catch (e) {
      await proc.shutdown();
      throw e;
    }
    return proc;
  }

  async #listen(): Promise<void> {
    this.#processMetrics.start();
    for (const t of this.#telemeters) t.start();
    for (const iface of this.parts.interfaces) await iface.listen();
    if (this.admin) await this.admin.listen();
    this.#log.info(
      { interfaces: this.parts.interfaces.map((i) => ({ kind: i.kind, url: i.url })), admin: this.admin?.url },
      'prx-resolver started',
    );
  }

  /** Shuts down gracefully; every call returns the same promise. */
  shutdown(): Promise<void> {
    this.#stopping ??= this.#stop().finally(() => this.#resolveStopped());
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const graceMs = this.parts.config.admin.shutdownGraceMs;
    this.#log.info({ graceMs }, 'prx-resolver shutting down');
    const steps: [string, () => Promise<void> | void][] = [
      ['interfaces', () => Promise.all(this.parts.interfaces.map((i) => i.close(graceMs))).then(() => {})],
      ['admin', () => this.admin?.close()],
      ['namespace watch', () => this.#namespaceWatch.close()],
      ['namers', () => this.parts.namers.forEach((n) => n.namer.close())],
      ['storage', () => this.parts.store.close()],
      ['telemeters', () => Promise.all(this.#telemeters.map((t) => t.close())).then(() => {})],
      ['metrics', () => {
        this.#processMetrics.stop();
        this.parts.registry.close();
      }],
    ];
    // Every step runs even if an earlier one failed: a stuck backend must not keep ports open.
    for (const [what, step] of steps) {
      try {
        await step();
      } catch (e) {
        this.#log.warn({ err: e }, `closing ${what} failed: ${errorMessage(e)}`);
      }
    }
    this.#log.info('prx-resolver stopped');
  }
}

function isEnumerating(namer: RunningNamer): namer is RunningNamer & EnumeratingNamer {
  return typeof (namer as Partial<EnumeratingNamer>).boundNames === 'function';
}
