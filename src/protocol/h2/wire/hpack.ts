/**
 * HPACK (RFC 7541) for prx's own HTTP/2 client codec: a decoder for the peer's header blocks and an
 * encoder for ours. Strings are latin1 (one char per octet), as node:http2 hands them out.
 */
import { HpackError } from '../errors.js';
import { STATIC_COUNT, STATIC_NAMES, STATIC_VALUES } from './hpack-static.js';
import { huffmanDecode, huffmanFault, latin1String } from './huffman.js';

/** RFC 7541 §4.1: an entry's size is its name and value octets plus 32. */
const ENTRY_OVERHEAD = 32;

/** The most continuation octets an integer may have: 4 carry 28 bits, past any sane length or index. */
const MAX_INT_SHIFT = 21;

/**
 * Decodes the peer's header blocks against one dynamic table per connection. The table is a ring of
 * name and value strings: an indexed field hands out the stored strings, never re-decoded.
 */
export class HpackDecoder {
  readonly #maxTableBytes: number;
  /** The table's current maximum size: the last size update, initially our setting. */
  #limit: number;
  #bytes = 0;
  // The rings start small (a connection's peer indexes a handful of fields) and double as needed.
  #names: string[] = new Array<string>(4).fill('');
  #values: string[] = new Array<string>(4).fill('');
  #mask = 3;
  /** The ring slot the next entry goes into; the newest entry is just before it. */
  #head = 0;
  #count = 0;
  /** The offset after the last integer or string read (a second return value, without an object). */
  #pos = 0;

  /** `maxTableBytes`: our SETTINGS_HEADER_TABLE_SIZE; the peer's table-size updates may not exceed it. */
  constructor(maxTableBytes: number) {
    this.#maxTableBytes = maxTableBytes;
    this.#limit = maxTableBytes;
  }

  /**
   * Decodes one complete header block (HEADERS + CONTINUATION fragments already joined) and appends
   * alternating names and values to `out`. Returns the header list size (RFC 9113 §6.5.2: name and
   * value octets plus 32 per field). Throws HpackError on malformed input; the table stays
   * consistent (every field decoded before the error was applied, as the peer's encoder assumes).
   */
  decode(block: Uint8Array, out: string[]): number {
    const end = block.length;
    let pos = 0;
    let listSize = 0;
    let sawField = false;
    while (pos < end) {
      const b = block[pos++]!;
      let name: string;
      let value: string;
      if (b >= 0x80) {
        // Indexed field (§6.1): the common case once the table is warm.
        let index = b & 0x7f;
        if (index === 0x7f) {
          index = this.#readInt(block, pos, 0x7f);
          pos = this.#pos;
        }
        if (index === 0) throw new HpackError('indexed field with index 0');
        if (index <= STATIC_COUNT) {
          name = STATIC_NAMES[index]!;
          value = STATIC_VALUES[index]!;
        } else {
          const slot = this.#slotOf(index);
          name = this.#names[slot]!;
          value = this.#values[slot]!;
        }
      } else if (b >= 0x20 && b < 0x40) {
        // Dynamic table size update (§6.3): only before the block's first field.
        let size = b & 0x1f;
        if (size === 0x1f) {
          size = this.#readInt(block, pos, 0x1f);
          pos = this.#pos;
        }
        if (sawField) throw new HpackError('dynamic table size update after the first field of the block');
        if (size > this.#maxTableBytes) {
          throw new HpackError(`dynamic table size update to ${size} above the maximum ${this.#maxTableBytes}`);
        }
        this.#limit = size;
        this.#evictTo(size);
        continue;
      } else {
        // Literal field (§6.2): with incremental indexing (01), without (0000) or never indexed (0001).
        const indexing = b >= 0x40;
        const prefix = indexing ? 0x3f : 0x0f;
        let nameIndex = b & prefix;
        if (nameIndex === prefix) {
          nameIndex = this.#readInt(block, pos, prefix);
          pos = this.#pos;
        }
        if (nameIndex === 0) {
          name = this.#readString(block, pos);
          pos = this.#pos;
        } else if (nameIndex <= STATIC_COUNT) {
          name = STATIC_NAMES[nameIndex]!;
        } else {
          name = this.#names[this.#slotOf(nameIndex)]!;
        }
        value = this.#readString(block, pos);
        pos = this.#pos;
        if (indexing) this.#insert(name, value);
      }
      sawField = true;
      out.push(name, value);
      listSize += name.length + value.length + ENTRY_OVERHEAD;
    }
    return listSize;
  }

