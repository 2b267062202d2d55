export * from './errors.js';
export * from './path.js';
export * from './name-tree.js';
export * from './dtab.js';
export * from './parser.js';
export * from './dtab-headers.js';
