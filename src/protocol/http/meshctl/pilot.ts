/**
 * The mesh control plane's v1 pilot, as Linkerd 1's istio identifier read it: every 5 seconds a GET
 * of the discovery service's `/v1/routes` (route configs whose virtual hosts are named
 * `<cluster>|<port>` and list the `domains` that reach them) and of the apiserver's
 * `/v1alpha1/config/route-rule`. Between polls requests are identified from the last good answers;
 * a failed or malformed poll keeps them (and is logged once until the source recovers). One poller
 * per address, shared by every router that names it.
 */
import { request } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import { getLogger } from '../../../core/log.js';
import { PilotApiError } from './errors.js';
import { parseRouteRules, type RouteRule } from './route-rules.js';
import { lazySchema } from '../../../config/index.js';

/** Linkerd 1's polling interval for both pilot APIs. */
export const PILOT_POLL_MS = 5000;
/** A poll that has not answered by then is abandoned (and counts as failed). */
const POLL_TIMEOUT_MS = 5000;
/** Answers larger than this are refused (a route table is kilobytes). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** A destination cluster and the port (name or number) of a virtual host. */
export interface Cluster {
  readonly dest: string;
  readonly port: string;
}

const routeConfigsJson = lazySchema(() => z.array(
  z.looseObject({ virtual_hosts: z.array(z.looseObject({ name: z.string(), domains: z.array(z.string()).nullish() })).nullish() }),
));

/** The domain → cluster table of a `/v1/routes` answer; virtual hosts not named `<cluster>|<port>` are skipped. */
export function parseClusters(body: unknown, skipped: (name: string) => void): Map<string, Cluster> {
  const table = new Map<string, Cluster>();
  for (const config of routeConfigsJson.parse(body)) {
    for (const vhost of config.virtual_hosts ?? []) {
      const parts = vhost.name.split('|');
      if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
        skipped(vhost.name);
        continue;
      }
      const cluster = { dest: parts[0] as string, port: parts[1] as string };
      for (const domain of vhost.domains ?? []) table.set(domain, cluster);
    }
  }
  return table;
}

