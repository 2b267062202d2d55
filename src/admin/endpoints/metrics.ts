import type { MetricsRegistry } from '../../service/stats/index.js';
import { PROMETHEUS_CONTENT_TYPE, renderMetricsJson, renderPrometheus } from '../../telemetry/index.js';
import { flag, jsonResponse, type AdminEndpoint, type AdminRequest } from '../handler.js';

/**
 * The registry an export renders: the process's own, or one built per request (a proxy with
 * several workers merges theirs; the function may refuse the request with an admin error).
 */
export type RegistrySource = MetricsRegistry | ((req: AdminRequest) => MetricsRegistry | Promise<MetricsRegistry>);

/** The registry of `source` for this request. */
export function registryFor(source: RegistrySource, req: AdminRequest): MetricsRegistry | Promise<MetricsRegistry> {
  return typeof source === 'function' ? source(req) : source;
}

/** Where and how `/admin/metrics/prometheus` is served (the prometheus telemeter's `path` and `prefix`). */
export interface MetricsEndpointOptions {
  /** Defaults to `/admin/metrics/prometheus`. */
  readonly prometheusPath?: string;
  /** Prepended to every metric name; defaults to none. */
  readonly prometheusPrefix?: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * `/admin/metrics.json` (query `pretty=1`, `tree=1`, `q=a/b`; an unknown subtree is a 404
 * `{"error": "No such subtree: a/b"}`) and the Prometheus exposition, both over `registry`.
 */
export function metricsEndpoints(source: RegistrySource, options: MetricsEndpointOptions = {}): AdminEndpoint[] {
  return [
    {
      path: '/admin/metrics.json',
      description: 'Metrics as JSON. Query `pretty=1`, `tree=1`, `q=<scope/path>`.',
      handler: async (req) => {
        const registry = await registryFor(source, req);
        const q = req.query.get('q');
        const { found, body } = renderMetricsJson(registry, {
          pretty: flag(req.query, 'pretty'),
          tree: flag(req.query, 'tree'),
          ...(q !== null && q !== '' ? { q } : {}),
        });
        return { status: found ? 200 : 404, contentType: JSON_TYPE, body };
      },
    },
    {
      path: options.prometheusPath ?? '/admin/metrics/prometheus',
      description: 'Metrics in Prometheus text format.',
      handler: async (req) => ({
        contentType: PROMETHEUS_CONTENT_TYPE,
        body: renderPrometheus(await registryFor(source, req), options.prometheusPrefix ?? ''),
      }),
    },
  ];
}

/** `/admin/metrics/usage`: the exact usage payload that would be sent to the vendor. */
export function usageEndpoint(payload: () => unknown): AdminEndpoint {
  return {
    path: '/admin/metrics/usage',
    description: 'The exact usage payload that is sent to the vendor.',
    handler: async () => jsonResponse(await payload(), 200, true),
  };
}
