/**
 * A session's streams by id: open addressing with linear probing, whose slots are cleared as
 * entries leave and whose old arrays are cleared when it grows.
 *
 * Why not a Map: under churn V8 replaces a Map's backing table every few deletions and leaves the
 * old table holding its entries, linked to its successor, until a full collection. Once one such
 * table has been promoted, the scavenger treats its slots as roots: every stream the chain of
 * tables ever held survives and is promoted with the request it belongs to. Measured on the h2
 * router at 128 concurrent streams: ~2.8 KB of every request promoted, and most of the scavenges'
 * time spent copying it (HTTP/1.1, with no such table, promotes ~50 B a request).
 *
 * Stream ids are odd and rise (both sessions key client-initiated streams), so `id >>> 1` spreads
 * consecutive streams over consecutive slots.
 */
export class StreamTable<T extends { readonly id: number }> {
  /** Stream ids; 0 marks an empty slot (stream 0 is the connection, never a stream). */
  #keys: Int32Array;
  #values: (T | undefined)[];
  #mask: number;
  #size = 0;

  /** Small by default (a table per session; a server of many idle clients holds thousands); it doubles as needed. */
  constructor(capacity = 4) {
    const n = 1 << Math.max(2, Math.ceil(Math.log2(capacity)));
    this.#keys = new Int32Array(n);
    this.#values = new Array<T | undefined>(n).fill(undefined);
    this.#mask = n - 1;
  }

  get size(): number {
    return this.#size;
  }

  get(id: number): T | undefined {
    const keys = this.#keys;
    const mask = this.#mask;
    for (let i = (id >>> 1) & mask; ; i = (i + 1) & mask) {
      const k = keys[i];
      if (k === id) return this.#values[i];
      if (k === 0) return undefined;
    }
  }

  /** Adds `value` under its id (replacing an entry with the same id). */
  add(value: T): void {
    if ((this.#size + 1) * 2 > this.#keys.length) this.#grow();
    const id = value.id;
    const keys = this.#keys;
    const mask = this.#mask;
    let i = (id >>> 1) & mask;
    while (keys[i] !== 0 && keys[i] !== id) i = (i + 1) & mask;
    if (keys[i] === 0) this.#size++;
    keys[i] = id;
    this.#values[i] = value;
  }

  /** Removes the entry of `id`; false when there is none. */
  delete(id: number): boolean {
    const keys = this.#keys;
    const values = this.#values;
    const mask = this.#mask;
    let i = (id >>> 1) & mask;
    for (;;) {
      const k = keys[i];
      if (k === id) break;
      if (k === 0) return false;
      i = (i + 1) & mask;
    }
    keys[i] = 0;
    values[i] = undefined;
    this.#size--;
    // Backward shift: entries after the hole that could live in it move up, so lookups never
    // stop early at an empty slot (no tombstones to leave references in).
    for (let j = (i + 1) & mask; keys[j] !== 0; j = (j + 1) & mask) {
      const home = ((keys[j] as number) >>> 1) & mask;
      // The entry stays when its home lies cyclically in (i, j].
      const stays = i <= j ? home > i && home <= j : home > i || home <= j;
      if (stays) continue;
      keys[i] = keys[j] as number;
      values[i] = values[j];
      keys[j] = 0;
      values[j] = undefined;
      i = j;
    }
    return true;
  }

  /** The entries now, as an array the caller may keep (for the rare walks over every stream). */
  values(): T[] {
    const out: T[] = [];
    for (const v of this.#values) if (v !== undefined) out.push(v);
    return out;
  }

  /** Removes every entry and returns them. */
  takeAll(): T[] {
    const out = this.values();
    this.clear();
    return out;
  }

  clear(): void {
    if (this.#size === 0) return;
    this.#keys.fill(0);
    this.#values.fill(undefined);
    this.#size = 0;
  }

  #grow(): void {
    const oldKeys = this.#keys;
    const oldValues = this.#values;
    const n = oldKeys.length * 2;
    this.#keys = new Int32Array(n);
    this.#values = new Array<T | undefined>(n).fill(undefined);
    this.#mask = n - 1;
    this.#size = 0;
    for (const v of oldValues) if (v !== undefined) this.add(v);
    // The old array may already be in the old generation: leave it no references to streams.
    oldValues.fill(undefined);
  }
}
