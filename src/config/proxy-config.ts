import { availableParallelism } from 'node:os';
import { isIPv6 } from 'node:net';
import { z } from 'zod';
import { ConfigError, ConfigErrorCode, showPath, type ConfigIssue, type ConfigPath } from './errors.js';
import { deepFreeze, type DeepReadonly } from './frozen.js';
import { validate } from './issues.js';
import { loadConfigWith, type ReadConfigOptions } from './loader.js';
import { readPath } from '../naming/index.js';
import { LOOPBACK, type RouterConfig } from './router.js';
import {
  durationMs,
  httpUrl,
  ip,
  kindShape,
  kindSlot,
  pathText,
  port,
  positiveInt,
  protocolSlot,
  regexText,
  type KindConfig,
} from './schema.js';
import { serverTls } from './tls.js';
import { lazySchema } from './lazy-schema.js';

// The proxy's config file: the superset of the spec's three config versions (see its Versioning
// section). Routers, namers and telemeters are validated by the schemas their plugins register.

/**
 * Admin endpoint categories and path overrides. An endpoint is available if its category is
 * enabled and its path matches no blacklist entry, or its category is disabled and its path
 * matches a whitelist entry. Entries are JavaScript regular expressions.
 */
export const adminSecurity = lazySchema(() => z.strictObject({
  uiEnabled: z.boolean().default(true),
  controlEnabled: z.boolean().default(true),
  diagnosticsEnabled: z.boolean().default(true),
  pathWhitelist: z.array(regexText).default([]),
  pathBlacklist: z.array(regexText).default([]),
}));

/**
 * An admin interface listening on `defaultPort` unless configured (the proxy's is 9990; the
 * resolver service reuses this with its own). Earlier config versions defaulted `ip` to 0.0.0.0;
 * every version is read with the loopback default.
 */
export function adminConfigSchema(defaultPort: number) {
  return z.strictObject({
    ip: ip.default(LOOPBACK),
    port: port.default(defaultPort),
    httpIdentifierPort: port.optional(),
    shutdownGraceMs: durationMs.default(10000),
    tls: serverTls.optional(),
    security: adminSecurity.prefault({}),
    workerThreads: positiveInt.default(2),
  });
}

/**
 * The proxy's admin interface (default port 9990). `allowProxiedAccess`: whether the routers may
 * send requests to it (a dtab naming the admin's address); refused by default.
 */
export const adminConfig = lazySchema(() => adminConfigSchema(9990).extend({ allowProxiedAccess: z.boolean().default(false) }));

/**
 * Usage reporting. Reports are sent (hourly) only when `enabled` and an `endpoint` is set: prx does
 * not phone home by default.
 */
export const usageConfig = lazySchema(() => z.strictObject({
  orgId: z.string().optional(),
  enabled: z.boolean().default(true),
  endpoint: httpUrl.optional(),
}));

/**
 * Keys of every `namer` kind: a plugin spreads them,
 * `z.strictObject({...namerShape('io.prx.fs'), rootDir: filePath})`. The namer serves paths under
 * `/#<prefix>`; `prefix` defaults to `/<kind>`.
 */
export function namerShape<K extends string>(kind: K) {
  return { ...kindShape(kind), prefix: pathText.optional() };
}

/** A validated namer: its kind's config, with `prefix` filled in. */
export type NamerConfig = KindConfig & { readonly prefix: string };

const namerSlot = lazySchema(() => kindSlot('namer').transform((namer): NamerConfig => {
  const { kind, prefix, ...rest } = namer;
  return { kind, prefix: typeof prefix === 'string' ? prefix : `/${kind}`, ...rest };
}));

/** The `namers` list (default empty); each namer's `prefix` is filled in. */
export const namerList = lazySchema(() => z.array(namerSlot).default([]));

/** The `telemetry` list (default empty). */
export const telemeterList = lazySchema(() => z.array(kindSlot('telemeter')).default([]));

