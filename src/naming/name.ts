import { type Addr, AddrNeg, type Address, addrBound } from './addr.js';
import { Path } from './path.js';
import { Var } from './var.js';

/**
 * A name bound to a destination (Finagle `Name.Bound`): `id` identifies the concrete destination
 * (usually a path such as `/#/io.prx.fs/cat`), `residual` is the part of the looked-up path the
 * namer did not consume, and `addr` is its live address set. Two bound names are the same
 * destination exactly when their ids are equal; `idKey` is that identity as a string.
 */
export class BoundName {
  readonly id: Path | string;
  readonly addr: Var<Addr>;
  readonly residual: Path;

  constructor(id: Path | string, addr: Var<Addr>, residual: Path = Path.empty) {
    this.id = id;
    this.addr = addr;
    this.residual = residual;
  }

  /** The id as text: a path's show form, or the string id. */
  get idStr(): string {
    return this.id instanceof Path ? this.id.show : this.id;
  }

  get idKey(): string {
    return this.idStr;
  }

  /** The same destination with another residual or address var. */
  with(fields: { residual?: Path; addr?: Var<Addr> }): BoundName {
    return new BoundName(this.id, fields.addr ?? this.addr, fields.residual ?? this.residual);
  }

  toString(): string {
    return this.idStr;
  }
}

/** A name in a tree being bound: an unbound path, or a bound destination. */
export type Name = Path | BoundName;

/** An always-empty bound name (Finagle `Name.empty`). */
export const emptyBoundName = new BoundName('empty', Var.value(addrBound([])));

/**
 * One bound name standing for a set of them (Finagle `Name.all`), used when resolving a whole
 * tree to one address set: endpoints are the union of all bound sets.
 */
export function allOf(names: readonly BoundName[]): BoundName {
  if (names.length === 0) return emptyBoundName;
  if (names.length === 1) return names[0] as BoundName;
  const addr = Var.collect(names.map((n) => n.addr)).map((addrs): Addr => {
    const bound: Address[] = [];
    let anyBound = false;
    let allNeg = true;
    let allFailed = true;
    let firstFailure: Addr | undefined;
    for (const a of addrs) {
      if (a.kind === 'bound') {
        anyBound = true;
        bound.push(...a.addresses);
      }
      if (a.kind !== 'neg') allNeg = false;
      if (a.kind !== 'failed') allFailed = false;
      else firstFailure ??= a;
    }
    if (anyBound) return addrBound(bound);
    if (allNeg) return AddrNeg;
    if (allFailed && firstFailure) return firstFailure;
    return { kind: 'pending' };
  });
  const id = names.map((n) => n.idStr).sort().join(',');
  return new BoundName(`{${id}}`, addr);
}
