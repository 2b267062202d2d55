/** The orchestrator (Kubernetes) API: a client (kubectl proxy or in-cluster), list+watch informers, object shapes. */
export { DEFAULT_ORCH_API_PORT, OrchApiClient, SERVICE_ACCOUNT_DIR, collectionPath, statusMessage } from './client.js';
export type { OrchApiEnvironment, OrchApiTarget, OrchGetResult, OrchWatchStream } from './client.js';
export { OrchApiError, OrchInClusterError } from './errors.js';
export { DEFAULT_INFORMER_BACKOFF, Informer, type InformerOptions, type InformerState } from './informer.js';
export { JsonObjectSplitter } from './json-stream.js';
export * from './types.js';
