// The HTTP header semantics of prx: names, hop-by-hop stripping, context headers, tracing,
// Via/Forwarded, client certificates, diagnostic TRACE and proxy error responses. Importing this
// module registers the `io.prx.default` trace propagator.
export * from './types.js';
export * from './names.js';
export * from './values.js';
export * from './hop-by-hop.js';
export * from './proxy-errors.js';
export * from './error-response.js';
export * from './context.js';
export * from './markers.js';
export * from './host-rewrite.js';
export * from './trace-propagator.js';
export * from './via.js';
export * from './forwarded.js';
export * from './client-cert.js';
export * from './diagnostic.js';
export { DerError } from './der.js';
