// The resolver's HTTP controller JSON (Linkerd's namerd `/api/1/bind` and `/api/1/addr` shapes),
// read back into name trees and address sets, and the splitter for its watch streams.
import {
  type Addr, AddrNeg, AddrPending, type Address, type BoundName, type NameTree, Empty, Fail, Neg, Path,
  address, addrBound, addrFailed, leaf, readPath, weighted,
} from '../naming/index.js';
import { ResolverHttpError } from './errors.js';

/** Finagle's address-metadata key for an endpoint's load-balancing weight. */
export const ENDPOINT_WEIGHT_META_KEY = 'endpoint_addr_weight';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function malformed(what: string, value: unknown): ResolverHttpError {
  return new ResolverHttpError(`malformed ${what} from the resolver: ${JSON.stringify(value)}`);
}

/** Makes the bound name of a leaf: its id, residual and the `addr` the controller sent with it. */
export type BoundNameFactory = (id: Path | string, residual: Path, addr: unknown) => BoundName;

/** A bind-stream document as a tree of bound names; throws `ResolverHttpError` on a bad shape. */
export function parseBoundTree(json: unknown, bound: BoundNameFactory): NameTree<BoundName> {
  if (!isObject(json)) throw malformed('name tree', json);
  switch (json['type']) {
    case 'neg':
      return Neg;
    case 'fail':
      return Fail;
    case 'empty':
      return Empty;
    case 'leaf': {
      const b = json['bound'];
      if (!isObject(b) || typeof b['id'] !== 'string') throw malformed('leaf', json);
      const id = b['id'].startsWith('/') ? readPathOr(b['id']) : b['id'];
      const residual = typeof b['path'] === 'string' ? readPathOr(b['path']) : Path.empty;
      if (!(residual instanceof Path)) throw malformed('leaf', json);
      return leaf(bound(id, residual, b['addr']));
    }
    case 'alt': {
      const alt = json['alt'];
      if (!Array.isArray(alt)) throw malformed('alt', json);
      return { type: 'alt', trees: alt.map((t) => parseBoundTree(t, bound)) };
    }
    case 'union': {
      const union = json['union'];
      if (!Array.isArray(union)) throw malformed('union', json);
      return {
        type: 'union',
        trees: union.map((w: unknown) => {
          if (!isObject(w) || typeof w['weight'] !== 'number') throw malformed('union branch', w);
          return weighted(w['weight'], parseBoundTree(w['tree'], bound));
        }),
      };
    }
    // Delegation-shaped nodes (the controller shares Linkerd's delegate-tree codec) reduce to their result.
    case 'delegate':
      return parseBoundTree(json['delegate'], bound);
    case 'transformation':
      return parseBoundTree(json['tree'], bound);
    case 'exception':
      throw new ResolverHttpError(typeof json['message'] === 'string' ? json['message'] : 'the resolver could not bind the name');
    default:
      throw malformed('name tree', json);
  }
}

/** A path, or the text itself when it does not parse (an opaque id). */
function readPathOr(text: string): Path | string {
  try {
    return readPath(text);
  } catch {
    return text;
  }
}

/** An addr-stream document as an address set; throws `ResolverHttpError` on a bad shape. */
export function parseAddr(json: unknown): Addr {
  if (!isObject(json)) throw malformed('address set', json);
  switch (json['type']) {
    case 'neg':
      return AddrNeg;
    case 'pending':
      return AddrPending;
    case 'failed':
      return addrFailed(new ResolverHttpError(typeof json['cause'] === 'string' ? json['cause'] : 'address resolution failed'));
    case 'bound': {
      const addrs = json['addrs'];
      if (!Array.isArray(addrs)) throw malformed('address set', json);
      const meta = isObject(json['meta']) ? json['meta'] : {};
      return addrBound(addrs.map(parseAddress), meta);
    }
    default:
      throw malformed('address set', json);
  }
}

function parseAddress(json: unknown): Address {
  if (!isObject(json) || typeof json['ip'] !== 'string' || !Number.isInteger(json['port'])) throw malformed('address', json);
  const port = json['port'] as number;
  if (port < 0 || port > 65535) throw malformed('address', json);
  const meta = isObject(json['meta']) ? { ...json['meta'] } : {};
  // Finagle carries an endpoint's weight in its metadata; prx has a field for it.
  const w = meta[ENDPOINT_WEIGHT_META_KEY];
  let weight = 1;
  if (typeof w === 'number' && Number.isFinite(w) && w >= 0) {
    weight = w;
    delete meta[ENDPOINT_WEIGHT_META_KEY];
  }
  return address(json['ip'], port, weight, meta);
}

/** One item of a watch stream: a JSON document, or a line of error text (the controller's failure report). */
export type StreamItem = { readonly json: unknown; readonly text: string } | { readonly error: string };

/**
 * Splits a watch stream into documents. The controller writes each value as one JSON document
 * followed by a newline, and on failure a line of plain text before closing; documents are found
 * by bracket matching, so one spread over several chunks (or lines) is still one document.
 */
export class JsonStreamSplitter {
  #buf = '';
  // Scan state inside an unfinished document, so each chunk is scanned once.
  #pos = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;

  /** The items completed by `chunk`. */
  push(chunk: string): StreamItem[] {
    this.#buf += chunk;
    const out: StreamItem[] = [];
    for (;;) {
      const item = this.#next(false);
      if (item === undefined) break;
      out.push(item);
    }
    return out;
  }

  /** What is left when the stream ends: an unfinished document or error text. */
  end(): StreamItem[] {
    const item = this.#next(true);
    this.#buf = '';
    this.#pos = 0;
    this.#depth = 0;
    return item === undefined ? [] : [item];
  }

  #next(atEnd: boolean): StreamItem | undefined {
    if (this.#depth === 0) {
      const start = firstNonSpace(this.#buf);
      if (start < 0) {
        this.#buf = '';
        return undefined;
      }
      if (start > 0) this.#buf = this.#buf.slice(start);
      const c = this.#buf[0];
      if (c !== '{' && c !== '[') {
        const nl = this.#buf.indexOf('\n');
        if (nl < 0 && !atEnd) return undefined;
        const line = nl < 0 ? this.#buf : this.#buf.slice(0, nl);
        this.#buf = nl < 0 ? '' : this.#buf.slice(nl + 1);
        return { error: line.trim() };
      }
      this.#pos = 0;
      this.#inString = false;
      this.#escaped = false;
    }
    const buf = this.#buf;
    for (let i = this.#pos; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === 0x5c) this.#escaped = true;
        else if (c === 0x22) this.#inString = false;
      } else if (c === 0x22) this.#inString = true;
      else if (c === 0x7b || c === 0x5b) this.#depth++;
      else if (c === 0x7d || c === 0x5d) {
        this.#depth--;
        if (this.#depth === 0) {
          const text = buf.slice(0, i + 1);
          this.#buf = buf.slice(i + 1);
          this.#pos = 0;
          try {
            return { json: JSON.parse(text) as unknown, text };
          } catch {
            return { error: `malformed JSON from the resolver: ${text}` };
          }
        }
      }
    }
    this.#pos = buf.length;
    if (!atEnd) return undefined;
    this.#depth = 0;
    return { error: `truncated JSON from the resolver: ${buf.trim()}` };
  }
}

function firstNonSpace(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
  }
  return -1;
}
