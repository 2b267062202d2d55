/**
 * `io.prx.path`: names a request by the first `segments` segments of its URL path,
 * `/<dstPrefix>/<segment>…`.
 *
 * ```yaml
 * identifier:
 *   kind: io.prx.path
 *   segments: 2     # /mysvc/subsvc/some/path → /svc/mysvc/subsvc
 *   consume: true   # …and forward /some/path
 * ```
 *
 * Like Linkerd, segments are taken verbatim (not percent-decoded: `%2F` stays `%2F`), the query is
 * ignored, and an empty segment among those taken (`//`) leaves the request unidentified. With
 * `consume`, the segments are cut from the forwarded request-target, keeping the query:
 * `/mysvc/subsvc?x=1` is forwarded as `/?x=1`.
 */
import { z } from 'zod';
import { kindShape, positiveInt, lazySchema } from '../../../config/index.js';
import { Path, utf8ToBinary } from '../../../naming/index.js';
import { type HttpIdentifier, type Identification, type IdentifyRequest, defineIdentifier, unidentified } from './types.js';

export const pathIdentifierSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.path'),
  segments: positiveInt.default(1),
  consume: z.boolean().default(false),
}));

export type PathIdentifierConfig = z.output<typeof pathIdentifierSchema>;

const TOO_FEW_SEGMENTS = unidentified('not enough segments in path');
const EMPTY_SEGMENT = unidentified('empty segment in path');

export class PathIdentifier implements HttpIdentifier {
  readonly #prefix: readonly string[];
  readonly #segments: number;
  readonly #consume: boolean;

  constructor(dstPrefix: Path, segments: number, consume: boolean) {
    if (!Number.isInteger(segments) || segments < 1) throw new RangeError(`segments must be a positive integer, got ${segments}`);
    this.#prefix = dstPrefix.elems;
    this.#segments = segments;
    this.#consume = consume;
  }

  identify(req: IdentifyRequest): Identification {
    const url = req.url;
    const q = url.indexOf('?');
    const end = q < 0 ? url.length : q;
    // Segments are the pieces after the first '/', split as Java's String.split does (Linkerd):
    // trailing empty pieces do not count, so `/a/` has one segment and `/a//b` three.
    let slash = url.indexOf('/');
    if (slash < 0 || slash >= end) return TOO_FEW_SEGMENTS;
    const elems = this.#prefix.slice();
    let empties = 0;
    let lastEmpty = false;
    for (let taken = 0; taken < this.#segments; taken++) {
      if (slash >= end) return TOO_FEW_SEGMENTS;
      let next = url.indexOf('/', slash + 1);
      if (next < 0 || next > end) next = end;
      lastEmpty = next === slash + 1;
      if (lastEmpty) empties++;
      else elems.push(utf8ToBinary(url.slice(slash + 1, next)));
      slash = next;
    }
    // `slash` now ends the taken pieces: the consumed part of the path.
    if (empties > 0) {
      // A trailing empty piece counts only when a non-empty one follows it.
      return lastEmpty && !hasNonSlash(url, slash, end) ? TOO_FEW_SEGMENTS : EMPTY_SEGMENT;
    }
    const dst = Path.fromElems(elems);
    if (!this.#consume) return { kind: 'identified', dst };
    const rest = url.slice(slash, end);
    return { kind: 'identified', dst, url: (rest === '' ? '/' : rest) + url.slice(end) };
  }
}

function hasNonSlash(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (text.charCodeAt(i) !== 0x2f) return true;
  return false;
}

defineIdentifier({
  kind: 'io.prx.path',
  schema: pathIdentifierSchema,
  create: (cfg, ctx) => new PathIdentifier(ctx.dstPrefix, cfg.segments, cfg.consume),
});
