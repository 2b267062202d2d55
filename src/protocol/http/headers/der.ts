/**
 * Just enough DER (X.690) to read an X.509 certificate's subject and subject alternative names:
 * tag-length-value walking, OIDs and the string types a distinguished name uses. Input is trusted
 * to be a certificate the TLS stack already parsed; malformed input throws {@link DerError}.
 */
import { PrxError } from '../../../core/errors.js';

/** The certificate bytes are not the DER this reader expects. */
export class DerError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_DER', `malformed certificate: ${message}`);
  }
}

/** One DER element: its tag byte and where its header and content lie in the buffer. */
export interface DerNode {
  readonly tag: number;
  /** Offset of the tag byte. */
  readonly start: number;
  /** Offset of the first content byte. */
  readonly contentStart: number;
  /** Offset just past the content. */
  readonly end: number;
}

/** DER tag bytes used here. */
export const Tag = {
  Integer: 0x02,
  OctetString: 0x04,
  Oid: 0x06,
  Utf8String: 0x0c,
  PrintableString: 0x13,
  T61String: 0x14,
  Ia5String: 0x16,
  GeneralString: 0x1b,
  BmpString: 0x1e,
  Sequence: 0x30,
  Set: 0x31,
} as const;

/** Reads the element starting at `offset`. */
export function readNode(buf: Uint8Array, offset: number, limit: number = buf.length): DerNode {
  if (offset + 2 > limit) throw new DerError('truncated element');
  const tag = buf[offset] as number;
  if ((tag & 0x1f) === 0x1f) throw new DerError('high tag numbers are not supported');
  let len = buf[offset + 1] as number;
  let pos = offset + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || pos + n > limit) throw new DerError('bad length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (buf[pos + i] as number);
    pos += n;
  }
  if (pos + len > limit) throw new DerError('element overruns its parent');
  return { tag, start: offset, contentStart: pos, end: pos + len };
}

/** The elements inside a constructed element. */
export function childrenOf(buf: Uint8Array, node: DerNode): DerNode[] {
  const out: DerNode[] = [];
  let pos = node.contentStart;
  while (pos < node.end) {
    const child = readNode(buf, pos, node.end);
    out.push(child);
    pos = child.end;
  }
  return out;
}

/** An OBJECT IDENTIFIER's content as dotted decimal (`2.5.4.3`). */
export function oidString(buf: Uint8Array, node: DerNode): string {
  if (node.tag !== Tag.Oid || node.end === node.contentStart) throw new DerError('expected an OID');
  const parts: number[] = [];
  let value = 0;
  for (let i = node.contentStart; i < node.end; i++) {
    const b = buf[i] as number;
    value = value * 128 + (b & 0x7f);
    if ((b & 0x80) === 0) {
      if (parts.length === 0) parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80);
      else parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

/** The text of a string-typed element, decoded per its type; undefined for other types. */
export function stringValue(buf: Uint8Array, node: DerNode): string | undefined {
  const bytes = Buffer.from(buf.buffer, buf.byteOffset + node.contentStart, node.end - node.contentStart);
  switch (node.tag) {
    case Tag.Utf8String:
      return bytes.toString('utf8');
    case Tag.PrintableString:
    case Tag.Ia5String:
    case Tag.GeneralString:
    case Tag.T61String:
      return bytes.toString('latin1');
    case Tag.BmpString:
      return bytes.length % 2 === 0 ? Buffer.from(bytes).swap16().toString('utf16le') : undefined;
    default:
      return undefined;
  }
}

/** The whole element (tag, length and content) as lower-case hex. */
export function elementHex(buf: Uint8Array, node: DerNode): string {
  return Buffer.from(buf.buffer, buf.byteOffset + node.start, node.end - node.start).toString('hex');
}
