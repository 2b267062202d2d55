// thriftmux routers in-process for the thriftmux tests (config through the real schema, real
// sockets), and thrift-over-mux helpers: Apache Thrift writes the call that goes in a Tdispatch
// body and reads the thrift message that comes back in the Rdispatch.
import pino, { type Logger } from 'pino';
import { lookupKind, validateProxyConfig } from '../../../src/config/index.js';
import { dnsResolver } from '../../../src/namer/dns.js';
import { SystemNamer } from '../../../src/naming/index.js';
import type { RouterContext, RunningRouter } from '../../../src/router/core/types.js';
import { MetricsRegistry } from '../../../src/service/stats/index.js';
import { nullTracer } from '../../../src/service/tracing.js';
import { encodeCall, MT, protocolClass, readReply, thrift, transportClass, type Proto, type Reply, type TTransportWithData } from '../thrift/apache.js';
import { freePort } from '../support.js';

export { eventually, freePort } from '../support.js';

export interface ThriftmuxRouterUnderTest {
  readonly router: RunningRouter;
  readonly registry: MetricsRegistry;
  readonly port: number;
  metric(name: string): number | undefined;
  close(): Promise<void>;
}

/** Builds and starts a thriftmux router (experimental: true); servers without a port get a free one. */
export async function startThriftmuxRouter(routerCfg: Record<string, unknown>, opts: { log?: Logger } = {}): Promise<ThriftmuxRouterUnderTest> {
  const servers = (routerCfg['servers'] as Record<string, unknown>[] | undefined) ?? [{}];
  const withPorts = await Promise.all(servers.map(async (s) => ({ port: await freePort(), ...s })));
  const registry = new MetricsRegistry();
  await import('../../../src/router/thrift/thriftmux.js');
  const cfg = validateProxyConfig({ routers: [{ protocol: 'thriftmux', experimental: true, ...routerCfg, servers: withPorts }] });
  const def = lookupKind('protocol', 'thriftmux');
  if (!def) throw new Error('thriftmux protocol not registered');
  const ctx: RouterContext = {
    stats: registry.stats,
    namers: [],
    system: new SystemNamer({ resolveHost: dnsResolver() }),
    tracer: nullTracer,
    log: opts.log ?? pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' }),
  };
  const router = (def.create as (c: unknown, x: RouterContext) => RunningRouter)(cfg.routers[0], ctx);
  const addrs = await router.listen();
  const port = (addrs[0] as { port: number }).port;
  return {
    router,
    registry,
    port,
    metric: (name) => (registry.find(name)?.metric as { value?: number } | undefined)?.value,
    close: async () => {
      await router.close(Date.now() + 1000);
      registry.close();
    },
  };
}

/** A thrift call `name(1: string arg)` as a Tdispatch body (one unframed message, as Finagle's thriftmux sends it). */
export function thriftBody(proto: Proto, name: string, arg: string, seqid: number, type: number = MT.CALL): Buffer {
  return encodeCall('buffered', proto, name, arg, seqid, type);
}

/** Reads the thrift message in an Rdispatch body with Apache Thrift. */
export function readThriftBody(proto: Proto, body: Buffer): Reply {
  let out: Reply | undefined;
  let error: unknown;
  const P = protocolClass(proto);
  transportClass('buffered').receiver((t: TTransportWithData) => {
    try {
      out = readReply(new P(t));
    } catch (e) {
      error = e;
    }
  })(body);
  if (out === undefined) throw error instanceof Error ? error : new Error(`no thrift message in ${body.toString('hex')}`);
  return out;
}

export { thrift };