/** The most worker processes a config may ask for. */
export const MAX_WORKERS = 256;

const WORKERS_MESSAGE = `expected a number of workers from 1 to ${MAX_WORKERS}, or "auto"`;

/**
 * `workers` (prx's addition, not in the spec): how many processes serve the routers. 1 is one
 * process, as without the key; `auto` is one per core that `os.availableParallelism()` reports.
 */
export const workersConfig = lazySchema(() => z
  .custom<number | 'auto'>((v) => v === 'auto' || (Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_WORKERS), {
    error: WORKERS_MESSAGE,
  })
  .default(1));

/** The number of worker processes a config asks for (`auto` resolved on this host). */
export function workerCount(cfg: { readonly workers: number | 'auto' }): number {
  return cfg.workers === 'auto' ? Math.min(MAX_WORKERS, availableParallelism()) : cfg.workers;
}

/**
 * The whole proxy config. Routers are typed by their common keys: every protocol's router schema
 * is built from `routerBaseShape`, so its output has them.
 */
export const proxyConfigSchema = lazySchema(() => z.strictObject({
  admin: adminConfig.prefault({}),
  routers: z.array(protocolSlot() as z.ZodType<RouterConfig>).min(1, { error: 'must list at least one router' }),
  namers: namerList,
  telemetry: telemeterList,
  usage: usageConfig.prefault({}),
  workers: workersConfig,
}));

/** A validated proxy config: every default filled in, deep-frozen. */
export type ProxyConfig = DeepReadonly<z.output<typeof proxyConfigSchema>>;

/**
 * Validates parsed config data: the schema, then the cross-checks (distinct router labels, no two
 * listeners on overlapping addresses, distinct namer prefixes, an announcer for every announced name). Returns the config deep-frozen;
 * throws {@link ConfigError} listing every issue.
 */
export function validateProxyConfig(raw: unknown): ProxyConfig {
  const cfg = validate(proxyConfigSchema, raw);
  const issues = [...conflictingLabels(cfg), ...conflictingPorts(cfg), ...conflictingPrefixes(cfg), ...unannounceable(cfg)];
  if (issues.length > 0) throw new ConfigError(issues);
  return deepFreeze(cfg);
}

/** Reads, parses and validates the config named on the command line (a path, or `-` for stdin). */
export function loadProxyConfig(arg: string, opts: ReadConfigOptions = {}): Promise<ProxyConfig> {
  return loadConfigWith(arg, validateProxyConfig, opts);
}

/** The validated config with all defaults, as pretty JSON (`prx --check`, `/config.json`). */
export function effectiveConfigJson(cfg: ProxyConfig): string {
  return JSON.stringify(cfg, null, 2);
}

type Parsed = z.output<typeof proxyConfigSchema>;

/**
 * An issue at every entry whose key an earlier entry already has: `noun` names what must be
 * distinct (`router label`), `list` the list's path (`['routers']`), `field` the key inside.
 */
function duplicates<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  where: { readonly list: string; readonly field: string; readonly noun: string; readonly code: ConfigErrorCode },
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const firstWith = new Map<string, number>();
  items.forEach((item, i) => {
    const key = keyOf(item);
    const first = firstWith.get(key);
    if (first === undefined) {
      firstWith.set(key, i);
      return;
    }
    issues.push({
      path: [where.list, i, where.field],
      message: `duplicate ${where.noun} ${JSON.stringify(key)} (also used by ${where.list}[${first}]); set a distinct ${where.field}`,
      code: where.code,
    });
  });
  return issues;
}

function conflictingLabels(cfg: Parsed): ConfigIssue[] {
  return duplicates(cfg.routers, (r) => r.label, {
    list: 'routers',
    field: 'label',
    noun: 'router label',
    code: ConfigErrorCode.conflictingLabels,
  });
}

