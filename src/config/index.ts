// The config module's public surface: loading, validation, schema builders for plugins, errors.
export * from './errors.js';
export * from './frozen.js';
export { builtSchemaCount, lazySchema, releaseSchemas } from './lazy-schema.js';
export { addIssue, describeIssue, missingKey, parseNested, validate, validateOnce, withoutNulls, type IssueParams } from './issues.js';
export * from './loader.js';
export * from './schema.js';
export * from './tls.js';
export * from './namer-tls.js';
export * from './policy.js';
export * from './router.js';
export * from './proxy-config.js';
export * from './registry.js';
export * from './resolver-config.js';
