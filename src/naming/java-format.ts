/**
 * Java's `String.format("%.2f", d)`, which Finagle uses to show union weights. Java rounds the
 * shortest decimal representation of the double HALF_UP, so 1.005 shows as `1.01` where JS's
 * `toFixed(2)` gives `1.00`; large values never switch to exponent notation.
 */
export function formatJavaFixed2(d: number): string {
  if (Number.isNaN(d)) return 'NaN';
  if (!Number.isFinite(d)) return d > 0 ? 'Infinity' : '-Infinity';
  const negative = d < 0 || Object.is(d, -0);
  const { digits, pointPos } = shortestDecimal(Math.abs(d));
  // digits × 10^(pointPos - digits.length): split into integer and fraction digit strings.
  let intPart: string;
  let fracPart: string;
  if (pointPos <= 0) {
    intPart = '0';
    fracPart = '0'.repeat(-pointPos) + digits;
  } else if (pointPos >= digits.length) {
    intPart = digits + '0'.repeat(pointPos - digits.length);
    fracPart = '';
  } else {
    intPart = digits.slice(0, pointPos);
    fracPart = digits.slice(pointPos);
  }
  let kept = (fracPart + '00').slice(0, 2);
  const roundUp = fracPart.length > 2 && fracPart.charCodeAt(2) >= 0x35; // HALF_UP on the next digit
  if (roundUp) {
    const n = incrementDecimal(intPart + kept);
    intPart = n.slice(0, n.length - 2);
    kept = n.slice(n.length - 2);
  }
  return (negative ? '-' : '') + intPart + '.' + kept;
}

/** The shortest round-trip digits of a non-negative finite double and the decimal point position. */
function shortestDecimal(d: number): { digits: string; pointPos: number } {
  if (d === 0) return { digits: '0', pointPos: 1 };
  const s = d.toExponential(); // shortest round-trip digits, e.g. "1.005e+0"
  const [mant = '0', exp = '0'] = s.split('e');
  const digits = mant.replace('.', '');
  return { digits, pointPos: Number(exp) + 1 };
}

/** Adds one to a decimal digit string, e.g. "099" → "100", "999" → "1000". */
function incrementDecimal(n: string): string {
  const out = n.split('');
  let i = out.length - 1;
  while (i >= 0) {
    if (out[i] === '9') {
      out[i] = '0';
      i--;
    } else {
      out[i] = String.fromCharCode((out[i] ?? '0').charCodeAt(0) + 1);
      return out.join('');
    }
  }
  return '1' + out.join('');
}
