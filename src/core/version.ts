import { readFileSync } from 'node:fs';

/**
 * Replaced by the version in package.json when scripts/bundle.mjs builds the executables (an
 * esbuild `define`), so an installed prx does not need its package.json at run time.
 */
declare const PRX_BUILD_VERSION: string | undefined;

let cachedVersion: string | undefined;

/**
 * prx's version: the one bundled at build time, else (running from src/ under tsx, or from tsc's
 * dist/) the version in the package.json found upward from this module; 'unknown' without one.
 */
export function prxVersion(): string {
  if (typeof PRX_BUILD_VERSION === 'string') return PRX_BUILD_VERSION;
  if (cachedVersion !== undefined) return cachedVersion;
  cachedVersion = 'unknown';
  for (let dir = new URL('./', import.meta.url); ; dir = new URL('../', dir)) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'prx' && typeof pkg.version === 'string') return (cachedVersion = pkg.version);
    } catch {
      // No package.json at this level; keep walking up.
    }
    if (new URL('../', dir).href === dir.href) return cachedVersion;
  }
}
