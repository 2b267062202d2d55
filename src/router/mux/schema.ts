import { z } from 'zod';
import { clientPolicy, durationMs, intInRange, routerBaseShape, serverList, serverShape, servicePolicy, lazySchema } from '../../config/index.js';

// The `mux` router's config: the common router keys (dstPrefix `/svc`), servers on port 4141, and
// prx's limits on mux messages (Linkerd leaves them to Finagle's defaults).

/** Size keys of servers and clients alike. */
function muxSizeShape() {
  return {
    /** The largest message accepted from the peer (a frame, or one reassembled from fragments); default 16 MiB. */
    maxMessageBytes: intInRange(1024, 2 ** 31 - 1).optional(),
    /** The fragment size asked of the peer (Finagle's `mux-framer`); absent: whole messages (Finagle's default). */
    maxFrameBytes: intInRange(1, 2 ** 31 - 1).optional(),
  };
}

export const muxServerSchema = lazySchema(() => z.strictObject({
  ...serverShape({ defaultPort: 4141 }),
  ...muxSizeShape(),
}));

export type MuxServerConfig = z.output<typeof muxServerSchema>;

export const muxRouterSchema = lazySchema(() => z.strictObject({
  ...routerBaseShape(),
  protocol: z.literal('mux'),
  servers: serverList(muxServerSchema),
  client: clientPolicy({
    ...muxSizeShape(),
    /** How often a Tping checks each upstream session (0: never); default 5 s. */
    pingIntervalMs: durationMs.optional(),
    /** How long a Tping may go unanswered before the session is dropped; default 4 s. */
    pingTimeoutMs: durationMs.optional(),
    /** How long connecting and the session handshake may take before the endpoint counts as unreachable; default 5 s (0: no limit). */
    handshakeTimeoutMs: durationMs.optional(),
  }),
  // No mux response classifiers exist: an Rdispatch error is a failure, never retried.
  service: servicePolicy({ responseClassifier: z.undefined({ error: 'mux routers take no responseClassifier (an Rdispatch error is a failure, never retried)' }).optional() }),
}));

export type MuxRouterConfig = z.output<typeof muxRouterSchema> & { readonly label: string };
