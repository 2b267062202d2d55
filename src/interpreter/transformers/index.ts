// The built-in transformer kinds; importing this module registers them all.
export * from './localhost.js';
export * from './specific-host.js';
export * from './port.js';
export * from './replace.js';
export * from './const.js';
export { IpSet, keepAddresses } from './ip-filter.js';
export * from './localnode.js';
export * from './daemonset.js';
export { NODE_NAME_META, subnet24 } from './node-match.js';
