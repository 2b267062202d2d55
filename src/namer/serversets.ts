import { z } from 'zod';
import { namerShape, positiveInt, lazySchema } from '../config/index.js';
import type { Logger } from '../core/log.js';
import {
  Activity, type Addr, AddrNeg, AddrPending, type Address, BoundName, Neg, Pending, type Path, type State, Var, addrBound,
  addrEquals, addrFailed, address, leaf, ok, type Name, type NameTree,
} from '../naming/index.js';
import { type Backoff, jittered } from '../service/policy/index.js';
import { type RunningNamer, defineNamer, sameLookup } from './namer-kind.js';
import { zkAddrsSchema, zkConnectString } from './zk-call.js';
import { ZkWatcher } from './zk-watch.js';

/**
 * `io.prx.serversets`: Finagle serversets in ZooKeeper (Linkerd's `io.l5d.serversets` namer), the
 * members prx's own `io.prx.serversets` announcer writes. `/#/io.prx.serversets/discovery/web`
 * binds the serverset znode `/discovery/web` of the ensemble `zkAddrs`: the `member_*` children
 * whose JSON has `status` ALIVE, at their `serviceEndpoint` — or, with `:<endpoint>` on the last
 * segment (`/discovery/web:http`), at their additional endpoint of that name (members without it
 * are left out). The longest prefix of the path that exists as a znode is the serverset and the
 * rest is the residual; a path none of whose prefixes exists is Neg. A member's `shard` is in its
 * address metadata. Children and member data are watched; the last members stay while ZooKeeper
 * is unreachable, and everything is read again in a new session after an expiry.
 *
 * ```yaml
 * namers:
 * - kind: io.prx.serversets
 *   zkAddrs: [{host: zk-1, port: 2181}]
 * ```
 */
export const serversetsNamerSchema = lazySchema(() => z.strictObject({
  ...namerShape('io.prx.serversets'),
  zkAddrs: zkAddrsSchema,
  /** Finagle's default ZooKeeper session timeout. */
  sessionTimeoutMs: positiveInt.default(10_000),
}));
export type ServersetsNamerConfig = z.output<typeof serversetsNamerSchema>;

/** Knobs outside the config (tests shorten them). */
export interface ServersetsNamerOptions {
  /** Delay before a new session after an expiry. */
  readonly sessionBackoff?: Backoff;
}

const MEMBER_PREFIX = 'member_';

/** One candidate serverset of a path: the first `take` segments, with the endpoint cut off the last. */
interface Candidate {
  readonly take: number;
  readonly zkPath: string;
  readonly endpoint: string | undefined;
}

export class ServersetsNamer implements RunningNamer {
  readonly #prefix: Path;
  readonly #log: Logger;
  readonly #zk: ZkWatcher;
  readonly #addrs = new Map<string, Var<Addr>>();

  constructor(cfg: ServersetsNamerConfig, prefix: Path, log: Logger, opts: ServersetsNamerOptions = {}) {
    this.#prefix = prefix;
    this.#log = log;
    this.#zk = new ZkWatcher(zkConnectString(cfg.zkAddrs), cfg.sessionTimeoutMs, log, opts.sessionBackoff ?? jittered(100, 30_000));
  }

