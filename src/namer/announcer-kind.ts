import { isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { z } from 'zod';
import { type KindDef, kindShape, pathText, registerKind } from '../config/index.js';
import type { Logger } from '../core/log.js';
import { type Path, readPath } from '../naming/index.js';
import type { StatsReceiver } from '../service/stats/index.js';

/**
 * Announcers register a router's servers in service discovery (Linkerd's `announcers` router key
 * and `announce` server key). An announcer serves the names under `/#<prefix>`; a server announces
 * each of its `announce` names to every announcer whose prefix the name starts with, handing it
 * the rest of the name (the residual).
 */

/** What an announcer factory receives besides its config. */
export interface AnnouncerContext {
  /** The full prefix the announcer serves, e.g. `/#/io.prx.serversets`. */
  readonly prefix: Path;
  readonly log: Logger;
  /** Scoped for this announcer (`announcer/<prefix…>`). */
  readonly stats: StatsReceiver;
}

/** An address as announced: never a wildcard. */
export interface AnnouncedAddress {
  readonly host: string;
  readonly port: number;
}

/** One announcement as `/admin/announcer` shows it. */
export interface AnnouncementState {
  /** `host:port` (IPv6 in brackets). */
  readonly address: string;
  /** The full announced name, `/#/<prefix>/…`. */
  readonly name: string;
  readonly announcer: string;
  /** Where it is announced, in the announcer's own terms (Finagle's forum string for serversets). */
  readonly forum: string;
  readonly state: 'pending' | 'announced' | 'withdrawn';
  /** The record the announcer created (a member znode), while announced. */
  readonly member?: string;
  /** Why the last attempt failed, while it is being retried. */
  readonly error?: string;
}

/** A live announcement: kept alive by its announcer until withdrawn. */
export interface Announcement {
  readonly state: AnnouncementState;
  /** Removes the record; resolves once it is gone (or could not be removed, which is logged). */
  withdraw(): Promise<void>;
}

/** An announcer instance: one session to its backend, shared by all its announcements. */
export interface Announcer {
  /**
   * Starts announcing `address` under `name` (the full name; `residual` is what follows the
   * announcer's prefix). Never throws for backend trouble: failures are logged and retried.
   */
  announce(address: AnnouncedAddress, name: Path, residual: Path): Announcement;
  /** Withdraws what is still announced and ends the session. */
  close(): Promise<void>;
}

/**
 * Keys of every announcer kind: a plugin spreads them,
 * `z.strictObject({...announcerShape('io.prx.serversets', '/io.prx.serversets'), zkAddrs: …})`.
 * The announcer serves names under `/#<prefix>`.
 */
export function announcerShape<K extends string>(kind: K, defaultPrefix: string) {
  return { ...kindShape(kind), prefix: pathText.default(defaultPrefix) };
}

/** Registers an announcer kind (its schema and factory) with the config registry. */
export function defineAnnouncer<Cfg>(def: {
  kind: string;
  schema: z.ZodType<Cfg>;
  experimental?: boolean;
  create: (cfg: Cfg, ctx: AnnouncerContext) => Announcer;
}): KindDef<Cfg, AnnouncerContext, Announcer> {
  return registerKind({ family: 'announcer', ...def });
}

/** An announcer with the prefix it serves and its kind (for logs and `/admin/announcer`). */
export interface MountedAnnouncer {
  readonly prefix: Path;
  readonly kind: string;
  readonly announcer: Announcer;
}

/** `host:port`, with IPv6 hosts in brackets. */
export function showAddress(a: AnnouncedAddress): string {
  return isIPv6(a.host) ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

// IPv6 link-local addresses (fe80::/10) only work with an interface scope, which a peer on
// another host cannot use: they are not announced.
const LINK_LOCAL_V6 = /^fe[89ab][0-9a-f]:/i;

/**
 * The addresses to announce for a server listening on `ip:port`. A wildcard listener is
 * announced, as Linkerd does, at every non-loopback address of every interface that is up
 * (`os.networkInterfaces()` lists only those): a peer elsewhere cannot use 0.0.0.0, and the host
 * may be reachable on several networks. `0.0.0.0` covers IPv4 only (that is what it binds);
 * `::` covers both families.
 */
export function announcedAddresses(ip: string, port: number): AnnouncedAddress[] {
  if (ip !== '0.0.0.0' && ip !== '::') return [{ host: ip, port }];
  const out: AnnouncedAddress[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue;
      if (a.family === 'IPv6' && (ip === '0.0.0.0' || LINK_LOCAL_V6.test(a.address))) continue;
      out.push({ host: a.address, port });
    }
  }
  return out;
}

/**
 * Announces one server's `names` to the matching announcers (validation guarantees each name has
 * one), at each of the server's announceable addresses.
 */
export function announceServer(
  announcers: readonly MountedAnnouncer[],
  server: { readonly ip: string; readonly port: number },
  names: readonly string[],
  log: Logger,
): Announcement[] {
  if (names.length === 0) return [];
  const addresses = announcedAddresses(server.ip, server.port);
  if (addresses.length === 0) {
    log.warn({ ip: server.ip, port: server.port }, `no non-loopback address to announce ${server.ip}:${server.port} at; nothing announced`);
    return [];
  }
  const out: Announcement[] = [];
  for (const text of names) {
    const name = readPath(text);
    const matching = announcers.filter((a) => name.startsWith(a.prefix));
    if (matching.length === 0) log.warn({ name: name.show }, `no announcer found for ${name.show}`);
    for (const a of matching) {
      for (const address of addresses) {
        log.info({ address: showAddress(address), name: name.show, announcer: a.kind }, `announcing ${showAddress(address)} as ${name.show} to ${a.kind}`);
        out.push(a.announcer.announce(address, name, name.drop(a.prefix.size)));
      }
    }
  }
  return out;
}
