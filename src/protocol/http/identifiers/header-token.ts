/**
 * `io.prx.header.token`: names a request by one header's value taken as a single segment,
 * `/<dstPrefix>/<value>` (the value verbatim: `a/b` is one segment). The default identifier, on
 * `Host`: Host `users` names the request `/svc/users`.
 *
 * ```yaml
 * identifier:
 *   kind: io.prx.header.token
 *   header: Host      # case-insensitive; the first value when the header repeats
 * ```
 *
 * An absent or empty header leaves the request unidentified: `Host header is absent`.
 */
import { z } from 'zod';
import { kindShape, nonEmptyString, lazySchema } from '../../../config/index.js';
import { Path, utf8ToBinary } from '../../../naming/index.js';
import {
  type HttpIdentifier,
  type Identification,
  type IdentifyRequest,
  IdentificationCache,
  defineIdentifier,
  firstHeader,
  unidentified,
} from './types.js';

export const headerTokenIdentifierSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.header.token'),
  header: nonEmptyString.default('Host'),
}));

export type HeaderTokenIdentifierConfig = z.output<typeof headerTokenIdentifierSchema>;

export class HeaderTokenIdentifier implements HttpIdentifier {
  readonly #prefix: readonly string[];
  readonly #header: string;
  readonly #absent: Identification;
  readonly #cache = new IdentificationCache();

  constructor(dstPrefix: Path, header: string) {
    this.#prefix = dstPrefix.elems;
    this.#header = header.toLowerCase();
    // The reason names the header as configured (`Host header is absent`), as Linkerd does.
    this.#absent = unidentified(`${header} header is absent`);
  }

  identify(req: IdentifyRequest): Identification {
    const value = firstHeader(req.headers, this.#header);
    if (value === undefined || value === '') return this.#absent;
    return this.#cache.get(value) ?? this.#cache.remember(value, { kind: 'identified', dst: Path.fromElems([...this.#prefix, utf8ToBinary(value)]) });
  }
}

defineIdentifier({
  kind: 'io.prx.header.token',
  schema: headerTokenIdentifierSchema,
  create: (cfg, ctx) => new HeaderTokenIdentifier(ctx.dstPrefix, cfg.header),
});
