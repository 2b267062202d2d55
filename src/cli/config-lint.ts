import { dtabLinters, type RoutingSnapshot } from '../admin/naming/dtab-lint.js';
import type { ProxyConfig } from '../config/index.js';
import { readDtab, readPath } from '../naming/index.js';

/**
 * Interpreter kinds that bind `/#/` names through the proxy's configured namers. Others (a
 * resolver's) bind them elsewhere, so their routers' `/#/` destinations are not checked.
 */
const LOCAL_NAMER_INTERPRETERS: ReadonlySet<string> = new Set(['default', 'io.prx.fs']);

/** What the dtab linters see of a validated config, before anything runs. */
export function configRoutingSnapshot(config: ProxyConfig): RoutingSnapshot {
  return {
    routers: config.routers.map((r) => ({
      label: r.label,
      dstPrefix: readPath(r.dstPrefix),
      dtab: readDtab(r.dtab),
      localNamers: LOCAL_NAMER_INTERPRETERS.has(r.interpreter.kind),
    })),
    namerPrefixes: config.namers.map((n) => readPath(`/#${n.prefix}`)),
  };
}

/**
 * The dtab lint issues of a config (the ones `/admin/lint` reports once it runs), one line each as
 * `prx --check` prints them: `warning: router …`.
 */
export async function configLintLines(config: ProxyConfig): Promise<string[]> {
  const snapshot = configRoutingSnapshot(config);
  const lines: string[] = [];
  for (const linter of dtabLinters(() => snapshot)) {
    for (const issue of (await linter.run()).issues) lines.push(`${issue.severity}: ${issue.message}`);
  }
  return lines;
}
