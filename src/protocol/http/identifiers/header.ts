/**
 * `io.prx.header`: names a request by a header holding a path, `/<dstPrefix>/<path…>`: with
 * `prx-name: /users/v2` the name is `/svc/users/v2`.
 *
 * ```yaml
 * identifier:
 *   kind: io.prx.header
 *   header: prx-name  # case-insensitive; the first value when the header repeats
 * ```
 *
 * An absent or empty header leaves the request unidentified (`prx-name header is absent`), and so
 * does a value that is not a path, with the parser's reason
 * (`'/' expected but 'u' found at '[u]sers'`).
 */
import { z } from 'zod';
import { kindShape, nonEmptyString, lazySchema } from '../../../config/index.js';
import { type Path, readPath } from '../../../naming/index.js';
import { errorMessage } from '../../../core/errors.js';
import {
  type HttpIdentifier,
  type Identification,
  type IdentifyRequest,
  defineIdentifier,
  firstHeader,
  unidentified,
} from './types.js';

export const headerIdentifierSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.header'),
  header: nonEmptyString.default('prx-name'),
}));

export type HeaderIdentifierConfig = z.output<typeof headerIdentifierSchema>;

export class HeaderIdentifier implements HttpIdentifier {
  readonly #prefix: Path;
  readonly #header: string;
  readonly #absent: Identification;

  constructor(dstPrefix: Path, header: string) {
    this.#prefix = dstPrefix;
    this.#header = header.toLowerCase();
    this.#absent = unidentified(`${header} header is absent`);
  }

  identify(req: IdentifyRequest): Identification {
    const value = firstHeader(req.headers, this.#header);
    if (value === undefined || value === '') return this.#absent;
    let path: Path;
    try {
      path = readPath(value);
    } catch (e) {
      return unidentified(errorMessage(e));
    }
    return { kind: 'identified', dst: this.#prefix.concat(path) };
  }
}

defineIdentifier({
  kind: 'io.prx.header',
  schema: headerIdentifierSchema,
  create: (cfg, ctx) => new HeaderIdentifier(ctx.dstPrefix, cfg.header),
});
