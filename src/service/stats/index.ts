/** Stats core: the metrics registry, receivers, histograms and scheduling used across prx. */
export { EmptyMetricNameError, MetricTypeConflictError } from './errors.js';
export {
  BUCKET_COUNT,
  BucketedHistogram,
  EMPTY_SUMMARY,
  MAX_HISTOGRAM_VALUE,
  QUANTILES,
  bucketOf,
  bucketRange,
  mergeBuckets,
  summariseBuckets,
  type HistogramBuckets,
  type HistogramSummary,
} from './histogram.js';
export {
  CounterMetric,
  GaugeMetric,
  HistogramMetric,
  readGauge,
  type Counter,
  type Gauge,
  type Histogram,
  type Metric,
  type SettableGauge,
} from './metrics.js';
export { NullStatsReceiver, broadcastStats, type StatsReceiver } from './receiver.js';
export {
  DEFAULT_SNAPSHOT_INTERVAL_MS,
  MetricsRegistry,
  type MetricsNode,
  type MetricsRegistryOptions,
} from './registry.js';
export { ManualScheduler, systemScheduler, type Cancel, type Scheduler } from './scheduler.js';
export {
  clientServiceStats,
  clientStats,
  pathLabel,
  pruneClient,
  pruneService,
  routerStats,
  serverLabel,
  serverStats,
  serviceStats,
} from './scopes.js';
export { gaugeMerge, MergedStats, SnapshotSource, type GaugeMerge, type SnapshotKnown, type StatsSnapshot } from './snapshot.js';
export { StatusCodeCounters } from './status-codes.js';
