/** The errors of the mesh-control kinds (io.prx.orch.meshctl identifier, authorizer and logger). */
import { PrxError } from '../../../core/errors.js';
import { ProxyError } from '../headers/proxy-errors.js';

/** A poll of the control plane failed: no answer, a non-200 status, or a body that is not its API. */
export class PilotApiError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_MESHCTL_PILOT', message, options);
  }
}

/** gRPC status names, for messages. */
const GRPC_NAMES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
];

/** The HTTP status of a mixer's (gRPC) check status, as Linkerd 1 and the mesh's own proxy mapped it. */
const HTTP_OF_GRPC = [200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401];

export function httpStatusOfCheck(code: number): number {
  return HTTP_OF_GRPC[code] ?? 500;
}

export function grpcStatusName(code: number): string {
  return GRPC_NAMES[code] ?? `code ${code}`;
}

/**
 * The mixer's precondition check refused the request (or could not be asked: UNKNOWN, as Linkerd 1
 * failed closed). Answered with the status mapped from the check's (a gRPC request gets the gRPC
 * status itself).
 */
export class MeshctlDeniedError extends ProxyError {
  readonly grpcCode: number;
  constructor(grpcCode: number, detail: string) {
    super('PRX_ERR_MESHCTL_DENIED', `denied by the mesh mixer: ${grpcStatusName(grpcCode)}${detail === '' ? '' : `: ${detail}`}`, httpStatusOfCheck(grpcCode), false);
    this.grpcCode = grpcCode;
  }
}

/** A route rule's `redirect`: the request is answered with this status and `Location` instead of routed. */
export class MeshctlRedirect extends ProxyError {
  readonly location: string;
  constructor(status: number, location: string) {
    super('PRX_ERR_MESHCTL_REDIRECT', `redirected by a mesh route rule to ${location}`, status, false);
    this.location = location;
  }
}
