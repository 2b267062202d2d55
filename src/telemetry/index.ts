/** Telemetry: metric exports, process metrics, telemeter kinds and usage reporting. */
export { renderMetricsJson, type MetricsJsonOptions, type MetricsJsonResult } from './metrics-json.js';
export { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from './prometheus.js';
export { ProcessMetrics, type ProcessMetricsOptions } from './process-metrics.js';
export {
  defineTelemeter,
  type Telemeter,
  type TelemeterContext,
  type TelemeterDef,
} from './telemeter.js';
export {
  UdpStatsTelemeter,
  statsdName,
  udpStatsSchema,
  udpStatsTelemeter,
  type UdpStatsConfig,
  type UdpStatsOptions,
} from './udpstats.js';
export { TraceLogTracer, traceLogSchema, traceLogTelemeter, type TraceLogConfig } from './tracelog.js';
export {
  UsageReporter,
  buildUsagePayload,
  detectContainerManager,
  prxVersion,
  type UsageEnvironment,
  type UsagePayload,
  type UsageReporterOptions,
  type UsageStat,
  type UsageSummary,
} from './usage.js';