  /** The dynamic table, newest entry first (for tests and diagnostics). */
  dynamicTable(): Array<[string, string]> {
    const entries: Array<[string, string]> = [];
    for (let i = 0; i < this.#count; i++) {
      const slot = (this.#head - 1 - i) & this.#mask;
      entries.push([this.#names[slot]!, this.#values[slot]!]);
    }
    return entries;
  }

  /** The dynamic table's size in RFC 7541 §4.1 octets. */
  get dynamicTableBytes(): number {
    return this.#bytes;
  }

  /** The ring slot of HPACK index `index` (> 61). */
  #slotOf(index: number): number {
    const d = index - STATIC_COUNT - 1;
    if (d >= this.#count) throw new HpackError(`index ${index} past the ${STATIC_COUNT + this.#count} table entries`);
    return (this.#head - 1 - d) & this.#mask;
  }

  /** An integer (§5.1) whose prefix was all ones: `pos` is its first continuation octet. */
  #readInt(block: Uint8Array, pos: number, prefix: number): number {
    let value = prefix;
    let shift = 0;
    for (;;) {
      if (pos >= block.length) throw new HpackError('integer past the end of the block');
      const b = block[pos++]!;
      value += (b & 0x7f) << shift;
      if (b < 0x80) break;
      shift += 7;
      if (shift > MAX_INT_SHIFT) throw new HpackError('integer longer than 4 continuation octets');
    }
    this.#pos = pos;
    return value;
  }

  /** A string literal (§5.2) at `pos`. */
  #readString(block: Uint8Array, pos: number): string {
    if (pos >= block.length) throw new HpackError('string literal past the end of the block');
    const b = block[pos++]!;
    let length = b & 0x7f;
    if (length === 0x7f) {
      length = this.#readInt(block, pos, 0x7f);
      pos = this.#pos;
    }
    const end = pos + length;
    if (end > block.length) throw new HpackError(`string literal of ${length} octets past the end of the block`);
    this.#pos = end;
    if (b < 0x80) return latin1String(block, pos, end);
    const s = huffmanDecode(block, pos, end);
    if (s === null) throw new HpackError(huffmanFault);
    return s;
  }

  #insert(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.#limit) {
      // §4.4: an entry larger than the table empties it and is not added.
      this.#evictTo(0);
      return;
    }
    this.#evictTo(this.#limit - size);
    if (this.#count === this.#names.length) this.#grow();
    this.#names[this.#head] = name;
    this.#values[this.#head] = value;
    this.#head = (this.#head + 1) & this.#mask;
    this.#count++;
    this.#bytes += size;
  }

  /** Evicts the oldest entries until the table holds at most `bytes`. */
  #evictTo(bytes: number): void {
    while (this.#bytes > bytes) {
      const slot = (this.#head - this.#count) & this.#mask;
      this.#bytes -= this.#names[slot]!.length + this.#values[slot]!.length + ENTRY_OVERHEAD;
      this.#names[slot] = '';
      this.#values[slot] = '';
      this.#count--;
    }
  }

  /** Doubles the ring, oldest entry first at slot 0. */
  #grow(): void {
    const size = this.#names.length * 2;
    const names = new Array<string>(size).fill('');
    const values = new Array<string>(size).fill('');
    for (let i = 0; i < this.#count; i++) {
      const slot = (this.#head - this.#count + i) & this.#mask;
      names[i] = this.#names[slot]!;
      values[i] = this.#values[slot]!;
    }
    this.#names = names;
    this.#values = values;
    this.#mask = size - 1;
    this.#head = this.#count;
  }
}

/** The encoder's table never exceeds this, whatever the peer allows (RFC 7541's default; plenty). */
const ENCODER_TABLE_CAP = 4096;

// How the encoder represents a field whose exact pair is not in a table (§6.2).
const INDEX = 0; // literal with incremental indexing: it will repeat, later blocks reference it
const NO_INDEX = 1; // literal without indexing: it changes per request, indexing would only churn the table
const NEVER_INDEX = 2; // never indexed (§7.1.3): a credential, which intermediaries must not index either

/**
 * The policy, by name (names not listed are indexed). Never indexed: credentials. Not indexed:
 * fields whose values change per request (deadlines, timeouts, lengths, ids, trace contexts, dates),
 * so an entry would be evicted before reuse and push out the entries that do repeat. Besides the
 * list, a field is not indexed when its entry would exceed MAX_INDEXED_ENTRY (a few such fields
 * would flush a 4 KiB table) or, for :path, when the value is longer than MAX_INDEXED_PATH (gRPC
 * method paths are short and repeat; long paths carry ids and query strings). A listed name that no
 * table holds yet (grpc-timeout, x-request-id...) is indexed once, so that later blocks send its
 * name as an index rather than as a literal the peer decodes every time.
 */
const NAME_POLICY: ReadonlyMap<string, number> = new Map([
  ['authorization', NEVER_INDEX],
  ['proxy-authorization', NEVER_INDEX],
  ['cookie', NEVER_INDEX],
  ['set-cookie', NEVER_INDEX],
  ...[
    'grpc-timeout', 'content-length', 'date', 'expires', 'last-modified', 'if-modified-since',
    'if-unmodified-since', 'etag', 'if-none-match', 'content-range', 'range', 'x-request-id',
    'x-correlation-id', 'traceparent', 'tracestate', 'b3', 'x-b3-traceid', 'x-b3-spanid',
    'x-b3-parentspanid', 'x-amzn-trace-id', 'prx-ctx-deadline', 'prx-ctx-trace', 'prx-reqid',
  ].map((name): [string, number] => [name, NO_INDEX]),
]);
const MAX_INDEXED_ENTRY = 1024;
const MAX_INDEXED_PATH = 64;

/** The static table by name: the first index with the name, and its indexes by value. */
const STATIC_BY_NAME: ReadonlyMap<string, { index: number; byValue: Map<string, number> }> = (() => {
  const byName = new Map<string, { index: number; byValue: Map<string, number> }>();
  for (let i = 1; i <= STATIC_COUNT; i++) {
    const name = STATIC_NAMES[i]!;
    let entry = byName.get(name);
    if (entry === undefined) byName.set(name, (entry = { index: i, byValue: new Map() }));
    if (!entry.byValue.has(STATIC_VALUES[i]!)) entry.byValue.set(STATIC_VALUES[i]!, i);
  }
  return byName;
})();

/** What the encoder knows of one name: its static entries, its dynamic entries, its policy. */
class NameState {
  readonly name: string;
  readonly policy: number;
  /** The first static index with this name, 0 if none. */
  readonly staticIndex: number;
  readonly staticValues: Map<string, number> | null;
  /** The longest value indexed with this name; longer ones are sent without indexing. */
  readonly maxIndexedValue: number;
  /** Value -> id of the newest dynamic entry with it (ids count insertions from 1); made at the first insertion. */
  dynamicValues: Map<string, number> | null = null;
  /** The id of the newest dynamic entry with this name, 0 if none. */
  newestId = 0;
  dynamicCount = 0;
  /** Dropped from the encoder's map when its last dynamic entry goes (names not known statically). */
  readonly transient: boolean;

