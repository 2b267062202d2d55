// The interpreter layer's public surface. Importing it registers every built-in interpreter and
// transformer kind.
export * from './context.js';
export * from './errors.js';
export * from './transformer.js';
export * from './transformers/index.js';
export * from './default.js';
export * from './dtab-file.js';
export * from './fs.js';
export * from './orch-configmap.js';
export * from './resolver-http.js';
export * from './mesh.js';
export * from './resolver-thrift.js';
export { ResolverLink, dstAddresses, type LinkHandlers, type LinkState, type LinkWatch } from './resolver-link.js';
export { ThriftPollWatch, type PollWatchStatus } from './thrift-poll-watch.js';
export { MeshWatch, type MeshWatchStatus } from './mesh-watch.js';
export { ControllerWatch, type ControllerEndpoint, type ControllerTls, type WatchLiveness, type WatchStatus } from './resolver-http-watch.js';
export { JsonStreamSplitter, parseAddr, parseBoundTree, ENDPOINT_WEIGHT_META_KEY, type StreamItem } from './resolver-http-json.js';
export * from './liveness.js';
