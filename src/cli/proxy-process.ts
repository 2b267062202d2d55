import {
  createAdmin,
  jsonResponse,
  registerMetricsEndpoints,
  registerUsageEndpoint,
  type Admin,
  type AdminOptions,
} from '../admin/index.js';
import { IdentifierServer } from '../admin/identifier-server.js';
import { adminListener } from './admin-listener.js';
import { boundNamesEndpoint } from '../admin/naming/bound-names.js';
import { namerStateEndpoints } from '../admin/naming/namer-state.js';
import { delegatorEndpoint, emptyBaseDtab, type DelegationNamespace } from '../admin/naming/delegator.js';
import { dtabLinters } from '../admin/naming/dtab-lint.js';
import { registerProxyUi, type UiRouter } from '../admin/ui/index.js';
import { lookupKind, type Family, type ProxyConfig } from '../config/index.js';
import { errorMessage, PrxError } from '../core/errors.js';
import { defaultLogRegistry, type LogRegistry, type Logger } from '../core/log.js';
import { collectStartupGarbage } from '../core/read-pacer.js';
import { prxVersion } from '../core/version.js';
import { closeInterpreter, interpreterState, TransformedInterpreter, underlyingInterpreter } from '../interpreter/index.js';
import {
  announceServer,
  type Announcement,
  type Announcer,
  type AnnouncerContext,
  type MountedAnnouncer,
} from '../namer/announcer-kind.js';
import { dnsResolver } from '../namer/dns.js';
import type { EnumeratingNamer, NamerContext, RunningNamer } from '../namer/namer-kind.js';
import {
  Activity,
  readPath,
  SystemNamer,
  type DelegationSource,
  type Dtab,
  type MountedNamer,
  type NameInterpreter,
} from '../naming/index.js';
import { ProtectedListeners } from '../router/core/protected-listeners.js';
import type { RouterContext, RunningRouter, ServerAddress } from '../router/core/types.js';
import { broadcastStats, MetricsRegistry, type StatsReceiver } from '../service/stats/index.js';
import { broadcastTracer, type Tracer } from '../service/tracing.js';
import {
  buildUsagePayload,
  ProcessMetrics,
  UsageReporter,
  type Telemeter,
  type TelemeterContext,
  type UsageEnvironment,
  type UsagePayload,
  type UsageReporterOptions,
  type UsageSummary,
} from '../telemetry/index.js';

/**
 * The proxy process: everything a config describes, built and wired together — telemeters, namers,
 * routers, the admin interface with every endpoint, the HTTP-identifier server, process metrics
 * and usage reporting — and its life from start to graceful shutdown. `bin/prx` is a thin shell
 * around {@link startProxy}; tests start processes in-process through it.
 */

/** A config that validated but could not be brought up (a port in use, a plugin that threw). */
export class ProxyStartError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_PROXY_START', message, options);
  }
}

export interface ProxyProcessOptions {
  /** Loggers of the process; defaults to the process-wide registry (JSON lines on stdout). */
  readonly logs?: LogRegistry;
  /** Facts for the usage payload (tests pin them). */
  readonly usageEnvironment?: UsageEnvironment;
  /** When usage reports go out; by default about a minute after start, then hourly. */
  readonly usageSchedule?: Pick<UsageReporterOptions, 'initialDelayMs' | 'intervalMs' | 'jitterMs'>;
  /**
   * Runs the process as one worker of several (`workers` > 1): the admin interface answers its
   * primary over IPC instead of listening, usage is reported by the primary, and only the worker
   * told to `announce` registers the servers in service discovery (one member per proxy).
   */
  readonly worker?: { readonly slot: number; readonly announce: boolean };
}

