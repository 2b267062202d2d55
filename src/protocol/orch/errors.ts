import { PrxError } from '../../core/errors.js';

/** The orchestrator API answered a status other than success, or an unreadable body. */
export class OrchApiError extends PrxError {
  /** The HTTP status, or 0 when no answer arrived (connection refused, reset, aborted). */
  readonly status: number;
  constructor(message: string, status: number, options?: ErrorOptions) {
    super(status === 401 || status === 403 ? 'PRX_ERR_ORCH_API_FORBIDDEN' : 'PRX_ERR_ORCH_API_UNAVAILABLE', message, options);
    this.status = status;
  }
}

/** In-cluster mode was asked for (no `host`) but its service-account files or environment are incomplete. */
export class OrchInClusterError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_ORCH_IN_CLUSTER', message);
  }
}
