/**
 * Anonymous usage data: which kinds of routers, interpreters, identifiers, transformers and namers
 * are configured, the environment (OS, container orchestrator) and a few runtime figures
 * (requests served per server, memory, GC, uptime, CPUs). `/admin/metrics/usage` serves exactly
 * what is sent.
 *
 * Never included: router or namer labels, server addresses, service names, directories, dtabs,
 * request data. The builder copies whitelisted fields only and drops any "kind" string that does
 * not look like a kind, so a value planted in the wrong field cannot leak.
 */
import { availableParallelism, release, type } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { errorMessage } from '../core/errors.js';
import { prxVersion } from '../core/version.js';
import {
  readGauge,
  serverLabel,
  systemScheduler,
  type Cancel,
  type MetricsRegistry,
  type Scheduler,
} from '../service/stats/index.js';

/** What the config loader knows about the configuration, reduced to kinds and server sockets. */
export interface UsageSummary {
  readonly orgId?: string | undefined;
  readonly routers: readonly {
    readonly protocol: string;
    readonly interpreter: string;
    readonly identifiers: readonly string[];
    readonly transformers: readonly string[];
    /** Used only to find each server's request counter; never copied into the payload. */
    readonly servers: readonly { readonly ip: string; readonly port: number }[];
  }[];
  readonly namers: readonly string[];
}

/** One named number of the payload. */
export interface UsageStat {
  readonly name: string;
  readonly value: number;
}

/** The usage message (Linkerd's usage.proto fields, as JSON). */
export interface UsagePayload {
  readonly pid: string;
  readonly orgId?: string;
  readonly prxVersion: string;
  readonly containerManager?: string;
  readonly osName: string;
  readonly osVersion: string;
  readonly startTime: string;
  readonly routers: readonly {
    readonly protocol: string;
    readonly interpreter: string;
    readonly identifiers: readonly string[];
    readonly transformers: readonly string[];
  }[];
  readonly namers: readonly string[];
  readonly counters: readonly UsageStat[];
  readonly gauges: readonly UsageStat[];
}

/** Facts about the process, injectable for tests. */
export interface UsageEnvironment {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly pid?: string;
  readonly version?: string;
  readonly startTime?: Date;
  readonly osName?: string;
  readonly osVersion?: string;
}

/** Identifies this process in usage reports; random, stable for the process's lifetime. */
let processUuid: string | undefined;

/** Environment variables that betray a container orchestrator, checked in order. */
const ORCHESTRATORS: readonly (readonly [variable: string, name: string])[] = [
  ['KUBERNETES_SERVICE_HOST', 'kubernetes'],
  ['MESOS_TASK_ID', 'mesos'],
  ['MARATHON_APP_ID', 'marathon'],
  ['NOMAD_ALLOC_ID', 'nomad'],
  ['ECS_CONTAINER_METADATA_URI_V4', 'ecs'],
  ['ECS_CONTAINER_METADATA_URI', 'ecs'],
];

/** The container orchestrator the process runs under, if its environment reveals one. */
export function detectContainerManager(env: Readonly<Record<string, string | undefined>>): string | undefined {
  for (const [variable, name] of ORCHESTRATORS) if (env[variable]) return name;
  return undefined;
}

const KIND = /^[A-Za-z0-9_.:-]{1,100}$/;
const kinds = (xs: readonly string[]): string[] => xs.filter((x) => KIND.test(x));
const kind = (x: string): string => (KIND.test(x) ? x : 'unknown');

/** Builds the payload from the config summary and the live metrics. */
export function buildUsagePayload(
  summary: UsageSummary,
  registry: MetricsRegistry,
  environment: UsageEnvironment = {},
): UsagePayload {
  const env = environment.env ?? process.env;
  const containerManager = detectContainerManager(env);
  const orgId = summary.orgId?.trim();
  return {
    pid: environment.pid ?? (processUuid ??= process.getBuiltinModule('node:crypto').randomUUID()),
    ...(orgId ? { orgId } : {}),
    prxVersion: environment.version ?? prxVersion(),
    ...(containerManager ? { containerManager } : {}),
    osName: environment.osName ?? type(),
    osVersion: environment.osVersion ?? release(),
    startTime: minuteIso(environment.startTime ?? new Date(performance.timeOrigin)),
    routers: summary.routers.map((r) => ({
      protocol: kind(r.protocol),
      interpreter: kind(r.interpreter),
      identifiers: kinds(r.identifiers),
      transformers: kinds(r.transformers),
    })),
    namers: kinds(summary.namers),
    counters: summary.routers.flatMap((r) =>
      r.servers.map((s) => ({ name: 'srv_requests', value: serverRequests(registry, serverLabel(s.ip, s.port)) })),
    ),
    gauges: processGauges(registry),
  };
}

