import type * as Zk from 'node-zookeeper-client';
import { type ZkCallback, ZkTimeoutError, zkAddrsSchema, zkCall, zkCodeOf as codeOf, zkConnectString } from './zk-call.js';
import { type ZkModule, ZkSession } from './zk-session.js';
import { z } from 'zod';
import { pathText, positiveInt, lazySchema } from '../config/index.js';
import { errorMessage, PrxError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Path } from '../naming/index.js';
import { type Backoff, type BackoffStream, jittered } from '../service/policy/index.js';
import type { Counter } from '../service/stats/index.js';
import {
  type AnnouncedAddress,
  type Announcement,
  type AnnouncementState,
  type Announcer,
  type AnnouncerContext,
  announcerShape,
  defineAnnouncer,
  showAddress,
} from './announcer-kind.js';

/**
 * `io.prx.serversets`: announces servers as members of ZooKeeper serversets (Linkerd's
 * `io.l5d.serversets` announcer, Finagle's `ZkAnnouncer`). The name `/#/io.prx.serversets/a/b`
 * announces at the serverset `<pathPrefix>/a/b` (default `/discovery/a/b`) of the ZooKeeper
 * ensemble `zkAddrs`: an ephemeral sequential znode `member_<n>` holding
 * `{"serviceEndpoint":{"host":…,"port":…},"additionalEndpoints":{},"status":"ALIVE","shard":0}`.
 * Missing parents are created (persistent, open ACL).
 *
 * Members live as long as the ZooKeeper session: a new session (after expiry, or after no
 * connection for a session timeout) announces everything again, as does a member deleted by
 * someone else. Failures are logged and retried with backoff; the proxy keeps serving.
 *
 * ```yaml
 * announcers:
 * - kind: io.prx.serversets
 *   zkAddrs: [{host: zk-1, port: 2181}]
 *   pathPrefix: /discovery       # the default
 * servers:
 * - port: 4140
 *   announce: [/#/io.prx.serversets/web]
 * ```
 */
export const serversetsAnnouncerSchema = lazySchema(() => z.strictObject({
  ...announcerShape('io.prx.serversets', '/io.prx.serversets'),
  zkAddrs: zkAddrsSchema,
  pathPrefix: pathText.default('/discovery'),
  /** Finagle's default ZooKeeper session timeout. */
  sessionTimeoutMs: positiveInt.default(10_000),
}));
export type ServersetsAnnouncerConfig = z.output<typeof serversetsAnnouncerSchema>;

/** An announcement attempt failed (the reason is ZooKeeper's); it is retried. */
export class AnnounceFailedError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_ANNOUNCE_FAILED', message, options);
  }
}

/** Knobs outside the config (tests shorten them). */
export interface ServersetsAnnouncerOptions {
  /** Delay before retrying a failed announcement or starting a new session. */
  readonly retryBackoff?: Backoff;
}


/** One announcement's state. Plain data: the announcer drives it. */
interface Member {
  readonly address: string;
  readonly name: string;
  /** The serverset znode. */
  readonly path: string;
  readonly data: Buffer;
  /** The member znode, while it exists in session `gen`. */
  node: string | undefined;
  gen: number;
  error: string | undefined;
  /** A create that may have succeeded unseen (connection lost): look for it before creating again. */
  unsure: boolean;
  busy: Promise<void> | undefined;
  withdrawn: Promise<void> | undefined;
  retry: NodeJS.Timeout | undefined;
  backoff: BackoffStream | undefined;
}

const MEMBER_PREFIX = 'member_';

/** The serverset member record, as the twitter-commons JSON codec writes it. */
export function memberJson(address: AnnouncedAddress, shard = 0): string {
  return JSON.stringify({ serviceEndpoint: { host: address.host, port: address.port }, additionalEndpoints: {}, status: 'ALIVE', shard });
}

export class ServersetsAnnouncer implements Announcer {
  readonly #cfg: ServersetsAnnouncerConfig;
  readonly #log: Logger;
  readonly #connect: string;
  readonly #backoff: Backoff;
  readonly #failures: Counter;
  readonly #members = new Set<Member>();
  readonly #session: ZkSession;
  #connectedWaiters: ((connected: boolean) => void)[] = [];
  #closed = false;

