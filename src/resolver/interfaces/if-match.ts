import { InvalidIfMatchError } from '../errors.js';

/**
 * The `If-Match` precondition of a dtab write (RFC 9110 §13.1.1): `*` (any current version) or
 * the versions a list of entity-tags names. Only strong tags can match (If-Match compares
 * strongly), so weak ones (`W/"…"`) are kept out; the list then matches nothing.
 */
export type IfMatch = { readonly kind: 'any' } | { readonly kind: 'versions'; readonly versions: readonly Uint8Array[] };

/** More entity-tags than this in one `If-Match` is refused (each is one compare-and-set). */
export const MAX_IF_MATCH_TAGS = 16;

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A dtab version as its ETag: the base64 of the version bytes (namerd's form, unquoted). */
export function versionTag(version: Uint8Array): string {
  return Buffer.from(version).toString('base64');
}

/**
 * The version whose ETag is exactly `tag`, or undefined when no version has that ETag. The
 * decoding is strict: text that merely decodes to a version's bytes (`<etag>x`, a missing `=`,
 * stray characters, which a lenient base64 decoder skips) is not that version's tag.
 */
export function versionOfTag(tag: string): Uint8Array | undefined {
  if (!STRICT_BASE64.test(tag)) return undefined;
  const bytes = Buffer.from(tag, 'base64');
  return bytes.toString('base64') === tag ? new Uint8Array(bytes) : undefined;
}

/**
 * Parses an `If-Match` value: `*`, a comma-separated list of entity-tags, each `"<tag>"` or
 * `W/"<tag>"`, or — as namerd's clients send the unquoted ETag back — one bare `<tag>` as the
 * whole value. A bare tag is not RFC syntax, so it is not read as part of a list: `<etag>, other`
 * is refused rather than taken to name `<etag>`. Anything else (an unterminated quote, a `*`
 * inside a list, characters an entity-tag cannot hold, an empty list) is an InvalidIfMatchError
 * (400).
 */
export function parseIfMatch(value: string): IfMatch {
  const s = value.trim();
  if (s === '*') return { kind: 'any' };
  const versions: Uint8Array[] = [];
  let tags = 0;
  let bare = false;
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c === ',' || c === ' ' || c === '\t') {
      i++;
      continue;
    }
    let weak = false;
    let tag: string;
    if (s.startsWith('W/"', i)) {
      weak = true;
      i += 2;
    }
    if (s[i] === '"') {
      const end = s.indexOf('"', i + 1);
      if (end < 0) throw invalid(value, 'an entity-tag has no closing quote');
      tag = s.slice(i + 1, end);
      i = end + 1;
    } else {
      let end = i;
      while (end < s.length && s[end] !== ',' && s[end] !== ' ' && s[end] !== '\t') end++;
      tag = s.slice(i, end);
      if (tag === '*') throw invalid(value, '"*" must be the only value');
      if (tag.includes('"')) throw invalid(value, `${JSON.stringify(tag)} is not an entity-tag`);
      bare = true;
      i = end;
    }
    if (!ETAG_CHARS.test(tag)) throw invalid(value, `${JSON.stringify(tag)} holds characters an entity-tag cannot`);
    if (++tags > MAX_IF_MATCH_TAGS) throw invalid(value, `more than ${MAX_IF_MATCH_TAGS} entity-tags`);
    // After a tag: optional whitespace, then a comma or the end.
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (i < s.length && s[i] !== ',') throw invalid(value, 'entity-tags must be separated by commas');
    const version = weak ? undefined : versionOfTag(tag);
    if (version !== undefined) versions.push(version);
  }
  if (tags === 0) throw invalid(value, 'no entity-tag');
  if (bare && tags > 1) throw invalid(value, 'an unquoted version must be the whole value; quote each entity-tag of a list');
  return { kind: 'versions', versions };
}

// etagc (RFC 9110 §8.8.3): any visible character but DQUOTE, and obs-text.
const ETAG_CHARS = /^[\x21\x23-\x7e\x80-\xff]*$/;

function invalid(value: string, reason: string): InvalidIfMatchError {
  const shown = value.length > 100 ? `${value.slice(0, 100)}…` : value;
  return new InvalidIfMatchError(`Invalid If-Match ${JSON.stringify(shown)}: ${reason}`);
}
