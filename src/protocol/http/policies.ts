/**
 * The request authorizer and logger kinds of the http and h2 routers; importing this module
 * registers every kind (today the mesh-control ones, io.prx.orch.meshctl).
 */
import './meshctl/authorizer.js';
import './meshctl/logger.js';

export { RequestPolicy, type PolicyContext, type PolicyRequest, type RequestAuthorizer, type RequestLogger } from './request-policy.js';
export { MeshctlDeniedError, MeshctlRedirect } from './meshctl/errors.js';
