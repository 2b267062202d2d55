import { errorMessage } from '../../core/errors.js';
import { type Dtab, readDtab } from '../../naming/index.js';
import { InvalidDtabNamespaceError, StoredDtabInvalidError } from './errors.js';
import type { VersionedDtab } from './types.js';

// Versions are opaque bytes to callers (the HTTP controller base64s them into ETags); each backend
// picks the encoding Linkerd 1 used for it so ETags stay familiar: 8-byte big-endian counters or
// revisions, a 4-byte big-endian znode version, or a decimal / resourceVersion string.

/** An unsigned 64-bit big-endian version (in-memory counter, etcd mod_revision). */
export function u64Version(n: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, n));
  return b;
}

/** The number in an 8-byte version, or undefined when it has another length. */
export function readU64Version(v: Uint8Array): bigint | undefined {
  if (v.length !== 8) return undefined;
  return new DataView(v.buffer, v.byteOffset, 8).getBigUint64(0);
}

/** A signed 32-bit big-endian version (a znode's `stat.version`). */
export function i32Version(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, n);
  return b;
}

/** The number in a 4-byte version, or undefined when it has another length. */
export function readI32Version(v: Uint8Array): number | undefined {
  if (v.length !== 4) return undefined;
  return new DataView(v.buffer, v.byteOffset, 4).getInt32(0);
}

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true });

/** A textual version (a Consul index in decimal, an orchestrator resourceVersion) as UTF-8 bytes. */
export function textVersion(text: string): Uint8Array {
  return encoder.encode(text);
}

/** The text of a textual version, or undefined when the bytes are not UTF-8. */
export function readTextVersion(v: Uint8Array): string | undefined {
  try {
    return strictDecoder.decode(v);
  } catch {
    return undefined;
  }
}

const DECIMAL = /^(0|[1-9][0-9]{0,19})$/;

/** The number in a decimal-text version (Consul's ModifyIndex), or undefined. */
export function readDecimalVersion(v: Uint8Array): bigint | undefined {
  const text = readTextVersion(v);
  return text !== undefined && DECIMAL.test(text) ? BigInt(text) : undefined;
}

export function sameVersion(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * What a store keeps per namespace: a dtab, or the error of a stored value that is not one (written
 * by another tool). An invalid value still has a version, so it can be overwritten with CAS.
 */
export type StoredEntry =
  | { readonly kind: 'dtab'; readonly value: VersionedDtab }
  | { readonly kind: 'invalid'; readonly error: Error; readonly version: Uint8Array };

/** Every backend but the orchestrator stores the dtab's compact text, `/a=>/b;/c=>/d`, as UTF-8. */
export function dtabText(dtab: Dtab): string {
  return dtab.show;
}

/** Decodes a stored dtab text (UTF-8 bytes or a string) into an entry. */
export function decodeStored(ns: string, data: Uint8Array | string, version: Uint8Array): StoredEntry {
  let text: string;
  try {
    text = typeof data === 'string' ? data : strictDecoder.decode(data);
  } catch {
    return { kind: 'invalid', error: new StoredDtabInvalidError(ns, 'not UTF-8'), version };
  }
  try {
    return { kind: 'dtab', value: { dtab: readDtab(text, { located: true }), version } };
  } catch (e) {
    return { kind: 'invalid', error: new StoredDtabInvalidError(ns, errorMessage(e)), version };
  }
}

/** The version of an entry, valid or not. */
export function entryVersion(e: StoredEntry): Uint8Array {
  return e.kind === 'dtab' ? e.value.version : e.version;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Rejects namespaces no backend can hold as one key or node: empty, `.`/`..`, containing `/` or
 * control characters. Backends add their own rule (`extra`) on top.
 */
/** A backend's own namespace rule, on top of the common one. */
export interface NamespaceRule {
  readonly pattern: RegExp;
  readonly rule: string;
}

export function checkNamespace(ns: string, extra?: NamespaceRule): void {
  if (ns === '') throw new InvalidDtabNamespaceError(ns, 'must not be empty');
  if (ns === '.' || ns === '..') throw new InvalidDtabNamespaceError(ns, 'must not be "." or ".."');
  if (ns.includes('/')) throw new InvalidDtabNamespaceError(ns, 'must not contain "/"');
  if (CONTROL.test(ns)) throw new InvalidDtabNamespaceError(ns, 'must not contain control characters');
  if (extra && !extra.pattern.test(ns)) throw new InvalidDtabNamespaceError(ns, extra.rule);
}

/** True when `ns` passes {@link checkNamespace}; watch loops skip foreign keys that do not. */
export function isValidNamespace(ns: string, extra?: NamespaceRule): boolean {
  try {
    checkNamespace(ns, extra);
    return true;
  } catch {
    return false;
  }
}
