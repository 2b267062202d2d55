/**
 * A map from non-negative 31-bit integers (mux tags) to values, by open addressing with linear
 * probing. Why not a Map: V8 shrinks a Map's table whenever a delete leaves it under half full,
 * and for a small map that means a new table each time it is emptied. A mux session with one call
 * in flight empties its tag map on every reply, so each call cost a table; this table only grows
 * (to twice the most entries it held), and set and delete allocate nothing.
 */
export class IntMap<V> {
  /** Keys by slot; -1 marks a free slot. */
  #keys: Int32Array;
  #values: (V | undefined)[];
  #mask: number;
  /** 32 − log2(slots): a hash's top bits pick the home slot. */
  #shift: number;
  #size = 0;

  constructor(capacity = 8) {
    const n = 1 << Math.max(3, Math.ceil(Math.log2(capacity)));
    this.#keys = new Int32Array(n).fill(-1);
    this.#values = new Array<V | undefined>(n).fill(undefined);
    this.#mask = n - 1;
    this.#shift = 32 - Math.log2(n);
  }

  get size(): number {
    return this.#size;
  }

  get(key: number): V | undefined {
    const keys = this.#keys;
    const mask = this.#mask;
    for (let i = slotOf(key, this.#shift); ; i = (i + 1) & mask) {
      const k = keys[i] as number;
      if (k === key) return this.#values[i];
      if (k === -1) return undefined;
    }
  }

  has(key: number): boolean {
    const keys = this.#keys;
    const mask = this.#mask;
    for (let i = slotOf(key, this.#shift); ; i = (i + 1) & mask) {
      const k = keys[i] as number;
      if (k === key) return true;
      if (k === -1) return false;
    }
  }

  set(key: number, value: V): void {
    if (key < 0 || key > 0x7fffffff || !Number.isInteger(key)) throw new RangeError(`IntMap keys are 31-bit integers, not ${key}`);
    const keys = this.#keys;
    const mask = this.#mask;
    let i = slotOf(key, this.#shift);
    for (; ; i = (i + 1) & mask) {
      const k = keys[i] as number;
      if (k === key) {
        this.#values[i] = value;
        return;
      }
      if (k === -1) break;
    }
    keys[i] = key;
    this.#values[i] = value;
    // At most half full, so probes stay short.
    if (++this.#size * 2 > keys.length) this.#grow();
  }

  delete(key: number): boolean {
    const keys = this.#keys;
    const values = this.#values;
    const mask = this.#mask;
    let i = slotOf(key, this.#shift);
    for (; ; i = (i + 1) & mask) {
      const k = keys[i] as number;
      if (k === key) break;
      if (k === -1) return false;
    }
    // Backward-shift deletion: entries after the hole that probed past it move into it, so no
    // tombstone is left and lookups still stop at the first free slot.
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const k = keys[j] as number;
      if (k === -1) break;
      const home = slotOf(k, this.#shift);
      // Move k into the hole at i unless its home lies cyclically in (i, j].
      if (i <= j ? home <= i || home > j : home <= i && home > j) {
        keys[i] = k;
        values[i] = values[j];
        i = j;
      }
    }
    keys[i] = -1;
    values[i] = undefined;
    this.#size--;
    return true;
  }

  /** Empties the map (keeping its table). */
  clear(): void {
    if (this.#size === 0) return;
    this.#keys.fill(-1);
    this.#values.fill(undefined);
    this.#size = 0;
  }

  /** The keys, as a new array (callers may change the map while they go through it). */
  keys(): number[] {
    const out: number[] = [];
    const keys = this.#keys;
    for (let i = 0; i < keys.length; i++) if ((keys[i] as number) !== -1) out.push(keys[i] as number);
    return out;
  }

  /** The values, as a new array. */
  values(): V[] {
    const out: V[] = [];
    const keys = this.#keys;
    for (let i = 0; i < keys.length; i++) if ((keys[i] as number) !== -1) out.push(this.#values[i] as V);
    return out;
  }

  #grow(): void {
    const oldKeys = this.#keys;
    const oldValues = this.#values;
    const n = oldKeys.length * 2;
    const keys = new Int32Array(n).fill(-1);
    const values = new Array<V | undefined>(n).fill(undefined);
    const mask = n - 1;
    const shift = 32 - Math.log2(n);
    for (let s = 0; s < oldKeys.length; s++) {
      const k = oldKeys[s] as number;
      if (k === -1) continue;
      let i = slotOf(k, shift);
      while ((keys[i] as number) !== -1) i = (i + 1) & mask;
      keys[i] = k;
      values[i] = oldValues[s];
    }
    this.#keys = keys;
    this.#values = values;
    this.#mask = mask;
    this.#shift = shift;
  }
}

/** Fibonacci hashing: tags are small consecutive numbers, which this spreads over the table. */
function slotOf(key: number, shift: number): number {
  return Math.imul(key, 0x9e3779b1) >>> shift;
}