  constructor(name: string, transient: boolean) {
    this.name = name;
    this.policy = NAME_POLICY.get(name) ?? INDEX;
    const known = STATIC_BY_NAME.get(name);
    this.staticIndex = known?.index ?? 0;
    this.staticValues = known?.byValue ?? null;
    const maxValue = MAX_INDEXED_ENTRY - ENTRY_OVERHEAD - name.length;
    this.maxIndexedValue = name === ':path' ? Math.min(MAX_INDEXED_PATH, maxValue) : maxValue;
    this.transient = transient;
  }
}

/**
 * The encoders' scratch buffer, shared by all of them: a block is used (copied into its frame)
 * before the next one is encoded, and a connection need not hold a buffer of its own.
 */
let scratch: Buffer = Buffer.allocUnsafe(1024);

/**
 * Encodes prx's header blocks for one connection. A proxy re-encodes much the same heads per
 * request, so it spends CPU, not bytes: pairs already in a table go out as one index, literals are
 * raw latin1 (no Huffman), and a name's state is one Map lookup per field.
 */
export class HpackEncoder {
  readonly #byName = new Map<string, NameState>();
  /** The table's maximum size: min(the peer's setting, ENCODER_TABLE_CAP). */
  #limit = ENCODER_TABLE_CAP;
  /** The smallest limit since the last block, when a size update is due (§4.2), else -1. */
  #pendingMin = -1;
  #bytes = 0;
  /** The dynamic table as a ring: each entry's name state and value; the newest is before #head. */
  #states: Array<NameState | null> = new Array<NameState | null>(4).fill(null);
  #values: string[] = new Array<string>(4).fill('');
  #mask = 3;
  #head = 0;
  #count = 0;
  /** Entries ever inserted: the newest entry's id, and HPACK index 62 + #inserted - id. */
  #inserted = 0;

