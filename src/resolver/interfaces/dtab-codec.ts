import { errorMessage } from '../../core/errors.js';
import { Dentry, Dtab, checkDentryCount, readDtab, readNameTree, readPrefix, showPathTree } from '../../naming/index.js';
import { InvalidDtabBodyError } from '../errors.js';

/**
 * The media types the HTTP controller reads and writes dtabs in: JSON (an array of
 * `{"prefix","dst"}` objects) and the dtab text form (`application/dtab`, or `text/plain`).
 */
export interface DtabCodec {
  /** The dtab as a body, without the trailing newline the controller adds. */
  write(dtab: Dtab): string;
  /** Reads a request body; throws {@link InvalidDtabBodyError} with the reason. */
  read(body: string): Dtab;
}

export const JSON_MEDIA_TYPE = 'application/json';
export const DTAB_MEDIA_TYPE = 'application/dtab';
export const TEXT_MEDIA_TYPE = 'text/plain';

const EXPECTED_DENTRY = 'expected an object {"prefix": "<prefix>", "dst": "<name tree>"}';

export const jsonDtabCodec: DtabCodec = {
  write: (dtab) => JSON.stringify(dtab.dentries.map((d) => ({ prefix: d.prefix.show, dst: showPathTree(d.dst) }))),
  read: (body) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch (e) {
      throw new InvalidDtabBodyError(`Invalid JSON: ${errorMessage(e)}`, { cause: e });
    }
    if (!Array.isArray(parsed)) throw new InvalidDtabBodyError('Invalid JSON dtab: expected an array of dentries');
    // Linkerd's exact message for `[null]` and friends: the body is quoted back.
    if (parsed.some((entry) => entry === null)) throw new InvalidDtabBodyError(`The dtab contains invalid dentries: ${body}`);
    checkDentryCount(parsed.length);
    return new Dtab(parsed.map((entry: unknown, i) => readJsonDentry(entry, i)));
  },
};

function readJsonDentry(entry: unknown, index: number): Dentry {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new InvalidDtabBodyError(`Invalid JSON dtab: dentry ${index}: ${EXPECTED_DENTRY}`);
  }
  const { prefix, dst } = entry as { prefix?: unknown; dst?: unknown };
  if (typeof prefix !== 'string' || typeof dst !== 'string') {
    throw new InvalidDtabBodyError(`Invalid JSON dtab: dentry ${index}: ${EXPECTED_DENTRY}`);
  }
  try {
    return new Dentry(readPrefix(prefix), readNameTree(dst));
  } catch (e) {
    throw new InvalidDtabBodyError(errorMessage(e), { cause: e });
  }
}

export const textDtabCodec: DtabCodec = {
  write: (dtab) => dtab.show,
  read: (body) => {
    try {
      return readDtab(body, { located: true });
    } catch (e) {
      throw new InvalidDtabBodyError(errorMessage(e), { cause: e });
    }
  },
};

/** The media type of a header value: `Application/JSON; charset=utf-8` → `application/json`. */
export function mediaTypeOf(value: string): string {
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
}

/** The codec of a request's `Content-Type` (parameters such as `charset` are allowed). */
export function codecForContentType(contentType: string | undefined): DtabCodec | undefined {
  if (contentType === undefined) return undefined;
  switch (mediaTypeOf(contentType)) {
    case JSON_MEDIA_TYPE:
      return jsonDtabCodec;
    case DTAB_MEDIA_TYPE:
    case TEXT_MEDIA_TYPE:
      return textDtabCodec;
    default:
      return undefined;
  }
}

/** Every media type a dtab can be sent in, for error messages. */
export const DTAB_MEDIA_TYPES: readonly string[] = [JSON_MEDIA_TYPE, DTAB_MEDIA_TYPE, TEXT_MEDIA_TYPE];

/**
 * The response type for an `Accept` header: the first listed type the controller can write (in
 * the client's order, q-values ignored, as Linkerd did); JSON when none is.
 */
export function negotiateDtabType(accept: string | undefined): { readonly contentType: string; readonly codec: DtabCodec } {
  if (accept !== undefined) {
    for (const part of accept.split(',')) {
      const type = mediaTypeOf(part);
      const codec = codecForContentType(type);
      if (codec) return { contentType: type, codec };
    }
  }
  return { contentType: JSON_MEDIA_TYPE, codec: jsonDtabCodec };
}
