/**
 * Character classes of the Finagle naming grammar. They are deliberately not JS regex classes:
 * whitespace is Java's `Character.isWhitespace` and digits are Java's `Character.isDigit`, so a
 * dtab that parses in Linkerd parses identically here.
 */

/** `0-9 A-Z a-z _ : . # $ % -`: bytes a path element may show without escaping. */
const SHOWABLE = new Uint8Array(128);
for (const c of '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_:.#$%-') {
  SHOWABLE[c.charCodeAt(0)] = 1;
}

export function isShowableCode(code: number): boolean {
  return code < 128 && SHOWABLE[code] === 1;
}

/** Java `Character.isWhitespace` (NBSP, U+2007 and U+202F are not whitespace there). */
export function isJavaWhitespace(code: number): boolean {
  if (code <= 0x20) return (code >= 0x09 && code <= 0x0d) || (code >= 0x1c && code <= 0x20);
  if (code < 0x1680) return false;
  return (
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x2006) ||
    (code >= 0x2008 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x205f ||
    code === 0x3000
  );
}

const UNICODE_DIGIT = /^\p{Nd}$/u;

/** Java `Character.isDigit` for a single UTF-16 unit: any Unicode decimal digit. */
export function isJavaDigit(ch: string): boolean {
  const code = ch.charCodeAt(0);
  if (code >= 0x30 && code <= 0x39) return true;
  return code >= 0x80 && UNICODE_DIGIT.test(ch);
}

export function isHexCode(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}
