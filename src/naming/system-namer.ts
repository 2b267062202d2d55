import { Activity } from './activity.js';
import { type Addr, addrBound, addrFailed, address } from './addr.js';
import { InvalidInetPathError, UnknownSystemNamerError } from './errors.js';
import { BoundName, type Name } from './name.js';
import { type NameTree, Empty, Fail, Neg, leaf } from './name-tree.js';
import type { Path } from './path.js';
import { Var } from './var.js';
import { isIP } from 'node:net';

/** A namer: turns the rest of a path (after its prefix) into a tree of names. */
export interface Namer {
  lookup(path: Path): Activity<NameTree<Name>>;
}

/**
 * Resolves a host name to a live address set (DNS lives above the naming layer, which does no
 * I/O). `fixed` asks for a resolution cached for the life of the process (`/$/fixedinet`).
 */
export type HostResolver = (host: string, port: number, fixed: boolean) => Var<Addr>;

/** Without a resolver only IP literals bind; a host name is a failed address with a clear cause. */
const noDnsResolver: HostResolver = (host) =>
  Var.value(addrFailed(new Error(`cannot resolve host name '${host}': no DNS resolver configured`)));

export interface SystemNamerOptions {
  resolveHost?: HostResolver;
  /** Extra `/$/<kind>/…` namers (Finagle loads these by class name). */
  kinds?: ReadonlyMap<string, Namer>;
}

const INT32 = /^[+-]?[0-9]+$/;

/** Java `Integer.parseInt` acceptance: optional sign, ASCII digits, 32-bit range. */
function parseJavaInt(s: string): number | undefined {
  if (!INT32.test(s)) return undefined;
  const n = Number(s);
  return n >= -2147483648 && n <= 2147483647 ? n : undefined;
}

/**
 * The global namer for `/$/…` paths: `/$/inet/<host>/<port>[/residual]` and `/$/fixedinet/…`
 * (host optional: `/$/inet/<port>` is loopback), `/$/fail…` (Fail), `/$/nil…` (Empty), and
 * `/$/<kind>/…` system namers registered by kind; anything else is Neg.
 */
export class SystemNamer implements Namer {
  readonly #resolveHost: HostResolver;
  readonly #kinds: ReadonlyMap<string, Namer>;

  constructor(opts: SystemNamerOptions = {}) {
    this.#resolveHost = opts.resolveHost ?? noDnsResolver;
    this.#kinds = opts.kinds ?? new Map();
  }

  /** `path` is the full path, starting with the `$` element. */
  lookup(path: Path): Activity<NameTree<Name>> {
    const e = path.elems;
    if (e[0] !== '$' || e.length < 2) return Activity.value(Neg);
    const kind = e[1] as string;
    if (kind === 'inet' || kind === 'fixedinet') {
      const bound = this.#inet(path, kind === 'fixedinet');
      if (bound) return Activity.value(leaf(bound));
      if (!this.#kinds.has(kind)) return Activity.exception(new InvalidInetPathError(path.show));
    }
    if (kind === 'fail') return Activity.value(Fail);
    if (kind === 'nil') return Activity.value(Empty);
    const namer = this.#kinds.get(path.elemUtf8(1));
    if (namer) return namer.lookup(path.drop(2));
    return Activity.exception(new UnknownSystemNamerError(path.elemUtf8(1), path.show));
  }

  /** host+port is tried before port alone, so `/$/inet/1234/5678` is host 1234, port 5678. */
  #inet(path: Path, fixed: boolean): BoundName | undefined {
    const e = path.elems;
    if (e.length >= 4) {
      const port = parseJavaInt(e[3] as string);
      if (port !== undefined) return this.#bound(path.take(4), path.drop(4), path.elemUtf8(2), port, fixed);
    }
    if (e.length >= 3) {
      const port = parseJavaInt(e[2] as string);
      if (port !== undefined) return this.#bound(path.take(3), path.drop(3), '127.0.0.1', port, fixed);
    }
    return undefined;
  }

  #bound(id: Path, residual: Path, host: string, port: number, fixed: boolean): BoundName {
    let addr: Var<Addr>;
    // Java's InetSocketAddress wording (no space after the colon), as Finagle reports it.
    if (port < 0 || port > 65535) addr = Var.value(addrFailed(new Error(`port out of range:${port}`)));
    else if (isIP(host) !== 0) addr = Var.value(addrBound([address(host, port)]));
    else addr = this.#resolveHost(host, port, fixed);
    return new BoundName(id, addr, residual);
  }
}
