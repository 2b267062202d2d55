import { isShowableCode } from './chars.js';

const HEX = '0123456789abcdef';

/**
 * A name: an ordered sequence of non-empty byte strings. Elements are held as "binary strings"
 * (one char per byte, codes 0–255) so equality, hashing and prefix tests are plain string
 * operations on the hot path; `Path.utf8` and `elemUtf8` convert to and from text.
 */
export class Path {
  static readonly empty: Path = new Path([]);

  readonly elems: readonly string[];
  #show: string | undefined;

  private constructor(elems: readonly string[]) {
    this.elems = elems;
  }

  /** A path of binary-string elements (each char a byte). Empty elements are a programming error. */
  static of(...elems: string[]): Path {
    return elems.length === 0 ? Path.empty : new Path(elems);
  }

  /** A path from already-validated binary elements, without copying. */
  static fromElems(elems: readonly string[]): Path {
    return elems.length === 0 ? Path.empty : new Path(elems);
  }

  /** A path from UTF-8 text elements (e.g. a Host header value). */
  static utf8(...elems: string[]): Path {
    return Path.of(...elems.map(utf8ToBinary));
  }

  get size(): number {
    return this.elems.length;
  }

  get isEmpty(): boolean {
    return this.elems.length === 0;
  }

  take(n: number): Path {
    return n >= this.elems.length ? this : Path.fromElems(this.elems.slice(0, n));
  }

  drop(n: number): Path {
    return n <= 0 ? this : Path.fromElems(this.elems.slice(n));
  }

  concat(other: Path): Path {
    if (other.isEmpty) return this;
    if (this.isEmpty) return other;
    return new Path([...this.elems, ...other.elems]);
  }

  startsWith(prefix: Path): boolean {
    const pe = prefix.elems;
    if (pe.length > this.elems.length) return false;
    for (let i = 0; i < pe.length; i++) if (pe[i] !== this.elems[i]) return false;
    return true;
  }

  equals(other: Path): boolean {
    if (this === other) return true;
    const a = this.elems;
    const b = other.elems;
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  /** The element at `i` decoded as UTF-8 text. */
  elemUtf8(i: number): string {
    return binaryToUtf8(this.elems[i] ?? '');
  }

  /** Canonical text, `/a/b`; `/` for the empty path. Cached: paths are immutable. */
  get show(): string {
    if (this.#show === undefined) {
      this.#show = this.elems.length === 0 ? '/' : '/' + this.elems.map(showElem).join('/');
    }
    return this.#show;
  }

  toString(): string {
    return this.show;
  }

  toJSON(): string {
    return this.show;
  }
}

/**
 * One element as text: verbatim when every byte is showable, otherwise every byte as `\xhh`
 * (Finagle escapes the whole element, not just the offending bytes).
 */
export function showElem(elem: string): string {
  for (let i = 0; i < elem.length; i++) {
    if (!isShowableCode(elem.charCodeAt(i))) return escapeAll(elem);
  }
  return elem;
}

function escapeAll(elem: string): string {
  let out = '';
  for (let i = 0; i < elem.length; i++) {
    const b = elem.charCodeAt(i);
    out += '\\x' + HEX[b >> 4] + HEX[b & 15];
  }
  return out;
}

export function utf8ToBinary(text: string): string {
  // Fast path: ASCII text is already its own binary string.
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) return Buffer.from(text, 'utf8').toString('latin1');
  }
  return text;
}

export function binaryToUtf8(bin: string): string {
  for (let i = 0; i < bin.length; i++) {
    if (bin.charCodeAt(i) > 0x7f) return Buffer.from(bin, 'latin1').toString('utf8');
  }
  return bin;
}
