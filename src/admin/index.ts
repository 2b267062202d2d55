/** The admin interface: server, security, built-in endpoints and profiling. */
export { Admin, createAdmin, registerMetricsEndpoints, registerUsageEndpoint, type AdminOptions } from './admin.js';
export { readBuildInfo, BUILD_INFO_FILE, type BuildInfo } from './build-info.js';
export { REDACTED, defaultEnvFilter, redactedEnv } from './endpoints/registry.js';
export { WorkerRegistry } from './endpoints/threads.js';
export type { TracingToggle } from './endpoints/tracing.js';
export { metricsEndpoints, usageEndpoint, type MetricsEndpointOptions, type RegistrySource } from './endpoints/metrics.js';
export { loggingEndpoint } from './endpoints/logging.js';
export { tracingEndpoint } from './endpoints/tracing.js';
export {
  AdminHttpError,
  AdminTlsError,
  BadRequestError,
  ConflictError,
  DuplicateEndpointError,
  DuplicateLinterError,
  MethodNotAllowedError,
  NotFoundError,
  AdminBodyTooLargeError,
} from './errors.js';
export { EventLoopMonitor, type BlockedPeriod, type EventLoopMonitorOptions } from './event-loop.js';
export {
  flag,
  jsonResponse,
  negotiate,
  requestParams,
  textResponse,
  type AdminEndpoint,
  type AdminHandler,
  type AdminRequest,
  type AdminResponse,
} from './handler.js';
export { LinterRegistry, type LintIssue, type LintResult, type LintSeverity, type Linter } from './lint.js';
export {
  ADMIN_DEFAULT_MAX_BODY_BYTES,
  ADMIN_DEFAULT_PORT,
  AdminServer,
  type AdminEndpointInfo,
  type AdminServerOptions,
  type AdminTls,
  type ForwardedAdminRequest,
} from './server.js';
export { SecurityPolicy, categoryOf, type AdminCategory, type AdminSecurity } from './security.js';