  constructor(cfg: ServersetsAnnouncerConfig, ctx: AnnouncerContext, opts: ServersetsAnnouncerOptions = {}) {
    this.#cfg = cfg;
    this.#log = ctx.log;
    this.#connect = zkConnectString(cfg.zkAddrs);
    this.#backoff = opts.retryBackoff ?? jittered(100, 30_000);
    // Proxies without announcements never load the ZooKeeper client: the session starts with the first.
    this.#session = new ZkSession({
      connect: this.#connect,
      sessionTimeoutMs: cfg.sessionTimeoutMs,
      backoff: this.#backoff,
      log: ctx.log,
      whileDisconnected: 'members stay while the session lives',
      inNewSession: 'announcing again in a new session',
      loadFailed: 'cannot load the ZooKeeper client; nothing will be announced',
      // Members of the old session vanish with it (expired, or closed).
      began: () => {
        for (const m of this.#members) m.node = undefined;
      },
      connected: () => {
        for (const w of this.#connectedWaiters.splice(0)) w(true);
        for (const m of this.#members) this.#sync(m);
      },
    });
    this.#failures = ctx.stats.counter('failures');
    ctx.stats.gauge(['announced'], () => {
      let n = 0;
      for (const m of this.#members) if (m.node !== undefined) n++;
      return n;
    });
    ctx.stats.gauge(['connected'], () => (this.#session.connected ? 1 : 0));
  }

  announce(address: AnnouncedAddress, name: Path, residual: Path): Announcement {
    const base = this.#cfg.pathPrefix === '/' ? '' : this.#cfg.pathPrefix;
    const rest = residual.elems.map((_, i) => `/${residual.elemUtf8(i)}`).join('');
    const m: Member = {
      address: showAddress(address),
      name: name.show,
      path: base + rest || '/',
      data: Buffer.from(memberJson(address)),
      node: undefined,
      gen: 0,
      error: undefined,
      unsure: false,
      busy: undefined,
      withdrawn: undefined,
      retry: undefined,
      backoff: undefined,
    };
    // Finagle's announcement address: `zk!<hosts>!<serverset path>!<shard>`.
    const forum = `zk!${this.#connect}!${m.path}!0`;
    if (this.#closed) {
      m.withdrawn = Promise.resolve();
    } else {
      this.#members.add(m);
      this.#session.start();
      this.#sync(m);
    }
    return {
      get state() {
        return stateOf(m, forum);
      },
      withdraw: () => this.#withdraw(m),
    };
  }

  /** Withdraws everything (without waiting for a lost connection any more), then ends the session. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#connectedWaiters.splice(0)) w(false);
    await Promise.all([...this.#members].map((m) => this.#withdraw(m)));
    await this.#session.close();
  }

  /** Creates the member of `m` in the current session, unless it exists or is being created. */
  #sync(m: Member): void {
    const zk = this.#session.zk;
    const client = this.#session.client;
    if (m.withdrawn !== undefined || m.busy !== undefined || zk === undefined || client === undefined || !this.#session.connected) return;
    if (m.node !== undefined && m.gen === this.#session.gen) return;
    clearTimeout(m.retry);
    const gen = this.#session.gen;
    m.busy = this.#create(zk, client, gen, m).finally(() => {
      m.busy = undefined;
      // A new session began meanwhile (its connect skipped this busy member): go again in it.
      if (gen !== this.#session.gen) this.#sync(m);
    });
  }

  async #create(zk: ZkModule, client: Zk.Client, gen: number, m: Member): Promise<void> {
    const open = [new zk.ACL(zk.Permission.ALL, new zk.Id('world', 'anyone'))];
    try {
      let node = m.unsure ? await this.#findOwn(zk, client, m) : undefined;
      if (node === undefined) {
        await this.#request<string>((cb) => client.mkdirp(m.path, open, zk.CreateMode.PERSISTENT, cb));
        const parent = m.path === '/' ? '' : m.path;
        node = await this.#request<string>((cb) => client.create(`${parent}/${MEMBER_PREFIX}`, m.data, open, zk.CreateMode.EPHEMERAL_SEQUENTIAL, cb));
      }
      m.unsure = false;
      if (gen !== this.#session.gen) return; // that session is gone, and its member with it
      m.node = node;
      m.gen = gen;
      m.error = undefined;
      m.backoff = undefined;
      if (m.withdrawn === undefined) {
        this.#log.info({ address: m.address, name: m.name, member: node }, `announced ${m.address} as ${m.name} at ${node}`);
        this.#watchMember(zk, client, gen, m, node);
      }
    } catch (e) {
      if (gen !== this.#session.gen || m.withdrawn !== undefined) return;
      // After a lost connection or a timeout the create may still have happened.
      if (e instanceof ZkTimeoutError || codeOf(e) === zk.Exception.CONNECTION_LOSS) m.unsure = true;
      const err = new AnnounceFailedError(`cannot announce ${m.address} as ${m.name} at ${m.path}: ${errorMessage(e)}`, { cause: e });
      m.error = errorMessage(e);
      m.backoff ??= this.#backoff.stream();
      const delay = m.backoff.nextMs();
      this.#failures.incr();
      this.#log.warn({ err: err.message, code: err.code, address: m.address, name: m.name }, `${err.message}; retrying in ${delay} ms`);
      m.retry = setTimeout(() => this.#sync(m), delay).unref();
    }
  }

  /** A member of ours (this session, same record) that a create whose answer was lost made. */
  async #findOwn(zk: ZkModule, client: Zk.Client, m: Member): Promise<string | undefined> {
    let children: string[];
    try {
      children = await this.#request<string[]>((cb) => client.getChildren(m.path, cb));
    } catch (e) {
      if (codeOf(e) === zk.Exception.NO_NODE) return undefined;
      throw e;
    }
    const session = client.getSessionId();
    const claimed = new Set([...this.#members].map((o) => o.node));
    const parent = m.path === '/' ? '' : m.path;
    for (const child of children.filter((c) => c.startsWith(MEMBER_PREFIX)).sort()) {
      const node = `${parent}/${child}`;
      if (claimed.has(node)) continue;
      try {
        const [data, stat] = await this.#request<[Buffer, Zk.Stat]>((cb) => client.getData(node, (err, d, s) => cb(err, [d, s])));
        if (stat.ephemeralOwner.equals(session) && data.equals(m.data)) return node;
      } catch (e) {
        if (codeOf(e) !== zk.Exception.NO_NODE) throw e;
      }
    }
    return undefined;
  }

  /** A member deleted by someone else is announced again (as twitter-commons' Group rejoins). */
  #watchMember(zk: ZkModule, client: Zk.Client, gen: number, m: Member, node: string): void {
    const stillOurs = (): boolean => gen === this.#session.gen && m.node === node && m.withdrawn === undefined;
    const watcher = (event: Zk.Event): void => {
      if (!stillOurs()) return;
      if (event.getType() === zk.Event.NODE_DELETED) {
        this.#log.warn({ address: m.address, name: m.name, member: node }, `member ${node} was deleted; announcing again`);
        m.node = undefined;
        this.#sync(m);
      } else {
        this.#watchMember(zk, client, gen, m, node);
      }
    };
    client.exists(node, watcher, (err, stat) => {
      if (err !== null || stat !== null || !stillOurs()) return; // errors: a reconnect re-syncs
      m.node = undefined;
      this.#sync(m);
    });
  }

  /**
   * Deletes the member (after any create in flight settles); idempotent. While disconnected it
   * waits (up to a session timeout) for the connection to come back in the same session; a new
   * session means the member is already gone.
   */
  #withdraw(m: Member): Promise<void> {
    m.withdrawn ??= (async () => {
      clearTimeout(m.retry);
      await m.busy;
      this.#members.delete(m);
      const node = m.node;
      const gen = m.gen;
      const deadline = Date.now() + this.#cfg.sessionTimeoutMs;
      const fields = { address: m.address, name: m.name, member: node };
      const giveUp = (reason: string): void => {
        m.node = undefined;
        this.#log.warn({ ...fields, err: reason }, `cannot delete ${node}: ${reason}; it goes when the ZooKeeper session ends`);
      };
      for (;;) {
        const client = this.#session.client;
        if (node === undefined || client === undefined || gen !== this.#session.gen) break;
        if (this.#session.connected) {
          try {
            await this.#request<void>((cb) => client.remove(node, -1, cb));
            m.node = undefined;
            this.#log.info(fields, `withdrew ${m.address} as ${m.name} (deleted ${node})`);
            return;
          } catch (e) {
            if (codeOf(e) === this.#session.zk?.Exception.NO_NODE) break;
            if (codeOf(e) !== this.#session.zk?.Exception.CONNECTION_LOSS && !(e instanceof ZkTimeoutError)) return giveUp(errorMessage(e));
            // The state change (and then the reconnect) follows a lost connection shortly.
            await new Promise((r) => setTimeout(r, 50).unref());
          }
        }
        if (!(await this.#waitConnected(deadline - Date.now()))) return giveUp('not connected to ZooKeeper');
      }
      m.node = undefined;
      this.#log.info(fields, `withdrew ${m.address} as ${m.name}`);
    })();
    return m.withdrawn;
  }

  /** Resolves true once connected, false after `ms` (or at once when closed). */
  #waitConnected(ms: number): Promise<boolean> {
    if (this.#session.connected) return Promise.resolve(true);
    if (ms <= 0 || this.#closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#connectedWaiters = this.#connectedWaiters.filter((w) => w !== done);
        resolve(false);
      }, ms).unref();
      const done = (connected: boolean): void => {
        clearTimeout(timer);
        resolve(connected);
      };
      this.#connectedWaiters.push(done);
    });
  }

  /** One callback-style request as a promise, failing after a session timeout. */
  #request<T>(start: (cb: ZkCallback<T>) => void): Promise<T> {
    return zkCall(this.#cfg.sessionTimeoutMs, 'request', start);
  }

}


function stateOf(m: Member, forum: string): AnnouncementState {
  const state = m.withdrawn !== undefined ? 'withdrawn' : m.node !== undefined ? 'announced' : 'pending';
  return {
    address: m.address,
    name: m.name,
    announcer: 'io.prx.serversets',
    forum,
    state,
    ...(m.node === undefined ? {} : { member: m.node }),
    ...(m.error === undefined || state !== 'pending' ? {} : { error: m.error }),
  };
}

defineAnnouncer({
  kind: 'io.prx.serversets',
  schema: serversetsAnnouncerSchema,
  create: (cfg, ctx) => new ServersetsAnnouncer(cfg, ctx),
});
