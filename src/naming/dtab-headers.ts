import { Dtab } from './dtab.js';
import { NamingParseError } from './errors.js';
import { readDtab, readNameTree, readPrefix } from './parser.js';
import { Dentry } from './dtab.js';

/**
 * The request dtab carried by prx's own headers: every `prx-ctx-dtab` value, then every
 * `prx-dtab` value (so the client's explicit override wins). Each value is one whole dtab; no
 * comma splitting. Throws `NamingParseError` with the parser's message.
 */
export function readPrxDtabHeaders(ctxValues: readonly string[], userValues: readonly string[]): Dtab {
  let dtab = Dtab.empty;
  for (const v of ctxValues) dtab = dtab.concat(readDtab(v));
  for (const v of userValues) dtab = dtab.concat(readDtab(v));
  return dtab;
}

/**
 * Finagle's `Dtab-Local` header: every value in order, each split on `,` (the split ignores
 * comments, as Finagle's does), each piece a dtab; empty pieces are empty dtabs.
 */
export function readDtabLocalHeader(values: readonly string[]): Dtab {
  let dtab = Dtab.empty;
  for (const v of values) for (const piece of v.split(',')) dtab = dtab.concat(readDtab(piece));
  return dtab;
}

/**
 * Finagle's legacy `X-Dtab-NN-A`/`X-Dtab-NN-B` header pairs (base64 prefix and destination),
 * ordered by lower-cased header name. `headers` holds only the `x-dtab-*` headers.
 */
export function readXDtabHeaders(headers: readonly (readonly [string, string])[]): Dtab {
  const sorted = headers.map(([k, v]) => [k.toLowerCase(), v] as const).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  if (sorted.length % 2 !== 0) throw new NamingParseError('Unmatched X-Dtab headers');
  const dentries: Dentry[] = [];
  for (let i = 0; i < sorted.length; i += 2) {
    const [ka, va] = sorted[i] as readonly [string, string];
    const [kb, vb] = sorted[i + 1] as readonly [string, string];
    if (ka.slice(0, -1) !== kb.slice(0, -1) || !ka.endsWith('a') || !kb.endsWith('b')) {
      throw new NamingParseError('Unmatched X-Dtab headers');
    }
    const prefixText = decodeBase64(va);
    const dstText = decodeBase64(vb);
    let prefix;
    try {
      prefix = readPrefix(prefixText);
    } catch {
      throw new NamingParseError(`Invalid prefix: ${prefixText}`);
    }
    let dst;
    try {
      dst = readNameTree(dstText);
    } catch {
      throw new NamingParseError(`Invalid name: ${dstText}`);
    }
    dentries.push(new Dentry(prefix, dst));
  }
  return new Dtab(dentries);
}

function decodeBase64(v: string): string {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
    throw new NamingParseError(`Value not b64-encoded: ${v}`);
  }
  return Buffer.from(v, 'base64').toString('utf8');
}
