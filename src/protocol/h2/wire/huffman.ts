/**
 * HPACK's Huffman coding (RFC 7541 §5.2): the octet length of an encoding, an encoder into a
 * caller's buffer, and a decoder driven by a 4-bit state table built once from the code table.
 *
 * Decoder table: the states are the 256 internal nodes of the code tree (state 0 is the root). For
 * each state and input nibble, one Uint32 entry gives the next state, the octet completed on the
 * way (at most one: every code is at least 5 bits long), whether the input may end there (the bits
 * since the last completed octet are fewer than 8 and all ones: the padding rule of §5.2) and
 * whether the nibble hits EOS, which a string must never contain.
 */
import { HUFFMAN_CODES, HUFFMAN_LENGTHS } from './huffman-table.js';

const EOS = 256;
const EMITS = 1 << 16;
const ACCEPTS = 1 << 17;
const FAILS = 1 << 18;

/** Built once at load: 256 states x 16 nibbles. */
const DECODE_TABLE: Uint32Array = buildDecodeTable();

function buildDecodeTable(): Uint32Array {
  // The code tree as child arrays; a child >= 0 is an internal node, < 0 is the leaf ~symbol.
  const zero: number[] = [0];
  const one: number[] = [0];
  const depth: number[] = [0];
  const allOnes: boolean[] = [true];
  for (let sym = 0; sym <= EOS; sym++) {
    const len = HUFFMAN_LENGTHS[sym]!;
    const code = HUFFMAN_CODES[sym]!;
    let node = 0;
    for (let bit = len - 1; bit >= 0; bit--) {
      const kids = ((code >>> bit) & 1) === 1 ? one : zero;
      if (bit === 0) {
        kids[node] = ~sym;
      } else {
        if (kids[node] === 0) {
          kids[node] = zero.length;
          depth.push(depth[node]! + 1);
          allOnes.push(allOnes[node]! && kids === one);
          zero.push(0);
          one.push(0);
        }
        node = kids[node]!;
      }
    }
  }
  if (zero.length !== 256) throw new Error(`HPACK Huffman tree has ${zero.length} internal nodes, expected 256`);
  const table = new Uint32Array(256 * 16);
  for (let state = 0; state < 256; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0 && (entry & FAILS) === 0; bit--) {
        const next = ((nibble >>> bit) & 1) === 1 ? one[node]! : zero[node]!;
        if (next >= 0) {
          node = next;
        } else if (~next === EOS) {
          entry |= FAILS;
        } else {
          entry |= EMITS | (~next << 8);
          node = 0;
        }
      }
      if (node === 0 || (allOnes[node]! && depth[node]! <= 7)) entry |= ACCEPTS;
      table[state * 16 + nibble] = entry | node;
    }
  }
  return table;
}

/** Why a Huffman string failed to decode, or null: the caller wraps it in its own error. */
export type HuffmanFault = 'EOS inside a Huffman string' | 'Huffman padding longer than 7 bits or not all ones';

/** Scratch for decoded octets, grown on demand. */
let decodeScratch: Buffer = Buffer.allocUnsafe(256);

/**
 * The fault of the last huffmanDecode() that returned null. A module variable rather than a
 * result object: the decoder returns a string on the hot path and allocates nothing else.
 */
export let huffmanFault: HuffmanFault = 'EOS inside a Huffman string';

/** Decodes `src[start, end)` as a Huffman string to latin1; null (see huffmanFault) when malformed. */
export function huffmanDecode(src: Uint8Array, start: number, end: number): string | null {
  // Each octet's code is at least 5 bits, so n input octets yield at most 8n/5 octets.
  const bound = (((end - start) * 8) / 5) | 0;
  if (decodeScratch.length < bound) decodeScratch = Buffer.allocUnsafe(Math.max(bound, decodeScratch.length * 2));
  const out = decodeScratch;
  let n = 0;
  let state = 0;
  let entry = ACCEPTS;
  for (let i = start; i < end; i++) {
    const b = src[i]!;
    entry = DECODE_TABLE[(state << 4) | (b >>> 4)]!;
    if ((entry & FAILS) !== 0) return fault('EOS inside a Huffman string');
    if ((entry & EMITS) !== 0) out[n++] = (entry >>> 8) & 0xff;
    state = entry & 0xff;
    entry = DECODE_TABLE[(state << 4) | (b & 0xf)]!;
    if ((entry & FAILS) !== 0) return fault('EOS inside a Huffman string');
    if ((entry & EMITS) !== 0) out[n++] = (entry >>> 8) & 0xff;
    state = entry & 0xff;
  }
  if ((entry & ACCEPTS) === 0) return fault('Huffman padding longer than 7 bits or not all ones');
  return latin1Slice.call(out, 0, n);
}

function fault(why: HuffmanFault): null {
  huffmanFault = why;
  return null;
}

/** The octet length of `s` (latin1) Huffman-encoded, padding included. */
export function huffmanEncodedLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += HUFFMAN_LENGTHS[s.charCodeAt(i) & 0xff]!;
  return (bits + 7) >>> 3;
}

/**
 * Writes `s` (latin1) Huffman-encoded into `dst` at `offset`, padded with ones; returns the offset
 * after it. The caller makes room for huffmanEncodedLength(s) octets.
 */
export function huffmanEncode(s: string, dst: Uint8Array, offset: number): number {
  let o = offset;
  let acc = 0; // pending bits, right-aligned; fewer than 8 between symbols
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    let len = HUFFMAN_LENGTHS[sym]!;
    let code = HUFFMAN_CODES[sym]!;
    if (len > 24) {
      // Keep acc within 31 bits: push the high part first.
      const high = len - 16;
      acc = (acc << high) | (code >>> 16);
      bits += high;
      while (bits >= 8) {
        bits -= 8;
        dst[o++] = acc >>> bits;
      }
      acc &= (1 << bits) - 1;
      len = 16;
      code &= 0xffff;
    }
    acc = (acc << len) | code;
    bits += len;
    while (bits >= 8) {
      bits -= 8;
      dst[o++] = acc >>> bits;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) dst[o++] = (acc << (8 - bits)) | (0xff >>> bits);
  return o;
}

/** Node's own latin1 decoder behind Buffer#toString('latin1'), callable on any Uint8Array. */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice: (this: Uint8Array, start: number, end: number) => string })
  .latin1Slice;

/** The octets `src[start, end)` as a latin1 string. */
export function latin1String(src: Uint8Array, start: number, end: number): string {
  return latin1Slice.call(src, start, end);
}
