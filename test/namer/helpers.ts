// What the namer tests share: waiting for a value, and observing a lookup with its bound address.
import { type Activity, type Addr, type BoundName, type Name, type NameTree, type Path, type State, readPath } from '../../src/naming/index.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it gives a value (not undefined or false), or fails naming `what`. */
export async function untilValue<T>(probe: () => T | undefined | false, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export interface LookupWatch {
  tree(): State<NameTree<Name>> | undefined;
  addr(): Addr | undefined;
  bound(): BoundName | undefined;
  close(): void;
}

/** Observes a namer's lookup of `path` and, once bound to a leaf, that leaf's address; `close` ends both. */
export function watchLookup(namer: { lookup(path: Path): Activity<NameTree<Name>> }, path: string): LookupWatch {
  let tree: State<NameTree<Name>> | undefined;
  let addr: Addr | undefined;
  let bound: BoundName | undefined;
  let addrSub: { close(): void } | undefined;
  const sub = namer.lookup(readPath(path)).observe((s) => {
    tree = s;
    const b = s.kind === 'ok' && s.value.type === 'leaf' ? (s.value.value as BoundName) : undefined;
    if (b !== bound) {
      addrSub?.close();
      bound = b;
      addr = undefined;
      addrSub = b?.addr.observe((a) => (addr = a));
    }
  });
  return {
    tree: () => tree,
    addr: () => addr,
    bound: () => bound,
    close: () => {
      addrSub?.close();
      sub.close();
    },
  };
}
