// Deterministic clock and random sources for policy tests.

/** A random source cycling through `values` (each in [0, 1)). */
export function cycle(values: readonly number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] ?? 0;
}

/** A manual clock: `now` is read by the code under test; tests set it. */
export class TestClock {
  now = 0;
  readonly read = (): number => this.now;
}
