/**
 * The primary process of a proxy with `workers` > 1. It owns the config, the admin interface and
 * usage reporting; the workers (`pool.ts`) serve the routers' ports. To the operator it is one
 * proxy:
 *
 * - metrics (`/admin/metrics.json`, Prometheus, `/admin/summary.json`, usage) are the merge of
 *   every worker's registry (`service/stats/snapshot.ts`) plus the primary's own process gauges
 *   under `primary/process/…`; `?worker=<n>` on the metrics exports shows one worker alone;
 * - views only the routers can answer (`/delegator.json`, `/bound-names.json`, interpreter state,
 *   `/admin/registry.json`, lint, announcements) are answered by a serving worker, every one of
 *   which runs the same config;
 * - `/logging.json` and `/admin/tracing` changes apply to the primary and every worker, and a
 *   restarted worker starts with them;
 * - `/admin/workers.json` lists the workers; `/admin/workers/<n>/<path>` is any admin endpoint
 *   as worker n answers it (its CPU profile, its event loop).
 */
import {
  createAdmin,
  jsonResponse,
  loggingEndpoint,
  registerMetricsEndpoints,
  registerUsageEndpoint,
  tracingEndpoint,
  type Admin,
  type AdminEndpoint,
  type AdminRequest,
  type AdminResponse,
  type ForwardedAdminRequest,
} from '../../admin/index.js';
import { registerProxyUi, type ProcessFigures } from '../../admin/ui/index.js';
import type { ConfigSource, ProxyConfig } from '../../config/index.js';
import { errorMessage } from '../../core/errors.js';
import type { LogRegistry, Logger } from '../../core/log.js';
import { prxVersion } from '../../core/version.js';
import { MergedStats, MetricsRegistry, SnapshotSource, type MetricsNode } from '../../service/stats/index.js';
import { tracingSwitch } from '../../service/tracing.js';
import { buildUsagePayload, ProcessMetrics, UsageReporter } from '../../telemetry/index.js';
import { adminListener } from '../admin-listener.js';
import { UnknownWorkerError, WorkerUnavailableError } from './errors.js';
import type { WorkerInfo } from './messages.js';
import { WorkerPool } from './pool.js';

/** How long a worker has to send its metrics snapshot. */
const STATS_TIMEOUT_MS = 5000;
/** Forwarded admin requests may be CPU profiles of many seconds. */
const FORWARD_TIMEOUT_MS = 120_000;
/**
 * A merged registry is reused for this long: the dashboard polls every second per open page, and
 * several pages (or a page and a scraper) should not each cost every worker a snapshot.
 */
const MERGE_REUSE_MS = 250;
/** Endpoints every worker has that the primary answers through a worker rather than on its own. */
const ROUTER_VIEWS = ['/admin/registry.json', '/admin/lint', '/admin/lint.json', '/admin/announcer'];

export interface PrimaryOptions {
  readonly config: ProxyConfig;
  readonly source: ConfigSource;
  readonly count: number;
  readonly logs: LogRegistry;
}

export class PrimaryProcess {
  readonly config: ProxyConfig;
  readonly admin: Admin;
  readonly pool: WorkerPool;
  /** Settles once shutdown has finished. */
  readonly closed: Promise<void>;
  readonly #logs: LogRegistry;
  readonly #log: Logger;
  /** The primary's own gauges (`primary/process/…` in the merged view). */
  readonly #own = new MetricsRegistry();
  readonly #processMetrics = new ProcessMetrics(this.#own.stats.scope('primary'));
  readonly #ownSource = new SnapshotSource(this.#own);
  /** The last snapshot of every worker (by slot; the primary's own is slot 0), merged on demand. */
  readonly #stats = new MergedStats();
  readonly #usage: UsageReporter;
  #merged: { readonly at: number; readonly registry: Promise<MetricsRegistry> } | undefined;
  #shutdown: Promise<void> | undefined;
  #markClosed: () => void = () => {};

  constructor(options: PrimaryOptions) {
    const { config, logs } = options;
    this.config = config;
    this.#logs = logs;
    this.#log = logs.get('prx');
    this.closed = new Promise((resolve) => (this.#markClosed = resolve));
    this.pool = new WorkerPool({
      count: options.count,
      source: options.source,
      log: logs.get('prx.workers'),
      runtimeState: () => ({ logLevels: logs.explicitLevels(), tracing: tracingSwitch.enabled }),
    });
    this.admin = createAdmin({
      ...adminListener(config.admin),
      logger: logs.get('prx.admin'),
      logs,
      config,
      shutdown: () => this.shutdown('admin request'),
    });
    this.#usage = new UsageReporter({
      enabled: config.usage.enabled,
      endpoint: config.usage.endpoint,
      payload: async () => this.#usagePayload(),
      logger: logs.get('prx.usage'),
    });
  }

