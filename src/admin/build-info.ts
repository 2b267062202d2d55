import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What `/admin/server_info` reports about the build. */
export interface BuildInfo {
  readonly name: string;
  readonly version: string;
  /** From `build-info.json` beside package.json, when a build step wrote one. */
  readonly commit?: string;
  readonly buildTime?: string;
}

/** The file a build step may write next to package.json: `{"commit": "…", "buildTime": "…"}`. */
export const BUILD_INFO_FILE = 'build-info.json';

/**
 * Reads prx's package.json (found by walking up from this module, so it works from `src/` under
 * tsx and from `dist/` alike) and the optional build-info file.
 */
export function readBuildInfo(from: string = dirname(fileURLToPath(import.meta.url))): BuildInfo {
  const root = findPackageRoot(from);
  if (root === undefined) return { name: 'prx', version: 'unknown' };
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name?: string; version?: string };
  const info: BuildInfo = { name: pkg.name ?? 'prx', version: pkg.version ?? 'unknown' };
  const buildFile = join(root, BUILD_INFO_FILE);
  if (!existsSync(buildFile)) return info;
  const build = JSON.parse(readFileSync(buildFile, 'utf8')) as { commit?: unknown; buildTime?: unknown };
  return {
    ...info,
    ...(typeof build.commit === 'string' ? { commit: build.commit } : {}),
    ...(typeof build.buildTime === 'string' ? { buildTime: build.buildTime } : {}),
  };
}

function findPackageRoot(start: string): string | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}
