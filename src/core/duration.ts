const UNITS: readonly (readonly [bigint, string])[] = [
  [86_400_000_000_000n, 'days'],
  [3_600_000_000_000n, 'hours'],
  [60_000_000_000n, 'minutes'],
  [1_000_000_000n, 'seconds'],
  [1_000_000n, 'milliseconds'],
  [1_000n, 'microseconds'],
  [1n, 'nanoseconds'],
];

/**
 * Finagle's `Duration.toString` for a duration in milliseconds: every non-zero unit from days
 * down, joined with `+`, units always plural (`10.seconds`, `1.seconds+500.milliseconds`,
 * `0.seconds`). Error messages of every protocol quote durations this way, as Linkerd's did.
 */
export function formatFinagleDuration(ms: number): string {
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return '0.seconds';
  let out = '';
  for (const [size, name] of UNITS) {
    const v = ns / size; // truncates toward zero, like TimeUnit.convert
    if (v === 0n) continue;
    ns -= v * size;
    if (v > 0n && out !== '') out += '+';
    out += `${v}.${name}`;
  }
  return out;
}
