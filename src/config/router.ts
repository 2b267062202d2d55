import { z } from 'zod';
import { clientPolicy, servicePolicy } from './policy.js';
import {
  durationMs,
  durationSecs,
  dtabText,
  ip,
  kindShape,
  kindSlot,
  metricName,
  pathText,
  port,
  positiveInt,
} from './schema.js';
import { serverTls } from './tls.js';
import { lazySchema } from './lazy-schema.js';

// Builders for router and server schemas. A protocol module composes its own:
//
//   const httpServer = z.strictObject({ ...serverShape({ defaultPort: 4140 }), addForwardedHeader: … });
//   const httpRouter = z.strictObject({
//     ...routerBaseShape(),
//     protocol: z.literal('http'),
//     servers: serverList(httpServer),
//     client: clientPolicy({ engine: … }),
//     identifier: …, maxChunkKB: kilobytes.default(8),
//   });
//   registerKind({ family: 'protocol', kind: 'http', schema: httpRouter, create });
//
// The proxy config validates each router with the schema its `protocol` selects (protocolSlot).

/** Loopback: the default listen address of servers and the admin interface. */
export const LOOPBACK = '127.0.0.1';

/**
 * Keys of every server object. `defaultPort` is the protocol's default port; without one, `port`
 * is required.
 */
export function serverShape(opts: { readonly defaultPort?: number } = {}) {
  return {
    port: opts.defaultPort === undefined ? port : port.default(opts.defaultPort),
    ip: ip.default(LOOPBACK),
    tls: serverTls.optional(),
    maxConcurrentRequests: positiveInt.optional(),
    announce: z.array(pathText).default([]),
    clearContext: z.boolean().default(false),
  };
}

/** The schema of a server with only the common keys. */
export const serverBaseSchema = lazySchema(() => z.strictObject(serverShape()));

/** A router's `servers`: a non-empty list of `server` objects. */
export function serverList<S extends z.ZodType>(server: S) {
  return z.array(server).min(1, { error: 'must list at least one server' });
}

/** A router's binding caches; see the spec's `bindingCache`. */
export const bindingCache = lazySchema(() => z.strictObject({
  paths: positiveInt.default(1000),
  trees: positiveInt.default(1000),
  bounds: positiveInt.default(1000),
  clients: positiveInt.default(1000),
  idleTtlSecs: durationSecs.default(600),
}));

/**
 * Keys of every `interpreter` kind: a plugin spreads them,
 * `z.strictObject({...interpreterShape('io.prx.fs'), dtabFile: filePath})`. `transformers` are
 * applied in order to the addresses the interpreter resolves.
 */
export function interpreterShape<K extends string>(kind: K) {
  return { ...kindShape(kind), transformers: z.array(kindSlot('transformer')).default([]) };
}

/**
 * Keys of every router object. A protocol replaces `protocol` with its literal, `servers` with its
 * server list, `client`/`service` with policies carrying its extra parameters, and adds its own
 * router keys. `label` defaults to the protocol (filled in by the protocol slot).
 */
export function routerBaseShape() {
  return {
    protocol: z.string(),
    label: metricName.optional(),
    experimental: z.boolean().default(false),
    servers: serverList(serverBaseSchema),
    announcers: z.array(kindSlot('announcer')).default([]),
    dtab: dtabText.default(''),
    bindingTimeoutMs: durationMs.default(10000),
    bindingCache: bindingCache.prefault({}),
    client: clientPolicy(),
    service: servicePolicy(),
    dstPrefix: pathText.default('/svc'),
    originator: z.boolean().default(false),
    interpreter: kindSlot('interpreter', { default: { kind: 'default' } }),
  };
}

/** The schema of a router with only the common keys (protocol modules build richer ones). */
export const routerBaseSchema = lazySchema(() => z.strictObject(routerBaseShape()));

/** The common keys of a validated router, as every protocol's router schema produces them. */
export type RouterConfig = Omit<z.output<typeof routerBaseSchema>, 'label'> & {
  readonly label: string;
} & { readonly [key: string]: unknown };

/** The common keys of a validated server. */
export type ServerConfig = z.output<typeof serverBaseSchema>;