/** How long past the grace deadline shutdown waits for a component that ignores it. */
const DEADLINE_SLACK_MS = 250;
/** How long a delegation waits for an interpreter's own dtab (e.g. a dtab file being read). */
const DELEGATION_DTAB_MS = 2000;
/** Telemeters get this long to flush their last figures once the routers are down. */
const TELEMETER_FLUSH_MS = 1000;
/** Withdrawing announcements waits at most this long (within the grace period) before the drain. */
const WITHDRAW_MS = 2000;

/** Where one router listens, once started. */
export interface RouterAddresses {
  readonly label: string;
  readonly protocol: string;
  readonly servers: readonly ServerAddress[];
}

/** What {@link ProxyProcess} is assembled from: everything the config describes, built, not yet started. */
export interface ProxyParts {
  readonly config: ProxyConfig;
  readonly logs: LogRegistry;
  readonly registry: MetricsRegistry;
  readonly processMetrics: ProcessMetrics;
  readonly telemeters: readonly Telemeter[];
  readonly namers: readonly (MountedNamer & { readonly running: RunningNamer })[];
  readonly routers: readonly RunningRouter[];
  /** Each router's announcers (index-aligned with `routers`). */
  readonly announcers: readonly (readonly MountedAnnouncer[])[];
}

/** Builds one configured kind through its registered factory (validation guarantees it exists). */
function create<Ctx, Out>(family: Family, kind: string, cfg: unknown, ctx: Ctx): Out {
  const def = lookupKind(family, kind);
  if (!def) throw new ProxyStartError(`no ${family} kind ${JSON.stringify(kind)} is registered`);
  return (def.create as (cfg: unknown, ctx: Ctx) => Out)(cfg, ctx);
}

/**
 * How `/delegator.json` explains a router's names. A request's dtab is the router's whole dtab
 * (Linkerd's UI sends base + edits), so the default interpreter adds nothing to it; without one,
 * the router's configured dtab is used. An interpreter with its own dtab (`io.prx.fs`) puts that
 * first. Transformers that rewrite whole trees make a
 * router unable to explain (as in Linkerd); per-address ones do not change the delegation.
 */
function delegationNamespace(router: RunningRouter): DelegationNamespace {
  const interpreter = router.interpreter;
  const inner = underlyingInterpreter(interpreter) as NameInterpreter & Partial<DelegationSource> & { dtab?: unknown };
  const explainable =
    typeof inner.namerLookup === 'function' &&
    !(interpreter instanceof TransformedInterpreter && interpreter.transformers.some((t) => t.mapBound === undefined));
  const own = inner.dtab;
  return {
    source: explainable ? (inner as DelegationSource) : undefined,
    baseDtab: own instanceof Activity ? () => (own as Activity<Dtab>).toPromise(AbortSignal.timeout(DELEGATION_DTAB_MS)) : emptyBaseDtab,
    defaultDtab: () => router.baseDtab,
  };
}

function isEnumerating(namer: RunningNamer): namer is RunningNamer & EnumeratingNamer {
  return typeof (namer as Partial<EnumeratingNamer>).boundNames === 'function';
}

