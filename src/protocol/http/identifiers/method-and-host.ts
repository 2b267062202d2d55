/**
 * `io.prx.methodAndHost`: names a request by HTTP version, method and Host:
 * HTTP/1.1 `/<dstPrefix>/1.1/<method>/<host>[/<uri path…>]`, HTTP/1.0
 * `/<dstPrefix>/1.0/<method>[/<uri path…>]` (HTTP/1.0 has no Host to rely on).
 *
 * ```yaml
 * identifier:
 *   kind: io.prx.methodAndHost
 *   httpUriInDst: false   # true appends the URL path; discouraged (a name, and a client, per URL)
 * ```
 *
 * The host is lower-cased (dtab prefixes are case-sensitive; host names are not). An HTTP/1.1
 * request without Host is unidentified (`HTTP/1.1 request missing hostname`). With `httpUriInDst`
 * the URL path (without the query) is read as a path, as Linkerd does, so a path outside the
 * naming grammar (`/a b`, a trailing `/`) leaves the request unidentified with the parser's reason.
 */
import { z } from 'zod';
import { kindShape, lazySchema } from '../../../config/index.js';
import { Path, readPath, utf8ToBinary } from '../../../naming/index.js';
import { errorMessage } from '../../../core/errors.js';
import {
  type HttpIdentifier,
  type Identification,
  type IdentifyRequest,
  IdentificationCache,
  defineIdentifier,
  firstHeader,
  pathOf,
  unidentified,
} from './types.js';

export const methodAndHostIdentifierSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.methodAndHost'),
  httpUriInDst: z.boolean().default(false),
}));

export type MethodAndHostIdentifierConfig = z.output<typeof methodAndHostIdentifierSchema>;

const MISSING_HOST = unidentified('HTTP/1.1 request missing hostname');

/** Methods whose names are cached (others, any token a client sends, are named afresh). */
const CACHED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

export class MethodAndHostIdentifier implements HttpIdentifier {
  readonly #prefix: readonly string[];
  readonly #uriInDst: boolean;
  /** HTTP/1.1 names by Host, per standard method (without httpUriInDst: the name is method and host alone). */
  readonly #byMethodHost = new Map<string, IdentificationCache>();

  constructor(dstPrefix: Path, httpUriInDst: boolean) {
    this.#prefix = dstPrefix.elems;
    this.#uriInDst = httpUriInDst;
    if (!httpUriInDst) for (const m of CACHED_METHODS) this.#byMethodHost.set(m, new IdentificationCache());
  }

  identify(req: IdentifyRequest): Identification {
    const cache = req.httpVersion === '1.1' ? this.#byMethodHost.get(req.method) : undefined;
    if (cache === undefined) return this.#identify(req);
    const host = firstHeader(req.headers, 'host');
    if (host === undefined || host === '') return MISSING_HOST;
    return cache.get(host) ?? cache.remember(host, this.#identify(req));
  }

  #identify(req: IdentifyRequest): Identification {
    const elems = this.#prefix.slice();
    if (req.httpVersion === '1.1') {
      const host = firstHeader(req.headers, 'host');
      if (host === undefined || host === '') return MISSING_HOST;
      elems.push('1.1', utf8ToBinary(req.method), utf8ToBinary(host.toLowerCase()));
    } else if (req.httpVersion === '1.0') {
      elems.push('1.0', utf8ToBinary(req.method));
    } else {
      return unidentified(`Unknown HTTP version HTTP/${req.httpVersion}`);
    }
    if (this.#uriInDst) {
      try {
        elems.push(...readPath(pathOf(req.url)).elems);
      } catch (e) {
        return unidentified(errorMessage(e));
      }
    }
    return { kind: 'identified', dst: Path.fromElems(elems) };
  }
}

defineIdentifier({
  kind: 'io.prx.methodAndHost',
  schema: methodAndHostIdentifierSchema,
  create: (cfg, ctx) => new MethodAndHostIdentifier(ctx.dstPrefix, cfg.httpUriInDst),
});