/** Namers under one prefix would shadow each other (the resolver service checks its namers too). */
export function conflictingPrefixes(cfg: { readonly namers: readonly NamerConfig[] }): ConfigIssue[] {
  return duplicates(cfg.namers, (n) => n.prefix, {
    list: 'namers',
    field: 'prefix',
    noun: 'namer prefix',
    code: ConfigErrorCode.conflictingPrefixes,
  });
}

/** Something that listens on a socket, and where the config sets it up. */
export interface ConfigListener {
  readonly path: ConfigPath;
  readonly ip: string;
  readonly port: number;
}

const showAddress = (l: ConfigListener): string => (isIPv6(l.ip) ? `[${l.ip}]:${l.port}` : `${l.ip}:${l.port}`);

/**
 * True if binding both could collide. `0.0.0.0` covers every IPv4 address (and host names, which
 * may resolve to one); `::` covers everything, since Node's IPv6 wildcard is dual-stack. Other
 * addresses and host names are compared as written (no DNS at validation time).
 */
function overlaps(a: ConfigListener, b: ConfigListener): boolean {
  if (a.port !== b.port) return false;
  if (a.ip === b.ip || a.ip === '::' || b.ip === '::') return true;
  const coversV4 = (wild: string, other: string): boolean => wild === '0.0.0.0' && !isIPv6(other);
  return coversV4(a.ip, b.ip) || coversV4(b.ip, a.ip);
}

/** An issue at every listener whose address overlaps an earlier one's. */
export function conflictingListeners(listeners: readonly ConfigListener[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  listeners.forEach((listener, i) => {
    const earlier = listeners.slice(0, i).find((other) => overlaps(other, listener));
    if (earlier === undefined) return;
    issues.push({
      path: listener.path,
      message: `${showAddress(listener)} conflicts with ${showPath(earlier.path)} (${showAddress(earlier)})`,
      code: ConfigErrorCode.conflictingPorts,
    });
  });
  return issues;
}

/** The admin interface's listeners: its port, and the HTTP-identifier port if set. */
export function adminListeners(admin: z.output<ReturnType<typeof adminConfigSchema>>): ConfigListener[] {
  const listeners: ConfigListener[] = [{ path: ['admin'], ip: admin.ip, port: admin.port }];
  if (admin.httpIdentifierPort !== undefined) {
    listeners.push({ path: ['admin', 'httpIdentifierPort'], ip: admin.ip, port: admin.httpIdentifierPort });
  }
  return listeners;
}

function conflictingPorts(cfg: Parsed): ConfigIssue[] {
  const servers = cfg.routers.flatMap((router, i) =>
    router.servers.map((server, j): ConfigListener => ({ path: ['routers', i, 'servers', j], ip: server.ip, port: server.port })),
  );
  return conflictingListeners([...adminListeners(cfg.admin), ...servers]);
}

/**
 * An issue at every `announce` name that no announcer of its router serves: a name is announced
 * to the announcers whose `/#<prefix>` it starts with. (Linkerd only logs this at start-up; a
 * server silently missing from discovery is better caught by `--check`.)
 */
function unannounceable(cfg: Parsed): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  cfg.routers.forEach((router, i) => {
    // A protocol's schema may leave the common keys out (a test protocol does): treat them as empty.
    const prefixes = (router.announcers ?? []).map((a) => readPath(`/#${typeof a['prefix'] === 'string' ? a['prefix'] : `/${a.kind}`}`));
    const known = prefixes.length === 0 ? 'the router has no announcers' : `announcers: ${prefixes.map((p) => p.show).join(', ')}`;
    router.servers.forEach((server, j) => {
      (server.announce ?? []).forEach((name, k) => {
        if (prefixes.some((p) => readPath(name).startsWith(p))) return;
        issues.push({ path: ['routers', i, 'servers', j, 'announce', k], message: `no announcer found for ${name} (${known})` });
      });
    });
  });
  return issues;
}