/** Settles when `work` settles or `deadline` (epoch ms) passes; true if the work finished. */
async function settleBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work.then(() => true, () => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Builds everything the config describes, in dependency order; nothing listens yet. */
function build(config: ProxyConfig, logs: LogRegistry, worker: number | undefined): ProxyParts {
  const registry = new MetricsRegistry();
  const telemeters: Telemeter[] = [];
  const namers: (MountedNamer & { running: RunningNamer })[] = [];
  const routers: RunningRouter[] = [];
  const announcers: MountedAnnouncer[][] = [];
  try {
    for (const t of config.telemetry) {
      // Named by kind, as Linkerd's tracelog logger is, so `/logging.json` can tune each one.
      const ctx: TelemeterContext = { registry, logger: logs.get(t.kind), ...(worker === undefined ? {} : { worker }) };
      telemeters.push(create<TelemeterContext, Telemeter>('telemeter', t.kind, t, ctx));
    }
    const stats: StatsReceiver = broadcastStats([registry.stats, ...telemeters.flatMap((t) => (t.stats ? [t.stats] : []))]);
    const tracer: Tracer = broadcastTracer(telemeters.flatMap((t) => (t.tracer ? [t.tracer] : [])));
    for (const n of config.namers) {
      const prefix = readPath(`/#${n.prefix}`);
      const ctx: NamerContext = { prefix, log: logs.get(`prx.namer.${n.kind}`) };
      const running = create<NamerContext, RunningNamer>('namer', n.kind, n, ctx);
      namers.push({ prefix, namer: running, running });
    }
    const system = new SystemNamer({ resolveHost: dnsResolver() });
    // The admin's address is known from the config (its port is never 0): routers refuse it from the start.
    const protectedListeners = config.admin.allowProxiedAccess ? undefined : new ProtectedListeners();
    protectedListeners?.add(config.admin.ip, config.admin.port);
    if (config.admin.httpIdentifierPort !== undefined) protectedListeners?.add(config.admin.ip, config.admin.httpIdentifierPort);
    for (const r of config.routers) {
      const log = logs.get(`prx.router.${r.label}`);
      const ctx: RouterContext = { stats, namers, system, tracer, log, ...(protectedListeners === undefined ? {} : { protectedListeners }) };
      routers.push(create<RouterContext, RunningRouter>('protocol', r.protocol, r, ctx));
      const mounted: MountedAnnouncer[] = [];
      announcers.push(mounted);
      for (const a of (r.announcers as typeof r.announcers | undefined) ?? []) {
        // The kind's schema fills `prefix` in (`/<kind>`-like default per kind).
        const prefix = readPath(`/#${typeof a['prefix'] === 'string' ? a['prefix'] : `/${a.kind}`}`);
        const actx: AnnouncerContext = { prefix, log: logs.get(`prx.announcer.${a.kind}`), stats: stats.scope('announcer', ...prefix.elems) };
        mounted.push({ prefix, kind: a.kind, announcer: create<AnnouncerContext, Announcer>('announcer', a.kind, a, actx) });
      }
    }
    // On the broadcast receiver: telemeters export the process gauges too, as Linkerd's do `jvm/…`.
    const processMetrics = new ProcessMetrics(stats);
    return { config, logs, registry, processMetrics, telemeters, namers, routers, announcers };
  } catch (e) {
    const now = Date.now();
    for (const a of announcers.flat()) void a.announcer.close();
    for (const r of routers) void r.close(now).catch(() => {});
    for (const n of namers) n.running.close();
    for (const t of telemeters) void t.close();
    registry.close();
    throw e instanceof PrxError ? e : new ProxyStartError(`cannot build the proxy: ${errorMessage(e)}`, { cause: e });
  }
}

/** A running proxy. Built and started by {@link startProxy}. */
export class ProxyProcess {
  readonly config: ProxyConfig;
  readonly registry: MetricsRegistry;
  readonly admin: Admin;
  readonly routers: readonly RunningRouter[];
  /** Configured namers, mounted at `/#/<prefix>`. */
  readonly namers: readonly MountedNamer[];
  /** Settles once shutdown has finished (after {@link ProxyProcess.shutdown}, however triggered). */
  readonly closed: Promise<void>;
  readonly #parts: ProxyParts;
  readonly #log: Logger;
  readonly #identifier: IdentifierServer | undefined;
  readonly #usage: UsageReporter;
  readonly #worker: ProxyProcessOptions['worker'];
  #addresses: RouterAddresses[] = [];
  #announcements: Announcement[] = [];
  #shutdown: Promise<void> | undefined;
  #markClosed: () => void = () => {};

  /** Use {@link startProxy}. */
  constructor(parts: ProxyParts, options: ProxyProcessOptions = {}) {
    const { config, logs, registry, routers, namers } = parts;
    this.config = config;
    this.registry = registry;
    this.routers = routers;
    this.namers = namers.map(({ prefix, namer }) => ({ prefix, namer }));
    this.#parts = parts;
    this.#worker = options.worker;
    this.#log = logs.get('prx');
    this.closed = new Promise((resolve) => (this.#markClosed = resolve));
    this.admin = createAdmin(this.#adminOptions());
    this.#wireAdmin(options.usageEnvironment);
    const port = config.admin.httpIdentifierPort;
    this.#identifier =
      port === undefined
        ? undefined
        : new IdentifierServer({ ip: config.admin.ip, port, routers: () => this.routers, logger: logs.get('prx.admin.identifier') });
    this.#usage = new UsageReporter({
      enabled: config.usage.enabled && options.worker === undefined,
      endpoint: config.usage.endpoint,
      payload: () => this.usagePayload(options.usageEnvironment),
      logger: logs.get('prx.usage'),
      ...options.usageSchedule,
    });
  }

  #adminOptions(): AdminOptions {
    return {
      ...adminListener(this.config.admin),
      logger: this.#parts.logs.get('prx.admin'),
      logs: this.#parts.logs,
      config: this.config,
      shutdown: () => this.shutdown('admin request'),
      announcements: () => this.#announcements.map((a) => a.state),
      registrySections: () => this.#registrySections(),
    };
  }

  /** The endpoints that read the routers and namers: metrics, usage, naming, lint. */
  #wireAdmin(environment: UsageEnvironment | undefined): void {
    const admin = this.admin;
    registerMetricsEndpoints(admin, this.registry);
    registerUsageEndpoint(admin, () => this.usagePayload(environment));
    const namespaces = new Map(this.routers.map((r) => [r.label, delegationNamespace(r)]));
    admin.add(delegatorEndpoint('/delegator.json', () => namespaces));
    this.routers.forEach((r, i) => this.#addInterpreterState(r, this.config.routers[i]?.interpreter.kind ?? 'default'));
    const enumerating = this.#parts.namers.flatMap((n) => (isEnumerating(n.running) ? [n.running] : []));
    admin.add(boundNamesEndpoint(() => enumerating));
    for (const e of namerStateEndpoints(this.namers)) admin.add(e);
    const uiRouters = this.uiRouters();
    registerProxyUi(admin, { registry: this.registry, version: prxVersion(), routers: () => uiRouters });
    for (const linter of dtabLinters(() => ({
      routers: this.routers.map((r) => ({
        label: r.label,
        dstPrefix: r.dstPrefix,
        dtab: r.baseDtab,
        localNamers: typeof (underlyingInterpreter(r.interpreter) as Partial<DelegationSource>).namerLookup === 'function',
      })),
      namerPrefixes: this.namers.map((n) => n.prefix),
    }))) {
      admin.linters.add(linter);
    }
  }

  /**
   * `/<router>/interpreter_state/…` for interpreters with state: the resolver links' at
   * `io.prx.resolver/<namespace>.json` and `io.prx.mesh/<root>.json` (Linkerd's), others' at `<kind>.json`.
   */
  #addInterpreterState(router: RunningRouter, kind: string): void {
    const state = (): unknown => interpreterState(router.interpreter);
    const initial = state() as { namespace?: unknown; root?: unknown } | undefined;
    if (initial === undefined) return;
    let path = `/${router.label}/interpreter_state/${kind}.json`;
    if ((kind === 'io.prx.resolver' || kind === 'io.prx.resolver.http') && typeof initial.namespace === 'string') {
      path = `/${router.label}/interpreter_state/io.prx.resolver/${initial.namespace}.json`;
    } else if (kind === 'io.prx.mesh' && typeof initial.root === 'string') {
      path = `/${router.label}/interpreter_state/io.prx.mesh${initial.root}.json`;
    }
    this.admin.add({
      path,
      method: 'GET',
      description: `Internal state of router ${router.label}'s ${kind} interpreter.`,
      handler: () => jsonResponse(state(), 200, true),
    });
  }

  #registrySections(): Record<string, unknown> {
    return {
      routers: Object.fromEntries(
        this.routers.map((r) => [
          r.label,
          {
            protocol: r.protocol,
            dstPrefix: r.dstPrefix.show,
            dtab: r.baseDtab.show,
            interpreter: r.usage.interpreter,
            identifiers: r.usage.identifiers,
            transformers: r.usage.transformers,
            servers: this.#addresses.find((a) => a.label === r.label)?.servers ?? [],
          },
        ]),
      ),
      namers: this.namers.map((n, i) => ({ kind: this.config.namers[i]?.kind, prefix: n.prefix.show })),
    };
  }

  /** True once shutdown has begun, however it was triggered. */
  get shuttingDown(): boolean {
    return this.#shutdown !== undefined;
  }

  /** Where every router listens (real ports, once started). */
  get addresses(): readonly RouterAddresses[] {
    return this.#addresses;
  }

  /** The HTTP-identifier server's address, when `admin.httpIdentifierPort` is configured. */
  get identifierAddress(): { ip: string; port: number } | undefined {
    return this.#identifier?.address;
  }

  /** The routers as the admin's pages start from them. */
  uiRouters(): UiRouter[] {
    return this.routers.map((r) => ({ label: r.label, protocol: r.protocol, dtab: r.baseDtab.show, dstPrefix: r.dstPrefix.show }));
  }

  /** The payload usage reports carry (served at `/admin/metrics/usage`). */
  usagePayload(environment?: UsageEnvironment): UsagePayload {
    return buildUsagePayload(this.usageSummary(), this.registry, environment);
  }

  /** What the usage payload says of the config and the listeners. */
  usageSummary(): UsageSummary {
    return {
      orgId: this.config.usage.orgId,
      routers: this.#addresses.map((a, i) => {
        const usage = this.routers[i]?.usage;
        return {
          protocol: usage?.protocol ?? a.protocol,
          interpreter: usage?.interpreter ?? 'unknown',
          identifiers: usage?.identifiers ?? [],
          transformers: usage?.transformers ?? [],
          servers: a.servers,
        };
      }),
      namers: this.config.namers.map((n) => n.kind),
    };
  }

  /** Opens the routers' servers, then the admin interface (so a `pong` means ready), then the rest. */
  async start(): Promise<void> {
    const log = this.#log;
    try {
      for (const router of this.routers) {
        const servers = await router.listen().catch((e: unknown) => {
          throw new ProxyStartError(`router ${router.label} cannot listen: ${errorMessage(e)}`, { cause: e });
        });
        this.#addresses = [...this.#addresses, { label: router.label, protocol: router.protocol, servers }];
      }
      if (this.#worker) this.admin.eventLoop.start();
      else {
        await this.admin.listen().catch((e: unknown) => {
          const { ip, port } = this.config.admin;
          throw new ProxyStartError(`the admin interface cannot listen on ${ip}:${port}: ${errorMessage(e)}`, { cause: e });
        });
      }
      await this.#identifier?.listen().catch((e: unknown) => {
        throw new ProxyStartError(`the http identifier server cannot listen: ${errorMessage(e)}`, { cause: e });
      });
    } catch (e) {
      await this.#teardown(Date.now(), false);
      throw e;
    }
    collectStartupGarbage();
    // Background work starts only once every socket is open: a failed start leaves nothing running.
    for (const t of this.#parts.telemeters) t.start();
    this.#parts.processMetrics.start();
    this.#usage.start();
    if (this.#worker?.announce !== false) this.#announce();
    log.info(
      {
        ...(this.#worker ? {} : { admin: this.admin.url }),
        routers: this.#addresses.map((a) => ({ label: a.label, servers: a.servers })),
      },
      this.#worker ? 'prx worker started' : 'prx started',
    );
  }

  /** Each server announces its `announce` names to its router's announcers, now that it listens. */
  #announce(): void {
    this.routers.forEach((router, i) => {
      const servers = this.config.routers[i]?.servers ?? [];
      const bound = this.#addresses.find((a) => a.label === router.label)?.servers ?? [];
      const log = this.#parts.logs.get(`prx.router.${router.label}`);
      servers.forEach((server, j) => {
        const address = bound[j];
        const names = (server as { readonly announce?: readonly string[] }).announce ?? [];
        if (address === undefined || names.length === 0) return;
        this.#announcements.push(...announceServer(this.#parts.announcers[i] ?? [], address, names, log));
      });
    });
  }

  /** Graceful shutdown: stop accepting, let in-flight requests finish for up to `admin.shutdownGraceMs`, then close everything. Idempotent. */
  shutdown(reason = 'requested'): Promise<void> {
    if (!this.#shutdown) {
      const graceMs = this.config.admin.shutdownGraceMs;
      this.#log.info({ reason, graceMs }, 'shutting down');
      this.#shutdown = this.#teardown(Date.now() + graceMs, true).then(() => {
        this.#log.info('shutdown complete');
        this.#markClosed();
      });
    }
    return this.#shutdown;
  }

  /** Closes everything opened so far; `started` tells whether background work is running. */
  async #teardown(deadline: number, started: boolean): Promise<void> {
    const { telemeters, namers, processMetrics, registry } = this.#parts;
    const log = this.#log;
    await Promise.all([this.#identifier?.close(), this.#usage.close()]);
    // Out of discovery before the servers stop accepting, so that peers stop sending first.
    const withdrawing = Promise.all(this.#announcements.map((a) => a.withdraw()));
    if (!(await settleBy(withdrawing, Math.min(deadline, Date.now() + WITHDRAW_MS)))) {
      log.warn('announcements not withdrawn in time; they expire with their sessions');
    }
    const closingAnnouncers = Promise.all(
      this.#parts.announcers.flat().map((a) => a.announcer.close().catch((e: unknown) => log.warn({ err: e }, `announcer failed to close: ${errorMessage(e)}`))),
    );
    // Every router drains at once, against one deadline.
    await Promise.all(
      this.routers.map(async (router) => {
        const closing = router.close(deadline).catch((e: unknown) => {
          log.warn({ err: e, router: router.label }, `router ${router.label} failed to close: ${errorMessage(e)}`);
        });
        if (!(await settleBy(closing, deadline + DEADLINE_SLACK_MS))) {
          log.warn({ router: router.label }, `router ${router.label} did not close within the grace period; abandoning it`);
        }
      }),
    );
    for (const router of this.routers) closeInterpreter(router.interpreter);
    await settleBy(closingAnnouncers, Date.now() + DEADLINE_SLACK_MS);
    // Telemeters flush after the routers so the final counts go out.
    await Promise.all(
      telemeters.map(async (t) => {
        const closing = t.close().catch((e: unknown) => log.warn({ err: e }, `telemeter failed to close: ${errorMessage(e)}`));
        await settleBy(closing, Date.now() + TELEMETER_FLUSH_MS);
      }),
    );
    // The admin interface stays up through the drain, so it can be watched; it goes last.
    await this.admin.close();
    for (const n of namers) n.running.close();
    if (started) processMetrics.stop();
    registry.close();
  }
}

/**
 * Builds the proxy a validated config describes and starts it. Throws {@link ProxyStartError}
 * (with everything already opened closed again) when it cannot come up.
 */
export async function startProxy(config: ProxyConfig, options: ProxyProcessOptions = {}): Promise<ProxyProcess> {
  const logs = options.logs ?? defaultLogRegistry;
  const proxy = new ProxyProcess(build(config, logs, options.worker?.slot), options);
  await proxy.start();
  return proxy;
}

