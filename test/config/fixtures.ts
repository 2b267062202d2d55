// Test-only plugin kinds, registered the way real plugin modules do at import time. Each test file
// runs in its own process, so these never meet the real plugins' registrations.
import { z } from 'zod';
import {
  clientPolicy,
  ConfigError,
  failureAccrualShape,
  filePath,
  fraction,
  interpreterShape,
  kilobytes,
  kindShape,
  namerShape,
  positiveInt,
  registerKind,
  routerBaseShape,
  serverList,
  serverShape,
  servicePolicy,
} from '../../src/config/index.js';

const none = (): null => null;

/** Server of protocol `test`: default port 4999, plus a protocol-specific key. */
export const testServer = z.strictObject({
  ...serverShape({ defaultPort: 4999 }),
  addForwardedHeader: z.boolean().default(false),
});

/** Router of protocol `test`: the common keys plus protocol-specific router and client keys. */
export const testRouter = z.strictObject({
  ...routerBaseShape(),
  protocol: z.literal('test'),
  servers: serverList(testServer),
  client: clientPolicy({ engine: z.enum(['engine3', 'engine4']).optional() }),
  service: servicePolicy({ classificationTimeoutMs: z.int().min(0).optional() }),
  maxChunkKB: kilobytes.default(8),
});

registerKind({ family: 'protocol', kind: 'test', schema: testRouter, create: none });
registerKind({
  family: 'protocol',
  kind: 'testmux',
  experimental: true,
  schema: z.strictObject({ ...routerBaseShape(), protocol: z.literal('testmux'), servers: serverList(z.strictObject(serverShape({ defaultPort: 4998 }))) }),
  create: none,
});
registerKind({ family: 'interpreter', kind: 'default', schema: z.strictObject(interpreterShape('default')), create: none });
registerKind({
  family: 'interpreter',
  kind: 'io.prx.fs',
  schema: z.strictObject({ ...interpreterShape('io.prx.fs'), dtabFile: filePath }),
  create: none,
});
registerKind({ family: 'transformer', kind: 'io.prx.localhost', schema: z.strictObject(kindShape('io.prx.localhost')), create: none });
registerKind({
  family: 'namer',
  kind: 'test.namer',
  schema: z.strictObject({ ...namerShape('test.namer'), rootDir: filePath }),
  create: none,
});
registerKind({ family: 'namer', kind: 'io.prx.fs', schema: z.strictObject({ ...namerShape('io.prx.fs'), rootDir: filePath }), create: none });
registerKind({
  family: 'telemeter',
  kind: 'io.prx.udpstats',
  experimental: true,
  schema: z.strictObject({ ...kindShape('io.prx.udpstats'), sampleRate: fraction.default(1) }),
  create: none,
});
registerKind({ family: 'telemeter', kind: 'io.prx.tracelog', schema: z.strictObject({ ...kindShape('io.prx.tracelog'), sampleRate: fraction.default(1) }), create: none });
registerKind({ family: 'loadBalancer', kind: 'p2c', schema: z.strictObject({ ...kindShape('p2c'), maxEffort: positiveInt.default(5) }), create: none });
registerKind({ family: 'loadBalancer', kind: 'ewma', schema: z.strictObject({ ...kindShape('ewma'), enableProbation: z.boolean().default(false) }), create: none });
registerKind({
  family: 'failureAccrual',
  kind: 'io.prx.consecutiveFailures',
  schema: z.strictObject({ ...failureAccrualShape('io.prx.consecutiveFailures'), failures: positiveInt }),
  create: none,
});
registerKind({ family: 'clientTls', kind: 'io.prx.noValidation', schema: z.strictObject(kindShape('io.prx.noValidation')), create: none });

/** The smallest valid config: one `test` router on its default port. */
export const minimal = { routers: [{ protocol: 'test', servers: [{}] }] };

/** The ConfigError `fn` throws; fails the test if it throws anything else or nothing. */
export function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError, but nothing was thrown');
}