  lookup(path: Path): Activity<NameTree<Name>> {
    const candidates: Candidate[] = [];
    for (let take = path.size; take >= 1; take--) {
      const c = candidate(path, take);
      if (c !== undefined) candidates.push(c);
    }
    if (candidates.length === 0) return Activity.value<NameTree<Name>>(Neg);
    return new Activity(
      Var.collect(candidates.map((c) => this.#zk.exists(c.zkPath)))
        .map((exists): State<NameTree<Name>> => {
          // Longest first: the first that exists wins; an unknown one before it leaves the answer pending.
          for (let i = 0; i < candidates.length; i++) {
            const s = exists[i] as State<boolean>;
            if (s.kind === 'pending') return Pending;
            if (s.kind === 'failed') return s;
            if (!s.value) continue;
            const c = candidates[i] as Candidate;
            return ok(leaf(new BoundName(this.#prefix.concat(path.take(c.take)), this.#addrOf(c), path.drop(c.take))));
          }
          return ok(Neg);
        })
        .dedup(sameLookup),
    );
  }

  close(): void {
    this.#zk.close();
  }

  #addrOf(c: Candidate): Var<Addr> {
    const key = `${c.zkPath}\u0000${c.endpoint ?? ''}`;
    let v = this.#addrs.get(key);
    if (v === undefined) {
      const parent = c.zkPath === '/' ? '' : c.zkPath;
      v = this.#zk
        .children(c.zkPath)
        .flatMap((s): Var<Addr> => {
          if (s.kind === 'pending') return Var.value(AddrPending);
          if (s.kind === 'failed') return Var.value(addrFailed(s.error));
          if (s.value === null) return Var.value(AddrNeg);
          const members = s.value.filter((m) => m.startsWith(MEMBER_PREFIX));
          return Var.collect(members.map((m) => this.#zk.data(`${parent}/${m}`))).map((datas): Addr => {
            const out: Address[] = [];
            for (let i = 0; i < datas.length; i++) {
              const d = datas[i] as State<Buffer | null>;
              if (d.kind === 'pending') return AddrPending;
              if (d.kind === 'failed' || d.value === null) continue; // gone since the listing
              const a = this.#member(`${parent}/${members[i] as string}`, d.value, c.endpoint);
              if (a !== undefined) out.push(a);
            }
            return addrBound(out);
          });
        })
        .dedup(addrEquals);
      this.#addrs.set(key, v);
    }
    return v;
  }

  /** A member's address: its service endpoint (or the named additional one) while ALIVE. */
  #member(node: string, data: Buffer, endpoint: string | undefined): Address | undefined {
    const m = parseMember(data);
    if (typeof m === 'string') {
      this.#log.warn({ member: node, err: m }, `ignoring serverset member ${node}: ${m}`);
      return undefined;
    }
    if (m.status !== 'ALIVE') return undefined;
    const ep = endpoint === undefined ? m.serviceEndpoint : m.additionalEndpoints[endpoint];
    if (ep === undefined) return undefined;
    return address(ep.host, ep.port, 1, m.shard === undefined ? {} : { shard: m.shard });
  }
}

/** The candidate for the first `take` segments, or undefined when ZooKeeper could not name it. */
function candidate(path: Path, take: number): Candidate | undefined {
  const segs: string[] = [];
  for (let i = 0; i < take; i++) segs.push(path.elemUtf8(i));
  let endpoint: string | undefined;
  const last = segs[take - 1] as string;
  const colon = last.indexOf(':');
  if (colon >= 0) {
    endpoint = last.slice(colon + 1);
    segs[take - 1] = last.slice(0, colon);
  }
  // ZooKeeper refuses these components; such a prefix cannot be a serverset.
  if (segs.some((s) => s === '' || s === '.' || s === '..' || s.includes('\u0000'))) return undefined;
  return { take, zkPath: `/${segs.join('/')}`, endpoint };
}

interface Endpoint {
  readonly host: string;
  readonly port: number;
}

interface Member {
  readonly serviceEndpoint: Endpoint | undefined;
  readonly additionalEndpoints: Readonly<Record<string, Endpoint>>;
  readonly status: string;
  readonly shard: number | undefined;
}

/** Finagle's serverset member JSON (twitter-commons' codec), or why it is not one. */
export function parseMember(data: Buffer): Member | string {
  let json: unknown;
  try {
    json = JSON.parse(data.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return 'not a JSON object';
  const o = json as Record<string, unknown>;
  const additional: Record<string, Endpoint> = {};
  const extra = o['additionalEndpoints'];
  if (typeof extra === 'object' && extra !== null) {
    for (const [name, ep] of Object.entries(extra)) {
      const e = endpointOf(ep);
      if (e !== undefined) additional[name] = e;
    }
  }
  const service = endpointOf(o['serviceEndpoint']);
  if (service === undefined && Object.keys(additional).length === 0) return 'no endpoint with a host and a port';
  const shard = o['shard'];
  return {
    serviceEndpoint: service,
    additionalEndpoints: additional,
    status: typeof o['status'] === 'string' ? o['status'] : 'ALIVE',
    shard: typeof shard === 'number' && Number.isInteger(shard) ? shard : undefined,
  };
}

function endpointOf(v: unknown): Endpoint | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { host, port } = v as { host?: unknown; port?: unknown };
  if (typeof host !== 'string' || host === '' || typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host, port };
}

defineNamer({
  kind: 'io.prx.serversets',
  schema: serversetsNamerSchema,
  create: (cfg, ctx) => new ServersetsNamer(cfg, ctx.prefix, ctx.log),
});
