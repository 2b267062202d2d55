import { PrxError } from '../../core/errors.js';

/** A metric name was requested as a different type than the one already registered under it. */
export class MetricTypeConflictError extends PrxError {
  constructor(name: string, existing: string, requested: string) {
    super('PRX_ERR_STATS_TYPE_CONFLICT', `metric '${name}' is a ${existing}; cannot register it as a ${requested}`);
  }
}

/** A metric was requested with no name at all (every segment empty). */
export class EmptyMetricNameError extends PrxError {
  constructor() {
    super('PRX_ERR_STATS_EMPTY_NAME', 'a metric needs at least one non-empty name segment');
  }
}
