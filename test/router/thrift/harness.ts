// Starts real thrift routers in-process for the thrift end-to-end tests: config validated by the
// real schema, real sockets on 127.0.0.1, Apache Thrift (and thriftpy) peers.
import pino, { type Logger } from 'pino';
import { lookupKind, validateProxyConfig } from '../../../src/config/index.js';
import { dnsResolver } from '../../../src/namer/dns.js';
import { SystemNamer, type MountedNamer } from '../../../src/naming/index.js';
import type { RouterContext, RunningRouter } from '../../../src/router/core/types.js';
import { MetricsRegistry } from '../../../src/service/stats/index.js';
import { nullTracer, type Tracer } from '../../../src/service/tracing.js';
import { freePort } from '../support.js';

export { eventually, freePort } from '../support.js';

export interface ThriftRouterUnderTest {
  readonly router: RunningRouter;
  readonly registry: MetricsRegistry;
  readonly port: number;
  readonly label: string;
  metric(name: string): number | undefined;
  close(): Promise<void>;
}

/** Builds and starts a thrift router; servers without a port get a free one. */
export async function startThriftRouter(routerCfg: Record<string, unknown>, opts: { namers?: MountedNamer[]; log?: Logger; tracer?: Tracer } = {}): Promise<ThriftRouterUnderTest> {
  const servers = (routerCfg['servers'] as Record<string, unknown>[] | undefined) ?? [{}];
  const withPorts = await Promise.all(servers.map(async (s) => ({ port: await freePort(), ...s })));
  const registry = new MetricsRegistry();
  await import('../../../src/router/thrift/index.js');
  const cfg = validateProxyConfig({ routers: [{ protocol: 'thrift', ...routerCfg, servers: withPorts }] });
  const def = lookupKind('protocol', 'thrift');
  if (!def) throw new Error('thrift protocol not registered');
  const ctx: RouterContext = {
    stats: registry.stats,
    namers: opts.namers ?? [],
    system: new SystemNamer({ resolveHost: dnsResolver() }),
    tracer: opts.tracer ?? nullTracer,
    log: opts.log ?? pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' }),
  };
  const router = (def.create as (c: unknown, x: RouterContext) => RunningRouter)(cfg.routers[0], ctx);
  const addrs = await router.listen();
  const port = (addrs[0] as { port: number }).port;
  return {
    router,
    registry,
    port,
    label: router.label,
    metric: (name) => (registry.find(name)?.metric as { value?: number } | undefined)?.value,
    close: async () => {
      await router.close(Date.now() + 1000);
      registry.close();
    },
  };
}

/** A pino logger that keeps its records (to check what was logged). */
export function memoryLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}
