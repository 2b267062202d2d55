import { ExceptionCounters } from '../../service/stats/exception-stats.js';
import type { Counter, Histogram, StatsReceiver } from '../../service/stats/index.js';

/** A client's request counters, in its own scope or in one of its per-service scopes. */
export interface ClientCounters {
  readonly requests: Counter;
  readonly success: Counter;
  readonly failures: Counter;
  readonly failureClasses: ExceptionCounters;
  readonly latency: Histogram;
}

/** The counters of `stats`' scope, made once per scope. */
export function clientCounters(stats: StatsReceiver): ClientCounters {
  return {
    requests: stats.counter('requests'),
    success: stats.counter('success'),
    failures: stats.counter('failures'),
    failureClasses: new ExceptionCounters(stats),
    latency: stats.stat('request_latency_ms'),
  };
}