  /**
   * Name states are made as names are first sent (a connection sends a handful of the table's 60
   * names; made up front they were ~20 KiB per connection, which a server of many idle clients pays
   * for each).
   */
  #knownState(name: string): NameState | undefined {
    if (!STATIC_BY_NAME.has(name) && !NAME_POLICY.has(name)) return undefined;
    const state = new NameState(name, false);
    this.#byName.set(name, state);
    return state;
  }

  /** The peer's SETTINGS_HEADER_TABLE_SIZE (initially 4096); a change goes out at the next block's start. */
  setPeerMaxTableBytes(n: number): void {
    const limit = Math.min(n, ENCODER_TABLE_CAP);
    if (limit === this.#limit) return;
    this.#limit = limit;
    this.#evictTo(limit);
    this.#pendingMin = this.#pendingMin === -1 ? limit : Math.min(this.#pendingMin, limit);
  }

  /**
   * Encodes alternating names (lowercase) and values (latin1) as one header block. The result is a
   * view of the encoders' shared scratch buffer, valid until the next call of any encoder.
   */
  encode(fields: readonly string[]): Buffer {
    let buf = scratch;
    let o = 0;
    if (this.#pendingMin !== -1) {
      // §4.2: signal the smallest size since the last block (it evicted), then the final one.
      if (this.#pendingMin < this.#limit) o = writeInteger(buf, o, 0x20, 0x1f, this.#pendingMin);
      o = writeInteger(buf, o, 0x20, 0x1f, this.#limit);
      this.#pendingMin = -1;
    }
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const name = fields[i]!;
      const value = fields[i + 1]!;
      // Two integers of at most 6 octets each, a literal name and a value (one octet per char).
      const room = 12 + name.length + value.length;
      if (buf.length - o < room) buf = this.#grow(o, room);
      const state = this.#byName.get(name) ?? this.#knownState(name);
      let policy = INDEX;
      let nameIndex = 0;
      if (state !== undefined) {
        policy = state.policy;
        if (policy !== NEVER_INDEX) {
          const staticIndex = state.staticValues?.get(value);
          if (staticIndex !== undefined) {
            o = writeInteger(buf, o, 0x80, 0x7f, staticIndex);
            continue;
          }
          if (state.dynamicCount !== 0) {
            const id = state.dynamicValues?.get(value);
            if (id !== undefined) {
              o = writeInteger(buf, o, 0x80, 0x7f, STATIC_COUNT + 1 + this.#inserted - id);
              continue;
            }
          }
        }
        if (state.staticIndex !== 0) nameIndex = state.staticIndex;
        else if (state.newestId !== 0) nameIndex = STATIC_COUNT + 1 + this.#inserted - state.newestId;
        else if (policy === NO_INDEX) policy = INDEX; // once, so later values can name it by index
        if (policy === INDEX && value.length > state.maxIndexedValue) policy = NO_INDEX;
      } else if (name.length + value.length > MAX_INDEXED_ENTRY - ENTRY_OVERHEAD) {
        policy = NO_INDEX;
      }
      const size = name.length + value.length + ENTRY_OVERHEAD;
      if (policy === INDEX && size > this.#limit) policy = NO_INDEX;
      if (policy === INDEX) {
        o = writeInteger(buf, o, 0x40, 0x3f, nameIndex);
      } else {
        o = writeInteger(buf, o, policy === NEVER_INDEX ? 0x10 : 0x00, 0x0f, nameIndex);
      }
      if (nameIndex === 0) o = writeRawString(buf, o, name);
      o = writeRawString(buf, o, value);
      if (policy === INDEX) this.#insert(state ?? this.#newTransientState(name), value, size);
    }
    return buf.subarray(0, o);
  }

  /** The dynamic table, newest entry first (for tests). */
  dynamicTable(): Array<[string, string]> {
    const entries: Array<[string, string]> = [];
    for (let i = 0; i < this.#count; i++) {
      const slot = (this.#head - 1 - i) & this.#mask;
      entries.push([this.#states[slot]!.name, this.#values[slot]!]);
    }
    return entries;
  }

  #newTransientState(name: string): NameState {
    const state = new NameState(name, true);
    this.#byName.set(name, state);
    return state;
  }

  #insert(state: NameState, value: string, size: number): void {
    this.#evictTo(this.#limit - size);
    // Evicting the name's last older entry dropped a transient state from the map: it is live again.
    if (state.dynamicCount === 0 && state.transient) this.#byName.set(state.name, state);
    if (this.#count === this.#values.length) this.#growRing();
    this.#states[this.#head] = state;
    this.#values[this.#head] = value;
    this.#head = (this.#head + 1) & this.#mask;
    this.#count++;
    this.#bytes += size;
    const id = ++this.#inserted;
    (state.dynamicValues ??= new Map<string, number>()).set(value, id);
    state.newestId = id;
    state.dynamicCount++;
  }

  /** Evicts the oldest entries until the table holds at most `bytes`, keeping the name states right. */
  #evictTo(bytes: number): void {
    while (this.#bytes > bytes) {
      const slot = (this.#head - this.#count) & this.#mask;
      const state = this.#states[slot]!;
      const value = this.#values[slot]!;
      const id = this.#inserted - this.#count + 1;
      const values = state.dynamicValues;
      if (values !== null && values.get(value) === id) values.delete(value);
      if (state.newestId === id) state.newestId = 0;
      if (--state.dynamicCount === 0 && state.transient && this.#byName.get(state.name) === state) {
        this.#byName.delete(state.name);
      }
      this.#bytes -= state.name.length + value.length + ENTRY_OVERHEAD;
      this.#states[slot] = null;
      this.#values[slot] = '';
      this.#count--;
    }
  }

  #growRing(): void {
    const size = this.#values.length * 2;
    const states = new Array<NameState | null>(size).fill(null);
    const values = new Array<string>(size).fill('');
    for (let i = 0; i < this.#count; i++) {
      const slot = (this.#head - this.#count + i) & this.#mask;
      states[i] = this.#states[slot]!;
      values[i] = this.#values[slot]!;
    }
    this.#states = states;
    this.#values = values;
    this.#mask = size - 1;
    this.#head = this.#count;
  }

  /** A bigger scratch buffer holding the `used` octets written so far, with `room` more. */
  #grow(used: number, room: number): Buffer {
    const buf = Buffer.allocUnsafe(Math.max(scratch.length * 2, used + room));
    scratch.copy(buf, 0, 0, used);
    scratch = buf;
    return buf;
  }
}

/**
 * Writes an integer (§5.1) at `o` with `first`'s flag bits and an N-bit prefix whose all-ones value is
 * `prefixMax` (2^N - 1); returns the offset after it.
 */
export function writeInteger(buf: Buffer, o: number, first: number, prefixMax: number, value: number): number {
  if (value < prefixMax) {
    buf[o++] = first | value;
    return o;
  }
  buf[o++] = first | prefixMax;
  let rest = value - prefixMax;
  while (rest >= 0x80) {
    buf[o++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  buf[o++] = rest;
  return o;
}

/** A raw (non-Huffman) string literal (§5.2): short strings by a loop, long ones by Node's writer. */
function writeRawString(buf: Buffer, o: number, s: string): number {
  const n = s.length;
  o = writeInteger(buf, o, 0x00, 0x7f, n);
  if (n < 32) {
    for (let k = 0; k < n; k++) buf[o + k] = s.charCodeAt(k);
  } else {
    buf.write(s, o, n, 'latin1');
  }
  return o + n;
}
