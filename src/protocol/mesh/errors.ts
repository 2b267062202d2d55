import { PrxError } from '../../core/errors.js';

/** A mesh message that decodes but does not describe a valid value (a tree without a node, a bad address). */
export class MeshMessageError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_MESH_MESSAGE', message);
  }
}

/** The resolver reported a failure inside a message (a `Replicas.failed`, a delegation `exception`). */
export class MeshRemoteFailureError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_MESH_REMOTE_FAILURE', message);
  }
}
