/**
 * A client session's tags: always the smallest free one (the mux specification asks that tags be
 * reused smallest first), in O(log n) per acquire and release. Freed tags sit in a binary min-heap;
 * tags never used yet come from a counter.
 */
import { MAX_TAG, MIN_TAG } from './frame.js';

export class TagPool {
  /** Freed tags, a binary min-heap; every one is below #next. */
  readonly #heap: number[] = [];
  #next = MIN_TAG;

  /** The smallest free tag, or undefined when all 2^23 - 2 are taken. */
  acquire(): number | undefined {
    const heap = this.#heap;
    if (heap.length === 0) return this.#next <= MAX_TAG ? this.#next++ : undefined;
    const top = heap[0] as number;
    const last = heap.pop() as number;
    if (heap.length > 0) this.#siftDown(last);
    return top;
  }

  /** Gives a tag back (once). */
  release(tag: number): void {
    const heap = this.#heap;
    let i = heap.length;
    heap.push(tag);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as number;
      if (p <= tag) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = tag;
  }

  /** Tags freed and waiting for reuse. */
  get free(): number {
    return this.#heap.length;
  }

  /** Places `v` from the root down (the root was just taken). */
  #siftDown(v: number): void {
    const heap = this.#heap;
    const n = heap.length;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && (heap[r] as number) < (heap[l] as number) ? r : l;
      const cv = heap[c] as number;
      if (cv >= v) break;
      heap[i] = cv;
      i = c;
    }
    heap[i] = v;
  }
}
