import { z } from 'zod';
import { ConfigError, type ConfigIssue } from './errors.js';
import { deepFreeze, type DeepReadonly } from './frozen.js';
import { addIssue, validate } from './issues.js';
import { loadConfigWith, type ReadConfigOptions } from './loader.js';
import {
  adminConfigSchema,
  conflictingListeners,
  conflictingPrefixes,
  namerList,
  telemeterList,
  type ConfigListener,
} from './proxy-config.js';
import { LOOPBACK } from './router.js';
import { durationMs, ip, kindShape, kindSlot, port, type KindConfig } from './schema.js';
import { serverTls } from './tls.js';
import { lazySchema } from './lazy-schema.js';

// The resolver service's config file (spec: resolver, "Configuration file"): admin, interfaces,
// storage, namers and telemetry. Interfaces and storage are plugin kinds (families `iface` and
// `storage`) validated by the schemas their modules register; namers and telemeters are the
// proxy's.

/** Node accepts `reusePort` on listening sockets from 22.12 (and 23.1) on. */
function nodeSupportsReusePort(version: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

/**
 * Socket options of a listener (Linkerd's `socketOptions`). `noDelay` disables Nagle's algorithm
 * and `keepAlive` turns on TCP keep-alive for accepted connections; `readTimeoutMs` closes a
 * connection on which nothing was read or written for that long; `writeTimeoutMs` closes one
 * whose pending output has not drained in that time (a stalled watch client). `reuseAddr` is
 * always on for Node listeners, so `false` is refused; `reusePort` needs Node.js 22.12 or newer.
 */
export const socketOptions = lazySchema(() => z
  .strictObject({
    noDelay: z.boolean().default(true),
    reuseAddr: z.boolean().default(true),
    reusePort: z.boolean().default(false),
    keepAlive: z.boolean().default(false),
    readTimeoutMs: durationMs.optional(),
    writeTimeoutMs: durationMs.optional(),
  })
  .superRefine((opts, ctx) => {
    if (!opts.reuseAddr) {
      addIssue(ctx, ['reuseAddr'], 'Node.js always sets SO_REUSEADDR on listening sockets; remove the key or set it to true', {
        value: false,
      });
    }
    if (opts.reusePort && !nodeSupportsReusePort()) {
      addIssue(ctx, ['reusePort'], `needs Node.js 22.12 or newer (this is ${process.version})`, { value: true });
    }
  }));

/** A validated socket-options object. */
export type SocketOptionsConfig = z.output<typeof socketOptions>;

/**
 * The resolver's admin interface: the proxy's admin options (port 9990, loopback) with
 * `socketOptions`, and without the proxy-only `httpIdentifierPort`.
 */
export const resolverAdminConfig = lazySchema(() => adminConfigSchema(9990)
  .omit({ httpIdentifierPort: true })
  .extend({ socketOptions: socketOptions.optional() }));

/**
 * Keys of every interface kind: a plugin spreads them,
 * `z.strictObject({...interfaceShape('io.prx.httpController', 4180)})`. `ip` defaults to loopback
 * (`0.0.0.0` listens on every IPv4 address); `tls` makes the interface serve TLS.
 */
export function interfaceShape<K extends string>(kind: K, defaultPort: number) {
  return {
    ...kindShape(kind),
    ip: ip.default(LOOPBACK),
    port: port.default(defaultPort),
    socketOptions: socketOptions.optional(),
    tls: serverTls.optional(),
  };
}

/** A validated interface object: its kind's config, whose schema spread {@link interfaceShape}. */
export type InterfaceConfig = KindConfig & { readonly ip: string; readonly port: number };

const interfaceSlot = lazySchema(() => kindSlot('iface')) as z.ZodType<InterfaceConfig>;

/** The whole resolver config. */
export const resolverConfigSchema = lazySchema(() => z.strictObject({
  admin: resolverAdminConfig.prefault({}),
  interfaces: z.array(interfaceSlot).min(1, { error: 'must list at least one interface' }),
  storage: kindSlot('storage'),
  namers: namerList,
  telemetry: telemeterList,
}));

/** A validated resolver config: every default filled in, deep-frozen. */
export type ResolverConfig = DeepReadonly<z.output<typeof resolverConfigSchema>>;

type Parsed = z.output<typeof resolverConfigSchema>;

/** Every listener the config sets up: the admin interface, then each interface in order. */
function listeners(cfg: Parsed): ConfigListener[] {
  const out: ConfigListener[] = [{ path: ['admin'], ip: cfg.admin.ip, port: cfg.admin.port }];
  cfg.interfaces.forEach((iface, i) => out.push({ path: ['interfaces', i], ip: iface.ip, port: iface.port }));
  return out;
}

/**
 * Validates parsed config data: the schema, then the cross-checks (no two listeners on
 * overlapping addresses, distinct namer prefixes). Returns the config deep-frozen; throws
 * {@link ConfigError} listing every issue.
 */
export function validateResolverConfig(raw: unknown): ResolverConfig {
  const cfg = validate(resolverConfigSchema, raw);
  const issues: ConfigIssue[] = [...conflictingListeners(listeners(cfg)), ...conflictingPrefixes(cfg)];
  if (issues.length > 0) throw new ConfigError(issues);
  return deepFreeze(cfg);
}

/** Reads, parses and validates the resolver config named on the command line (a path, or `-`). */
export function loadResolverConfig(arg: string, opts: ReadConfigOptions = {}): Promise<ResolverConfig> {
  return loadConfigWith(arg, validateResolverConfig, opts);
}

/** The validated config with all defaults, as pretty JSON (`prx-resolver --check`, `/config.json`). */
export function resolverConfigJson(cfg: ResolverConfig): string {
  return JSON.stringify(cfg, null, 2);
}
