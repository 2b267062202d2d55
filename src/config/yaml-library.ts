import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

/** The `yaml` package's API, as {@link withYamlLibrary} lends it. */
export type YamlLibrary = typeof Yaml;

// Set by scripts/bundle.mjs: the bundle's single-file copy of the `yaml` package, relative to
// the chunk this module is bundled into. Unset when run from source (tests).
declare const PRX_YAML_LIBRARY: string | undefined;

/**
 * Runs `use` with the YAML parser loaded. In the bundle the parser is a CommonJS file of its own,
 * loaded for the call and unloaded after. Why: a config is parsed once, at start-up (or by a
 * lint), and an ES module can never be unloaded: bundled with the rest, the parser's code, its
 * 160 KB of source text and its classes stayed in every proxy's heap, about 800 KiB measured. A
 * CommonJS module dropped from `require.cache` (and reached from nothing else) is collected.
 * Run from source, node_modules' `yaml` is loaded once and stays, as any module would.
 */
export function withYamlLibrary<T>(use: (yaml: YamlLibrary) => T): T {
  if (typeof PRX_YAML_LIBRARY === 'string') return withTransientModule(PRX_YAML_LIBRARY, use);
  return use(createRequire(import.meta.url)('yaml') as YamlLibrary);
}

/** Loads the CommonJS module `specifier` (resolved from this file) for `use`, and unloads it after. */
export function withTransientModule<M, T>(specifier: string, use: (module: M) => T): T {
  // A fresh require per call: the module that loads another lists it as a child, so a
  // long-lived one would keep it.
  const require = createRequire(import.meta.url);
  const file = require.resolve(specifier);
  try {
    return use(require(file) as M);
  } finally {
    delete require.cache[file];
  }
}
