import { AdminHttpError } from '../../admin/index.js';
import { PrxError } from '../../core/errors.js';

/** Errors of the workers mode (`workers` > 1): one catalogue for the primary and its workers. */

/** 503: no worker could answer an admin request (none ready, or it did not answer in time). */
export class WorkerUnavailableError extends AdminHttpError {
  constructor(message: string) {
    super('PRX_ERR_WORKER_UNAVAILABLE', 503, message);
  }
}

/** 404: `/admin/workers/<n>/…` or `?worker=<n>` names no worker slot. */
export class UnknownWorkerError extends AdminHttpError {
  constructor(slot: string, count: number) {
    super('PRX_ERR_UNKNOWN_WORKER', 404, `no worker ${JSON.stringify(slot)}: workers are numbered 1 to ${count}`);
  }
}

/** A worker process could not bring the config up (the first start fails the whole proxy). */
export class WorkerStartError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_WORKER_START', message);
  }
}

/** A worker failed a request from the primary (it threw, or exited before answering). */
export class WorkerRequestError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_WORKER_REQUEST', message);
  }
}
