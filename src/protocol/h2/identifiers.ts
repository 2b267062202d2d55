/**
 * h2 identifiers (family `h2Identifier`, apart from HTTP/1.1's `identifier` family: the same kind
 * names mean different defaults here). A router's `identifier` is one kind object or a list, tried
 * in order until one identifies the request.
 *
 * ```yaml
 * identifier:
 * - kind: io.prx.header.path     # gRPC: /helloworld.Greeter/SayHello → /svc/helloworld.Greeter
 *   segments: 1
 * - kind: io.prx.header.token    # the default: :authority → /svc/<authority>
 * ```
 */
import { z } from 'zod';
import { BugError } from '../../core/errors.js';
import { ConfigError, type KindConfig, kindShape, kindSlot, lookupKind, nonEmptyString, oneOrMany, positiveInt, registerKind, validate, lazySchema } from '../../config/index.js';
import { Path, utf8ToBinary } from '../../naming/index.js';
import {
  composeIdentifiers,
  firstHeader,
  HeaderTokenIdentifier,
  IdentificationCache,
  IngressIdentifier,
  ingressIdentifierSchema,
  MeshctlIdentifier,
  meshctlIdentifierSchema,
  PathIdentifier,
  unidentified,
  type HttpIdentifier,
  type Identification,
  type IdentifierContext,
  type IdentifyRequest,
} from '../http/identifiers/index.js';

export type { HttpIdentifier as H2Identifier, Identification, IdentifyRequest } from '../http/identifiers/index.js';

function defineH2Identifier<Cfg>(def: { kind: string; schema: z.ZodType<Cfg>; create: (cfg: Cfg, ctx: IdentifierContext) => HttpIdentifier }): void {
  registerKind<Cfg, IdentifierContext, HttpIdentifier>({ family: 'h2Identifier', ...def });
}

// `io.prx.header.token`: HTTP/1.1's identifier on another header, `:authority` by default.
defineH2Identifier({
  kind: 'io.prx.header.token',
  schema: lazySchema(() => z.strictObject({ ...kindShape('io.prx.header.token'), header: nonEmptyString.default(':authority') })),
  create: (cfg, ctx) => new HeaderTokenIdentifier(ctx.dstPrefix, cfg.header),
});

/**
 * `io.prx.header.path`: the first `segments` segments of a path-valued header (`:path` by default;
 * every segment when `segments` is absent). The query is ignored and segments are taken verbatim.
 */
class H2HeaderPathIdentifier implements HttpIdentifier {
  readonly #header: string;
  readonly #segments: PathIdentifier | undefined;
  readonly #prefix: readonly string[];
  readonly #absent: Identification;
  readonly #cache = new IdentificationCache();
  constructor(dstPrefix: Path, header: string, segments: number | undefined) {
    this.#header = header.toLowerCase();
    this.#prefix = dstPrefix.elems;
    this.#segments = segments === undefined ? undefined : new PathIdentifier(dstPrefix, segments, false);
    this.#absent = unidentified(`${header} header is absent`);
  }

  identify(req: IdentifyRequest): Identification {
    const value = firstHeader(req.headers, this.#header);
    if (value === undefined || value === '' || value[0] !== '/') return this.#absent;
    const cached = this.#cache.get(value);
    if (cached !== undefined) return cached;
    if (this.#segments !== undefined) return this.#cache.remember(value, this.#segments.identify({ method: req.method, url: value, httpVersion: req.httpVersion, headers: req.headers }));
    const q = value.indexOf('?');
    const elems = (q < 0 ? value : value.slice(0, q)).split('/').filter((s) => s !== '');
    return this.#cache.remember(value, { kind: 'identified', dst: Path.fromElems([...this.#prefix, ...elems.map(utf8ToBinary)]) });
  }
}

defineH2Identifier({
  kind: 'io.prx.header.path',
  schema: lazySchema(() => z.strictObject({ ...kindShape('io.prx.header.path'), header: nonEmptyString.default(':path'), segments: positiveInt.optional() })),
  create: (cfg, ctx) => new H2HeaderPathIdentifier(ctx.dstPrefix, cfg.header, cfg.segments),
});

// `io.prx.ingress`: HTTP/1.1's ingress rules, matched on `:authority` (`host` when absent).
defineH2Identifier({
  kind: 'io.prx.ingress',
  schema: ingressIdentifierSchema,
  create: (cfg, ctx) => new IngressIdentifier(cfg, ctx.dstPrefix, { log: ctx.log, hostHeaders: [':authority', 'host'] }),
});

// `io.prx.orch.meshctl`: the http kind on `:authority` (its Host fallback) and `:scheme`.
defineH2Identifier({
  kind: 'io.prx.orch.meshctl',
  schema: meshctlIdentifierSchema,
  create: (cfg, ctx) => new MeshctlIdentifier(ctx.dstPrefix, cfg, true),
});

const identifierList = lazySchema(() => oneOrMany(kindSlot('h2Identifier')));

/** The identifier of an h2 router's `identifier` config (default `io.prx.header.token` on `:authority`). */
export function h2IdentifierFromConfig(cfg: KindConfig | readonly KindConfig[] | undefined, ctx: IdentifierContext): HttpIdentifier {
  const configs = validate(identifierList, cfg ?? { kind: 'io.prx.header.token' });
  if (configs.length === 0) throw new ConfigError([{ path: [], message: 'expected at least one identifier' }]);
  return composeIdentifiers(
    configs.map((c) => {
      const def = lookupKind('h2Identifier', c.kind);
      if (def === undefined) throw new BugError(`validated h2 identifier kind ${c.kind} is not registered`);
      return def.create(c, ctx as never) as HttpIdentifier;
    }),
  );
}