  /** True once shutdown has begun. */
  get shuttingDown(): boolean {
    return this.#shutdown !== undefined;
  }

  /** Starts every worker, then (once all serve) the admin interface. */
  async start(): Promise<void> {
    let info: WorkerInfo;
    try {
      info = await this.pool.start();
    } catch (e) {
      this.pool.kill();
      throw e;
    }
    this.#wireAdmin(info);
    try {
      await this.admin.listen();
    } catch (e) {
      await this.pool.shutdown('the admin interface cannot listen', Date.now());
      const { ip, port } = this.config.admin;
      throw new Error(`the admin interface cannot listen on ${ip}:${port}: ${errorMessage(e)}`, { cause: e });
    }
    this.#processMetrics.start();
    this.#usage.start();
    this.#log.info(
      {
        admin: this.admin.url,
        workers: this.pool.count,
        schedulingPolicy: this.pool.schedulingPolicy,
        routers: info.usage.routers.map((r, i) => ({ label: info.uiRouters[i]?.label, servers: r.servers })),
      },
      'prx started',
    );
  }

  #wireAdmin(info: WorkerInfo): void {
    const admin = this.admin;
    const registry = (req: AdminRequest): Promise<MetricsRegistry> => this.#registryFor(req.query.get('worker'));
    registerMetricsEndpoints(admin, registry);
    registerUsageEndpoint(admin, () => this.#usagePayload());
    registerProxyUi(admin, {
      registry,
      version: prxVersion(),
      routers: () => info.uiRouters,
      processFigures: (merged) => this.#processFigures(merged),
    });
    // Changes of run-time state reach every worker (and restarted ones start with them).
    for (const endpoint of [loggingEndpoint(this.#logs), tracingEndpoint(tracingSwitch)]) {
      admin.server.remove(endpoint.path);
      admin.add(this.#broadcasting(endpoint));
    }
    for (const path of ROUTER_VIEWS) admin.server.remove(path);
    for (const e of info.endpoints) {
      if (admin.server.has(e.path)) continue;
      admin.add({
        path: e.path,
        description: e.description,
        category: e.category,
        ...(e.methods === 'any' ? {} : { method: e.methods }),
        handler: (req) => this.#forward(this.#anyWorker(), req, req.path),
      });
    }
    admin.add({
      path: '/admin/workers.json',
      method: 'GET',
      category: 'diagnostics',
      description: 'The worker processes: pid, state, restarts.',
      handler: () => jsonResponse({ schedulingPolicy: this.pool.schedulingPolicy, workers: this.pool.describe() }, 200, true),
    });
    admin.add({
      path: '/admin/workers/*',
      category: 'diagnostics',
      description: 'Any admin endpoint as one worker answers it: /admin/workers/<n>/<path>.',
      handler: (req) => {
        const slash = req.rest.indexOf('/');
        const slot = slash < 0 ? req.rest : req.rest.slice(0, slash);
        return this.#forward(this.#slot(slot), req, slash < 0 ? '/' : req.rest.slice(slash));
      },
    });
  }

  /** A worker slot named in a request (`?worker=`, `/admin/workers/<n>/`). */
  #slot(text: string): number {
    const n = Number(text);
    if (!/^[0-9]+$/.test(text) || n < 1 || n > this.pool.count) throw new UnknownWorkerError(text, this.pool.count);
    return n;
  }

  /** The first serving worker. */
  #anyWorker(): number {
    const slot = this.pool.ready()[0];
    if (slot === undefined) throw new WorkerUnavailableError('no worker is serving');
    return slot;
  }

  async #forward(slot: number, req: AdminRequest, path: string): Promise<AdminResponse> {
    const query = req.query.toString();
    const request: ForwardedAdminRequest = {
      method: req.method,
      target: query === '' ? path : `${path}?${query}`,
      headers: req.headers,
      body: req.body,
    };
    const answer = await this.pool.request(slot, { op: 'admin', request }, FORWARD_TIMEOUT_MS);
    if (answer.op !== 'admin') throw new WorkerUnavailableError(`worker ${slot} answered something else`);
    return answer.response;
  }

  /** Runs `endpoint` here and, when the request changed something, in every serving worker. */
  #broadcasting(endpoint: AdminEndpoint): AdminEndpoint {
    return {
      ...endpoint,
      handler: async (req) => {
        const response = await endpoint.handler(req);
        const changes = req.method === 'POST' || req.query.has('enable') || req.query.has('disable');
        if (changes && (response.status ?? 200) < 400) {
          await Promise.allSettled(this.pool.ready().map((slot) => this.#forward(slot, req, req.path)));
        }
        return response;
      },
    };
  }

  /** The merged registry, or one worker's alone (`?worker=<n>`). */
  async #registryFor(worker: string | null): Promise<MetricsRegistry> {
    if (worker !== null && worker !== '') {
      const slot = this.#slot(worker);
      await this.#snapshot(slot);
      return this.#stats.registry([slot]);
    }
    const now = Date.now();
    const cached = this.#merged;
    if (cached && now - cached.at < MERGE_REUSE_MS) return cached.registry;
    const registry = this.#mergeAll();
    this.#merged = { at: now, registry };
    registry.catch(() => {
      if (this.#merged?.registry === registry) this.#merged = undefined;
    });
    return registry;
  }

  /** Asks worker `slot` for what changed since its last snapshot and records it. */
  async #snapshot(slot: number): Promise<number> {
    const answer = await this.pool.request(slot, { op: 'stats', known: this.#stats.known(slot) }, STATS_TIMEOUT_MS);
    if (answer.op !== 'stats') throw new WorkerUnavailableError(`worker ${slot} answered something else`);
    this.#stats.update(slot, answer.snapshot);
    return slot;
  }

  /**
   * Every serving worker's metrics merged, with the primary's own gauges. A worker that is
   * restarting is left out (its counters start again from zero, as a restarted process's do).
   */
  async #mergeAll(): Promise<MetricsRegistry> {
    const results = await Promise.allSettled(this.pool.ready().map((slot) => this.#snapshot(slot)));
    const slots = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    this.#stats.update(0, this.#ownSource.snapshot(this.#stats.known(0)));
    return this.#stats.registry([...slots, 0]);
  }

  /** The dashboard's process figures: the workers' memory summed with the primary's. */
  #processFigures(merged: MetricsRegistry): ProcessFigures {
    const g = (node: MetricsNode | undefined): number => {
      const m = node?.metric;
      return m?.kind === 'gauge' ? m.value : 0;
    };
    const own = process.memoryUsage();
    const elu = merged.resolve(['process', 'event_loop', 'utilization']);
    return {
      uptimeMs: Math.round(process.uptime() * 1000),
      rss: g(merged.resolve(['process', 'mem', 'rss'])) + own.rss,
      heapUsed: g(merged.resolve(['process', 'mem', 'heap', 'used'])) + own.heapUsed,
      heapTotal: g(merged.resolve(['process', 'mem', 'heap', 'total'])) + own.heapTotal,
      eventLoopUtilization: elu ? g(elu) : undefined,
    };
  }

  async #usagePayload(): Promise<ReturnType<typeof buildUsagePayload>> {
    const info = this.pool.info;
    const summary = {
      orgId: this.config.usage.orgId,
      routers: info?.usage.routers ?? [],
      namers: this.config.namers.map((n) => n.kind),
    };
    return buildUsagePayload(summary, await this.#registryFor(null));
  }

  /**
   * Graceful shutdown: every worker drains within `admin.shutdownGraceMs` (the admin interface
   * stays up meanwhile), then the primary closes. Idempotent.
   */
  shutdown(reason = 'requested'): Promise<void> {
    if (!this.#shutdown) {
      const graceMs = this.config.admin.shutdownGraceMs;
      this.#log.info({ reason, graceMs, workers: this.pool.count }, 'shutting down');
      this.#shutdown = (async () => {
        await this.#usage.close();
        await this.pool.shutdown(reason, Date.now() + graceMs);
        await this.admin.close();
        this.#processMetrics.stop();
        this.#own.close();
        this.#log.info('shutdown complete');
        this.#markClosed();
      })();
    }
    return this.#shutdown;
  }

  /** Ends the workers at once (a second signal during the drain). */
  abort(): void {
    this.pool.kill();
  }
}

/** Starts a proxy of `count` worker processes (see {@link PrimaryProcess}). */
export async function startPrimary(options: PrimaryOptions): Promise<PrimaryProcess> {
  const primary = new PrimaryProcess(options);
  await primary.start();
  return primary;
}
