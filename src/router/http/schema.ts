import { z } from 'zod';
import {
  clientPolicy,
  intInRange,
  kilobytes,
  kindShape,
  kindSlot,
  nonEmptyString,
  oneOrMany,
  routerBaseShape,
  serverList,
  serverShape,
  servicePolicy,
  choice,
  filePath,
  addIssue,
  durationMs,
  lazySchema,
} from '../../config/index.js';
import { parseRollPolicy } from '../../protocol/http/access-log.js';
import { responseClassifierSlot } from '../../protocol/http/classifiers.js';
import { forwardedHeaderConfig } from '../../protocol/http/headers/forwarded.js';

// The `http` router's config: the common router keys plus the http parameters of the spec.

/**
 * `engine`: `engine3` (default) or `engine4`. Both select prx's single HTTP/1.1 engine (node's
 * parser inbound, undici outbound); the key is accepted so Linkerd configs load unchanged.
 */
const engine = lazySchema(() => choice('kind', {
  engine3: z.strictObject({ ...kindShape('engine3') }),
  engine4: z.strictObject({ ...kindShape('engine4') }),
}));

export const httpServerSchema = lazySchema(() => z.strictObject({
  ...serverShape({ defaultPort: 4140 }),
  // A request head must be complete this long after its first byte (408); 0: no limit.
  requestHeadTimeoutMs: durationMs.default(60_000),
  // A request body may go this long without a byte (408, or a cut once the answer began); 0: no limit.
  requestBodyIdleTimeoutMs: durationMs.default(60_000),
  addForwardedHeader: forwardedHeaderConfig.optional(),
  timestampHeader: nonEmptyString.optional(),
  engine: engine.optional(),
}));

export type HttpServerConfig = z.output<typeof httpServerSchema>;

const rollPolicy = lazySchema(() => z.string().superRefine((text, ctx) => {
  try {
    parseRollPolicy(text);
  } catch (e) {
    addIssue(ctx, [], e instanceof Error ? e.message : String(e), { value: text });
  }
}));

export const httpRouterSchema = lazySchema(() => z.strictObject({
  ...routerBaseShape(),
  protocol: z.literal('http'),
  servers: serverList(httpServerSchema),
  // responseIdleTimeoutMs: a due response may go this long without an upstream byte (502, or a cut once it streams); 0: no limit.
  client: clientPolicy({ engine: engine.optional(), responseIdleTimeoutMs: durationMs.optional() }),
  // io.prx.h2.* classifiers are refused here, at their key path (they would fail every request).
  service: servicePolicy({ responseClassifier: responseClassifierSlot('http').optional() }),
  identifier: oneOrMany(kindSlot('identifier')).prefault([{ kind: 'io.prx.header.token' }]),
  requestAuthorizers: z.array(kindSlot('requestAuthorizer')).default([]),
  loggers: z.array(kindSlot('logger')).default([]),
  tracePropagator: kindSlot('tracePropagator', { default: { kind: 'io.prx.default' } }),
  httpAccessLog: filePath.optional(),
  httpAccessLogRollPolicy: rollPolicy.default('Never'),
  httpAccessLogAppend: z.boolean().default(true),
  httpAccessLogRotateCount: intInRange(-1, 2147483647).default(-1),
  // At least 1: chunks are split into pieces of this size (Netty refuses 0 as well).
  maxChunkKB: intInRange(1, 2_097_151).default(8),
  maxHeadersKB: kilobytes.default(8),
  maxInitialLineKB: kilobytes.default(4),
  maxRequestKB: kilobytes.default(5120),
  maxResponseKB: kilobytes.default(5120),
  compressionLevel: intInRange(-1, 9).default(-1),
  streamingEnabled: z.boolean().default(true),
}));

export type HttpRouterConfig = z.output<typeof httpRouterSchema> & { readonly label: string };
