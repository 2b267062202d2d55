import { defaultLogRegistry, getLogger, type LogRegistry } from '../core/log.js';
import { tracingSwitch } from '../service/tracing.js';
import { readBuildInfo, type BuildInfo } from './build-info.js';
import { announcerEndpoint } from './endpoints/announcer.js';
import {
  configEndpoint,
  indexEndpoints,
  pingEndpoint,
  serverInfoEndpoint,
  shutdownEndpoint,
} from './endpoints/basics.js';
import { contentionEndpoint } from './endpoints/contention.js';
import { loggingEndpoint } from './endpoints/logging.js';
import { metricsEndpoints, usageEndpoint, type MetricsEndpointOptions, type RegistrySource } from './endpoints/metrics.js';
import { pprofEndpoints } from './endpoints/pprof.js';
import { registryEndpoint } from './endpoints/registry.js';
import { threadsEndpoints, WorkerRegistry } from './endpoints/threads.js';
import { tracingEndpoint, type TracingToggle } from './endpoints/tracing.js';
import { EventLoopMonitor, type EventLoopMonitorOptions } from './event-loop.js';
import type { AdminEndpoint } from './handler.js';
import { lintEndpoints, LinterRegistry } from './lint.js';
import { Profiler } from './pprof/profiler.js';
import { AdminServer, type AdminServerOptions } from './server.js';

/**
 * Everything the built-in endpoints read from the rest of the process. All optional.
 *
 * `admin.workerThreads` has no counterpart: Node serves HTTP on the event loop, and nothing the
 * admin does is CPU-heavy enough for a pool (gzip already runs on libuv's thread pool).
 */
export interface AdminOptions extends AdminServerOptions {
  /** The parsed configuration, served by `/config.json`. Absent: the endpoint is not registered. */
  readonly config?: unknown;
  /** Starts graceful shutdown; absent: `/admin/shutdown` is not registered. */
  readonly shutdown?: () => void | Promise<void>;
  /** Loggers behind `/logging.json`; defaults to the process-wide registry. */
  readonly logs?: LogRegistry;
  /** Defaults to the global tracing switch of `service/tracing.ts`. */
  readonly tracing?: TracingToggle;
  /** Announcement chains for `/admin/announcer`; defaults to none. */
  readonly announcements?: () => unknown;
  /** Per-router stack parameters and other sections for `/admin/registry.json`. */
  readonly registrySections?: () => Readonly<Record<string, unknown>>;
  readonly eventLoop?: EventLoopMonitorOptions;
  /** Build facts for `/admin/server_info`; read from package.json and build-info.json by default. */
  readonly build?: BuildInfo;
}

/**
 * The admin interface of a process: the server with every built-in endpoint registered, plus the
 * registries other parts of the process add to (linters, worker threads, further endpoints).
 *
 * ```ts
 * const admin = createAdmin({ port: 9990, config, shutdown: () => process.kill(process.pid, 'SIGTERM') });
 * registerMetricsEndpoints(admin, metricsRegistry);
 * admin.linters.add(dtabLinter);
 * await admin.listen();
 * ```
 */
export class Admin {
  readonly server: AdminServer;
  readonly linters = new LinterRegistry();
  readonly workers = new WorkerRegistry();
  readonly eventLoop: EventLoopMonitor;

  constructor(options: AdminOptions = {}) {
    this.server = new AdminServer(options);
    this.eventLoop = new EventLoopMonitor(options.eventLoop);
    const build = options.build ?? readBuildInfo();
    const endpoints: AdminEndpoint[] = [
      ...indexEndpoints(this.server),
      pingEndpoint(),
      serverInfoEndpoint(build),
      loggingEndpoint(options.logs ?? defaultLogRegistry),
      tracingEndpoint(options.tracing ?? tracingSwitch),
      announcerEndpoint(options.announcements ?? (() => [])),
      registryEndpoint({ build, ...(options.registrySections ? { sections: options.registrySections } : {}) }),
      ...lintEndpoints(this.linters),
      ...threadsEndpoints(this.eventLoop, this.workers),
      contentionEndpoint(this.eventLoop),
      ...pprofEndpoints(new Profiler()),
    ];
    if (options.config !== undefined) endpoints.push(configEndpoint(options.config));
    if (options.shutdown) endpoints.push(shutdownEndpoint(options.shutdown, options.logger ?? getLogger('prx.admin')));
    for (const endpoint of endpoints) this.server.add(endpoint);
  }

  /** Registers a further endpoint (plugins: namer state, interpreter state, …). */
  add(endpoint: AdminEndpoint): this {
    this.server.add(endpoint);
    return this;
  }

  /** Starts the event-loop monitor and the server; resolves with the bound address. */
  async listen(): Promise<{ ip: string; port: number }> {
    this.eventLoop.start();
    try {
      return await this.server.listen();
    } catch (e) {
      this.eventLoop.stop();
      throw e;
    }
  }

  /** The base URL ({admin_url}); only while listening. */
  get url(): string {
    return this.server.url;
  }

  async close(): Promise<void> {
    this.eventLoop.stop();
    await this.server.close();
  }
}

/** Builds the admin interface with its built-in endpoints (see {@link Admin}). */
export function createAdmin(options: AdminOptions = {}): Admin {
  return new Admin(options);
}

/**
 * Registers `/admin/metrics.json` and `/admin/metrics/prometheus` over the process's metrics
 * registry (rendered by `telemetry/`). The process assembly calls this once the registry exists.
 */
export function registerMetricsEndpoints(
  admin: Admin,
  registry: RegistrySource,
  options: MetricsEndpointOptions = {},
): void {
  for (const endpoint of metricsEndpoints(registry, options)) admin.add(endpoint);
}

/** Registers `/admin/metrics/usage`, serving the payload the usage reporter would send. */
export function registerUsageEndpoint(admin: Admin, payload: () => unknown): void {
  admin.add(usageEndpoint(payload));
}
