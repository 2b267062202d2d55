/**
 * Paces young-generation collections by the bytes the proxy reads from sockets.
 *
 * Why: every socket read is a fresh off-heap buffer, and V8 11 (Node 20) forces a scavenge for
 * such buffers only once 32 MiB of them are young (twice its default semi-space size, whatever
 * `--max-semi-space-size` says). A proxy that allocates little on the JS heap scavenges rarely on
 * its own, so while a large message streams through, up to 32 MiB of dead read buffers wait for a
 * collection, and RSS grows by that much (measured: 35 MiB for a 64 MiB h2 body, 40 MiB for h1).
 * Where the runtime offers `gc` (bin/prx starts node with `--expose-gc`), a scavenge is requested
 * every {@link SCAVENGE_EVERY_BYTES} read instead: under a millisecond each, and only bulk
 * transfers read that much between the scavenges the JS heap triggers anyway.
 */

import { setFlagsFromString } from 'node:v8';

/** Bytes read between requested scavenges. */
export const SCAVENGE_EVERY_BYTES = 4 << 20;

/** Node 20's `gc`: no argument runs a full collection; `{ type: 'minor' }` a scavenge (V8 11 reads any argument as a request for one). */
type Collect = (options?: { readonly type: 'minor' }) => void;

let collect: Collect | undefined;
let readSinceScavenge = 0;

/**
 * Paces scavenges with the runtime's `gc` (node defines it non-configurable: it stays on the
 * global object; prx itself calls it only from here). False when node was started without
 * `--expose-gc` (tests, `node dist/…`): reads are then only counted.
 */
export function adoptExposedGc(): boolean {
  const gc = (globalThis as { gc?: unknown }).gc;
  if (typeof gc === 'function') collect = gc as Collect;
  return collect !== undefined;
}

/** Counts `bytes` read from a socket; every {@link SCAVENGE_EVERY_BYTES}, requests a scavenge. */
export function noteSocketRead(bytes: number): void {
  readSinceScavenge += bytes;
  if (readSinceScavenge < SCAVENGE_EVERY_BYTES) return;
  readSinceScavenge = 0;
  collect?.({ type: 'minor' });
}

/**
 * One full collection, once start-up is over, compacting. Why: what start-up leaves behind (the
 * config's YAML tree and validation temporaries, module initialisation) has been promoted into
 * the old space, and under steady load V8 runs no full collection for a long time, so it stays
 * resident; a plain collection frees it but leaves the survivors spread over half-empty pages,
 * which stay resident too. Compacting moves them together and releases those pages. Measured
 * under the benchmark's load: 1.5 MiB less RSS for the collection, 1.3 MiB more for compacting.
 * The same collection drops the bytecode of every function compiled so far (V8 otherwise keeps
 * it until the function has gone unused over several full collections, which under load do not
 * come): start-up's code (config validation, module set-up) is not run again, and what is, is
 * compiled again on first use. Tens of milliseconds, before the first request as a rule. V8 reads
 * both flags at each full collection; they are set for this one alone. Call it before the GC
 * gauges start sampling: this collection is start-up's, and would count ten times over there.
 */
export function collectStartupGarbage(): void {
  if (collect === undefined) return;
  setFlagsFromString('--compact-on-every-full-gc');
  setFlagsFromString('--stress-flush-code');
  try {
    collect();
  } finally {
    setFlagsFromString('--no-stress-flush-code');
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
}
