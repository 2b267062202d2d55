import { z } from 'zod';
import { clientPolicy, positiveInt, routerBaseShape, serverList, serverShape, servicePolicy } from '../../config/index.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../protocol/thrift/framing.js';

// The `thrift` router's config: the common router keys plus the thrift parameters of the spec.

const thriftProtocol = z.enum(['binary', 'compact']);

export const thriftServerSchema = z.strictObject({
  ...serverShape({ defaultPort: 4114 }),
  thriftFramed: z.boolean().default(true),
  // The older placement; the router's key applies when a server does not set it.
  thriftProtocol: thriftProtocol.optional(),
});

export type ThriftServerConfig = z.output<typeof thriftServerSchema>;

export const thriftRouterSchema = z.strictObject({
  ...routerBaseShape,
  protocol: z.literal('thrift'),
  servers: serverList(thriftServerSchema),
  thriftMethodInDst: z.boolean().default(false),
  thriftProtocol: thriftProtocol.default('binary'),
  /** prx's limit on one message (a frame's payload), both directions. */
  thriftMaxMessageBytes: positiveInt.default(DEFAULT_MAX_MESSAGE_BYTES),
  client: clientPolicy({
    thriftFramed: z.boolean().optional(),
    attemptExtendedUpgrade: z.boolean().optional(),
    // The older placement, per client.
    thriftProtocol: thriftProtocol.optional(),
  }),
  service: servicePolicy({
    responseClassifier: z
      .never({ error: 'thrift routers take no responseClassifier: a TApplicationException is a failure, any other reply a success' })
      .optional(),
  }),
});

export type ThriftRouterConfig = z.output<typeof thriftRouterSchema> & { readonly label: string };
