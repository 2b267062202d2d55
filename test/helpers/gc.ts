import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

/** A full collection, in a test process started without `--expose-gc`. */
export function collectGarbage(): void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}

/** `ref`'s target after a full collection: undefined once collected. Waits out the current job first, which keeps a WeakRef's target alive. */
export async function derefAfterGc<T extends object>(ref: WeakRef<T> | undefined): Promise<T | undefined> {
  await new Promise((resolve) => setImmediate(resolve));
  collectGarbage();
  return ref?.deref();
}
