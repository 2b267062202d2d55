import { Dtab } from './dtab.js';
import { readDtab } from './parser.js';

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
