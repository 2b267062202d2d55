/**
 * `io.prx.static`: names every request the same, `/<dstPrefix>/<path…>`.
 *
 * ```yaml
 * identifier:
 *   kind: io.prx.static
 *   path: /users     # required; every request is /svc/users
 * ```
 */
import { z } from 'zod';
import { kindShape, pathText, lazySchema } from '../../../config/index.js';
import { type Path, readPath } from '../../../naming/index.js';
import { type HttpIdentifier, type Identification, type IdentifyRequest, defineIdentifier } from './types.js';

export const staticIdentifierSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.static'),
  path: pathText,
}));

export type StaticIdentifierConfig = z.output<typeof staticIdentifierSchema>;

export class StaticIdentifier implements HttpIdentifier {
  // One frozen result serves every request.
  readonly #identified: Identification;

  constructor(dstPrefix: Path, path: Path) {
    this.#identified = Object.freeze({ kind: 'identified', dst: dstPrefix.concat(path) });
  }

  identify(_req: IdentifyRequest): Identification {
    return this.#identified;
  }
}

defineIdentifier({
  kind: 'io.prx.static',
  schema: staticIdentifierSchema,
  create: (cfg, ctx) => new StaticIdentifier(ctx.dstPrefix, readPath(cfg.path)),
});
