/** `T` with every nested object and list read-only: the type of a validated, deep-frozen config. */
export type DeepReadonly<T> = T extends (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/**
 * Freezes `value` and everything reachable from it (config data: plain objects, lists, scalars).
 * Validated configs are shared by every module that reads them, so no one may edit them in place.
 */
export function deepFreeze<T>(value: T): DeepReadonly<T> {
  freeze(value, new WeakSet());
  return value as DeepReadonly<T>;
}

function freeze(value: unknown, seen: WeakSet<object>): void {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  Object.freeze(value);
  for (const child of Object.values(value)) freeze(child, seen);
}