/** `2022-05-24T14:50Z`: minute precision, as Linkerd reports it. */
function minuteIso(d: Date): string {
  return `${d.toISOString().slice(0, 16)}Z`;
}

/** A server's request counter, whichever router owns it (server sockets are unique). */
function serverRequests(registry: MetricsRegistry, server: string): number {
  for (const router of registry.resolve(['rt'])?.children.values() ?? []) {
    const m = router.children.get('server')?.children.get(server)?.children.get('requests')?.metric;
    if (m?.kind === 'counter') return m.value;
  }
  return 0;
}

function processGauges(registry: MetricsRegistry): UsageStat[] {
  const read = (name: string, fallback?: () => number): UsageStat[] => {
    const m = registry.resolve(name.split('/'))?.metric;
    const v = m?.kind === 'gauge' ? readGauge(m) : fallback?.();
    return v === undefined ? [] : [{ name, value: v }];
  };
  return [
    ...read('process/mem/rss', () => process.memoryUsage.rss()),
    ...read('process/mem/heap/used', () => process.memoryUsage().heapUsed),
    ...read('process/gc/msec'),
    ...read('process/uptime', () => process.uptime() * 1000),
    ...read('process/num_cpus', () => availableParallelism()),
  ];
}

/** prx's version (bundled at build time; from package.json when run from source). */
export { prxVersion };

/** Options of {@link UsageReporter}. */
export interface UsageReporterOptions {
  /** `usage.enabled`. */
  readonly enabled: boolean;
  /** Where reports are POSTed; nothing is sent without one. */
  readonly endpoint?: string | undefined;
  /** Builds the payload at send time. */
  readonly payload: () => UsagePayload | Promise<UsagePayload>;
  readonly logger: Logger;
  readonly scheduler?: Scheduler;
  /** Time between reports (default one hour). */
  readonly intervalMs?: number;
  /** Delay of the first report (default one minute). */
  readonly initialDelayMs?: number;
  /** Each delay moves by up to ± this much, at most half the delay (default one minute). */
  readonly jitterMs?: number;
  readonly random?: () => number;
  /** Per-request timeout (default 10 s). */
  readonly timeoutMs?: number;
}

/**
 * Sends the usage payload to `endpoint` about a minute after start and then hourly, only when
 * enabled and an endpoint is configured. Failures are swallowed with one debug log line.
 */
export class UsageReporter {
  readonly #opts: UsageReporterOptions;
  readonly #scheduler: Scheduler;
  #cancel: Cancel | undefined;
  #inFlight: { readonly abort: AbortController; readonly done: Promise<boolean> } | undefined;
  #closed = false;

  constructor(options: UsageReporterOptions) {
    this.#opts = options;
    this.#scheduler = options.scheduler ?? systemScheduler;
  }

  /** True when reports will be sent. */
  get active(): boolean {
    return this.#opts.enabled && !!this.#opts.endpoint;
  }

  start(): void {
    if (!this.active || this.#closed || this.#cancel) return;
    this.#schedule(this.#opts.initialDelayMs ?? 60_000);
  }

  /** Sends one report now; resolves whether the endpoint accepted it. Never rejects. */
  report(): Promise<boolean> {
    const endpoint = this.#opts.endpoint;
    if (!endpoint || this.#closed) return Promise.resolve(false);
    const abort = new AbortController();
    const done = this.#post(endpoint, abort.signal).finally(() => {
      if (this.#inFlight?.abort === abort) this.#inFlight = undefined;
    });
    this.#inFlight = { abort, done };
    return done;
  }

  /** Stops scheduling and aborts a report in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancel?.();
    this.#cancel = undefined;
    const inFlight = this.#inFlight;
    if (inFlight) {
      inFlight.abort.abort();
      await inFlight.done;
    }
  }

  #schedule(baseMs: number): void {
    const spread = Math.min(this.#opts.jitterMs ?? 60_000, baseMs / 2);
    const delay = Math.max(0, baseMs + ((this.#opts.random ?? Math.random)() * 2 - 1) * spread);
    this.#cancel = this.#scheduler.after(delay, () => {
      void this.report().then(() => {
        if (!this.#closed) this.#schedule(this.#opts.intervalMs ?? 3_600_000);
      });
    });
  }

  async #post(endpoint: string, signal: AbortSignal): Promise<boolean> {
    try {
      // undici costs ~60 ms and ~10 MiB at start-up; only an opted-in report needs it.
      const { request } = await import('undici');
      const res = await request(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(await this.#opts.payload()),
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.#opts.timeoutMs ?? 10_000)]),
      });
      await res.body.dump();
      if (res.statusCode < 300) return true;
      this.#opts.logger.debug({ status: res.statusCode }, 'usage report rejected');
    } catch (e) {
      // An abort by close() is not a failure worth a log line.
      if (!signal.aborted) this.#opts.logger.debug({ err: errorMessage(e) }, 'usage report failed');
    }
    return false;
  }
}