/** GETs `path` from host:port and parses the JSON body. */
export function getJson(host: string, port: number, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, method: 'GET', headers: { accept: 'application/json' }, timeout: POLL_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY_BYTES) {
          res.destroy();
          reject(new PilotApiError(`${host}:${port}${path}: answer over ${MAX_BODY_BYTES} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('error', (e) => reject(new PilotApiError(`${host}:${port}${path}: ${e.message}`, { cause: e })));
      res.on('end', () => {
        if (res.statusCode !== 200) {
          reject(new PilotApiError(`${host}:${port}${path}: status ${res.statusCode ?? 0}`));
          return;
        }
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
        } catch (e) {
          reject(new PilotApiError(`${host}:${port}${path}: the body is not JSON`, { cause: e }));
        }
      });
    });
    req.on('timeout', () => req.destroy(new PilotApiError(`${host}:${port}${path}: no answer within ${POLL_TIMEOUT_MS} ms`)));
    req.on('error', (e) => reject(e instanceof PilotApiError ? e : new PilotApiError(`${host}:${port}${path}: ${e.message}`, { cause: e })));
    req.end();
  });
}

/** Polls one JSON resource; `value` is the last good parse (undefined until one succeeded). */
class Poller<T> {
  value: T | undefined;
  readonly #host: string;
  readonly #port: number;
  readonly #path: string;
  readonly #parse: (body: unknown) => T;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #failing = false;
  #closed = false;

  constructor(host: string, port: number, path: string, parse: (body: unknown) => T, log: Logger) {
    this.#host = host;
    this.#port = port;
    this.#path = path;
    this.#parse = parse;
    this.#log = log;
    this.#poll();
  }

  #poll(): void {
    void getJson(this.#host, this.#port, this.#path)
      .then((body) => {
        if (this.#closed) return;
        this.value = this.#parse(body);
        if (this.#failing) this.#log.info({ source: `${this.#host}:${this.#port}${this.#path}` }, 'meshctl: control plane answering again');
        this.#failing = false;
      })
      .catch((e: unknown) => {
        if (this.#closed || this.#failing) return;
        this.#failing = true;
        const err = e instanceof z.ZodError ? `not the v1 API: ${e.issues[0]?.message ?? e.message}` : e instanceof Error ? e.message : String(e);
        this.#log.warn({ source: `${this.#host}:${this.#port}${this.#path}`, err }, 'meshctl: poll failed; keeping the last good answer');
      })
      .finally(() => {
        if (this.#closed) return;
        this.#timer = setTimeout(() => this.#poll(), PILOT_POLL_MS);
        this.#timer.unref();
      });
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }
}

/** Warnings about an answer's entries, each logged once while it stays in the answers (not every poll). */
class OnceWarned {
  readonly #log: Logger;
  #seen = new Set<string>();
  constructor(log: Logger) {
    this.#log = log;
  }
  poll<T>(parse: (warn: (key: string, fields: object, msg: string) => void) => T): T {
    const now = new Set<string>();
    const result = parse((key, fields, msg) => {
      now.add(key);
      if (!this.#seen.has(key)) this.#log.warn(fields, msg);
    });
    this.#seen = now;
    return result;
  }
}

/** A map the control plane answers at `path`, polled; the last good answer stands while it fails. */
class PolledMap<V> {
  readonly source: string;
  readonly #poller: Poller<Map<string, V>>;
  constructor(host: string, port: number, path: string, log: Logger, parse: (body: unknown, warn: (key: string, fields: object, msg: string) => void) => Map<string, V>) {
    this.source = `${host}:${port}`;
    const warned = new OnceWarned(log);
    this.#poller = new Poller(host, port, path, (b) => warned.poll((warn) => parse(b, warn)), log);
  }
  get loaded(): boolean {
    return this.#poller.value !== undefined;
  }
  protected entry(key: string): V | undefined {
    return this.#poller.value?.get(key);
  }
  protected entries(): Iterable<V> {
    return this.#poller.value?.values() ?? [];
  }
  close(): void {
    this.#poller.close();
  }
}

/** The clusters of a discovery service (`/v1/routes`). */
export class ClusterCache extends PolledMap<Cluster> {
  constructor(host: string, port: number, log: Logger) {
    super(host, port, '/v1/routes', log, (b, warn) =>
      parseClusters(b, (name) => warn(`vhost ${name}`, { name }, 'meshctl: skipping a virtual host not named <cluster>|<port>')),
    );
  }
  /** The cluster of a request's authority (the Host value as sent, port included when present). */
  get(authority: string): Cluster | undefined {
    return this.entry(authority);
  }
}

/** The route rules of an apiserver (`/v1alpha1/config/route-rule`), by name. */
export class RouteCache extends PolledMap<RouteRule> {
  constructor(host: string, port: number, log: Logger) {
    super(host, port, '/v1alpha1/config/route-rule', log, (b, warn) => {
      const { rules, rejected } = parseRouteRules(b);
      for (const r of rejected) warn(`${r.name}\0${r.reason}`, { rule: r.name, reason: r.reason }, 'meshctl: route rule ignored');
      return rules;
    });
  }
  get rules(): Iterable<RouteRule> {
    return this.entries();
  }
  rule(name: string): RouteRule | undefined {
    return this.entry(name);
  }
}

/** A shared cache with a count of its users; the last release closes it. */
interface Shared<T extends { close(): void }> {
  readonly value: T;
  users: number;
}

const clusterCaches = new Map<string, Shared<ClusterCache>>();
const routeCaches = new Map<string, Shared<RouteCache>>();

function acquire<T extends { close(): void }>(table: Map<string, Shared<T>>, key: string, make: () => T): { value: T; release: () => void } {
  let s = table.get(key);
  if (s === undefined) {
    s = { value: make(), users: 0 };
    table.set(key, s);
  }
  s.users++;
  const shared = s;
  let released = false;
  return {
    value: shared.value,
    release: () => {
      if (released) return;
      released = true;
      if (--shared.users === 0) {
        shared.value.close();
        table.delete(key);
      }
    },
  };
}

const pilotLog = (): Logger => getLogger('prx.meshctl');

export function acquireClusterCache(host: string, port: number): { value: ClusterCache; release: () => void } {
  return acquire(clusterCaches, `${host}:${port}`, () => new ClusterCache(host, port, pilotLog()));
}

export function acquireRouteCache(host: string, port: number): { value: RouteCache; release: () => void } {
  return acquire(routeCaches, `${host}:${port}`, () => new RouteCache(host, port, pilotLog()));
}
