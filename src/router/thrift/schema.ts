import { z } from 'zod';
import { clientPolicy, intInRange, positiveInt, routerBaseShape, serverList, serverShape, servicePolicy, lazySchema } from '../../config/index.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../protocol/thrift/framing.js';

// The `thrift` router's config: the common router keys plus the thrift parameters of the spec.

const thriftProtocol = lazySchema(() => z.enum(['binary', 'compact']));

export const thriftServerSchema = lazySchema(() => z.strictObject({
  ...serverShape({ defaultPort: 4114 }),
  thriftFramed: z.boolean().default(true),
  // The older placement; the router's key applies when a server does not set it.
  thriftProtocol: thriftProtocol.optional(),
}));

export type ThriftServerConfig = z.output<typeof thriftServerSchema>;

/** The router keys thrift and thriftmux share (Linkerd's thriftmux takes the thrift parameters). */
function thriftRouterShape() {
  return {
    ...routerBaseShape(),
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
  };
}

export const thriftRouterSchema = lazySchema(() => z.strictObject({
  ...thriftRouterShape(),
  protocol: z.literal('thrift'),
  servers: serverList(thriftServerSchema),
}));

/**
 * A thriftmux server: mux sessions carrying thrift (port 4144), and plain thrift clients served by
 * Finagle's downgrade (`thriftFramed` says how such a client frames its calls; Finagle's own
 * thrift clients are framed). The mux size keys are the mux router's.
 */
export const thriftmuxServerSchema = lazySchema(() => z.strictObject({
  ...serverShape({ defaultPort: 4144 }),
  thriftFramed: z.boolean().default(true),
  thriftProtocol: thriftProtocol.optional(),
  /** The largest mux message accepted from a client (a frame, or one reassembled from fragments); default 16 MiB. */
  maxMessageBytes: intInRange(1024, 2 ** 31 - 1).optional(),
  /** The fragment size asked of the client (Finagle's `mux-framer`); absent: whole messages. */
  maxFrameBytes: intInRange(1, 2 ** 31 - 1).optional(),
}));

export type ThriftmuxServerConfig = z.output<typeof thriftmuxServerSchema>;

/** The `thriftmux` router: the thrift router's keys, thriftmux servers (clients speak plain thrift, as Linkerd's do). */
export const thriftmuxRouterSchema = lazySchema(() => z.strictObject({
  ...thriftRouterShape(),
  protocol: z.literal('thriftmux'),
  servers: serverList(thriftmuxServerSchema),
}));

export type ThriftRouterConfig = (z.output<typeof thriftRouterSchema> | z.output<typeof thriftmuxRouterSchema>) & { readonly label: string };
