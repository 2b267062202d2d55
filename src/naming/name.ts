import type { Addr } from './addr.js';
import { Path } from './path.js';
import type { Var } from './var.js';

/**
 * A name bound to a destination (Finagle `Name.Bound`): `id` identifies the concrete destination
 * (usually a path such as `/#/io.prx.fs/cat`), `residual` is the part of the looked-up path the
 * namer did not consume, and `addr` is its live address set. Two bound names are the same
 * destination exactly when their ids are equal; `idStr` is that identity as a string.
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
