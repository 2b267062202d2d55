import { z } from 'zod';
import {
  addIssue,
  clientPolicy,
  durationMs,
  filePath,
  intInRange,
  kindSlot,
  nonNegativeInt,
  oneOrMany,
  routerBaseShape,
  serverList,
  serverShape,
  servicePolicy,
  lazySchema,
} from '../../config/index.js';
import { parseRollPolicy } from '../../protocol/http/access-log.js';
import { responseClassifierSlot } from '../../protocol/http/classifiers.js';
import { h2ServerSettingsShape, h2SettingsShape } from '../../protocol/h2/settings.js';

// The `h2` router's config: the common router keys plus the h2 parameters of the spec.

export const h2ServerSchema = lazySchema(() => z.strictObject({
  ...serverShape({ defaultPort: 4142 }),
  ...h2ServerSettingsShape,
}));

export type H2ServerConfig = z.output<typeof h2ServerSchema>;

const rollPolicy = lazySchema(() => z.string().superRefine((text, ctx) => {
  try {
    parseRollPolicy(text);
  } catch (e) {
    addIssue(ctx, [], e instanceof Error ? e.message : String(e), { value: text });
  }
}));

/** `retryBufferSize`: how much of a request and of a response is kept so the request can be retried. */
const retryBufferSize = lazySchema(() => z.strictObject({
  requestBytes: nonNegativeInt.optional(),
  responseBytes: nonNegativeInt.optional(),
}));

export const h2RouterSchema = lazySchema(() => z.strictObject({
  ...routerBaseShape(),
  protocol: z.literal('h2'),
  servers: serverList(h2ServerSchema),
  client: clientPolicy({ ...h2SettingsShape }),
  // io.prx.http.* classifiers are refused here, at their key path.
  service: servicePolicy({ responseClassifier: responseClassifierSlot('h2').optional(), classificationTimeoutMs: durationMs.optional(), retryBufferSize: retryBufferSize.optional() }),
  identifier: oneOrMany(kindSlot('h2Identifier')).prefault([{ kind: 'io.prx.header.token' }]),
  requestAuthorizers: z.array(kindSlot('requestAuthorizer')).default([]),
  loggers: z.array(kindSlot('logger')).default([]),
  tracePropagator: kindSlot('tracePropagator', { default: { kind: 'io.prx.default' } }),
  h2AccessLog: filePath.optional(),
  h2AccessLogRollPolicy: rollPolicy.default('Never'),
  h2AccessLogAppend: z.boolean().default(true),
  h2AccessLogRotateCount: intInRange(-1, 2147483647).default(-1),
}));

export type H2RouterConfig = z.output<typeof h2RouterSchema> & { readonly label: string };
