/**
 * HTTP identifiers (family `identifier`): turn a request into the logical name the dtab routes.
 * Importing this module registers every kind. A router's `identifier` is one kind object or a
 * list, tried in order until one identifies the request:
 *
 * ```yaml
 * identifier:
 * - kind: io.prx.header
 *   header: prx-name
 * - kind: io.prx.header.token   # the default when none is configured
 * ```
 */
import { BugError } from '../../../core/errors.js';
import { ConfigError, type KindConfig, kindSlot, lookupKind, oneOrMany, validate, lazySchema } from '../../../config/index.js';
import type { HttpIdentifier, Identification, IdentifierContext, IdentifyRequest } from './types.js';
import './header-token.js';
import './header.js';
import './ingress.js';
import './method-and-host.js';
import './path.js';
import './static.js';
import './meshctl.js';

export * from './types.js';
export { HeaderTokenIdentifier, headerTokenIdentifierSchema, type HeaderTokenIdentifierConfig } from './header-token.js';
export { IngressIdentifier, ingressIdentifierSchema, DEFAULT_INGRESS_CLASS, type IngressIdentifierConfig, type IngressIdentifierOptions, type IngressIdentifierState } from './ingress.js';
export { IngressTable, INGRESS_CLASS_ANNOTATION, servesIngress, hostOnly, type IngressTarget, type IngressTableOptions } from './ingress-rules.js';
export { HeaderIdentifier, headerIdentifierSchema, type HeaderIdentifierConfig } from './header.js';
export { MethodAndHostIdentifier, methodAndHostIdentifierSchema, type MethodAndHostIdentifierConfig } from './method-and-host.js';
export { PathIdentifier, pathIdentifierSchema, type PathIdentifierConfig } from './path.js';
export { MeshctlIdentifier, meshctlIdentifierSchema, type MeshctlIdentifierConfig } from './meshctl.js';
export { StaticIdentifier, staticIdentifierSchema, type StaticIdentifierConfig } from './static.js';

const NO_IDENTIFIERS: Identification = Object.freeze({ kind: 'unidentified', reason: 'no identifiers are configured' });

class ComposedIdentifier implements HttpIdentifier {
  readonly #list: readonly HttpIdentifier[];
  constructor(list: readonly HttpIdentifier[]) {
    this.#list = list;
  }

  identify(req: IdentifyRequest): Identification {
    let result = NO_IDENTIFIERS;
    for (const identifier of this.#list) {
      result = identifier.identify(req);
      if (result.kind !== 'unidentified') return result;
    }
    return result;
  }

  close(): void {
    for (const identifier of this.#list) identifier.close?.();
  }
}

/** Tries each identifier in order, lazily, until one identifies; else the last reason (Linkerd's composition). */
export function composeIdentifiers(list: readonly HttpIdentifier[]): HttpIdentifier {
  return list.length === 1 ? (list[0] as HttpIdentifier) : new ComposedIdentifier([...list]);
}

const DEFAULT_IDENTIFIER = { kind: 'io.prx.header.token' } as const;
const identifierList = lazySchema(() => oneOrMany(kindSlot('identifier')));

/**
 * The identifier of a router's `identifier` config: one kind object, a list (composed), or
 * nothing (`io.prx.header.token` on Host); an empty list is refused. Each object is validated by its kind's schema (defaults
 * filled in; an unknown kind, listing the known ones, or a bad value throws a `ConfigError`).
 */
export function identifierFromConfig(
  cfg: KindConfig | readonly KindConfig[] | undefined,
  ctx: IdentifierContext,
): HttpIdentifier {
  const configs = validate(identifierList, cfg ?? DEFAULT_IDENTIFIER);
  if (configs.length === 0) throw new ConfigError([{ path: [], message: 'expected at least one identifier' }]);
  return composeIdentifiers(
    configs.map((c) => {
      const def = lookupKind('identifier', c.kind);
      if (def === undefined) throw new BugError(`validated identifier kind ${c.kind} is not registered`);
      return def.create(c, ctx as never) as HttpIdentifier;
    }),
  );
}

/** An identification as the admin's identifier port shows it (`{path, url?, authority?}`, `{redirect}` or `{error}`). */
export function identificationJson(id: Identification): Record<string, unknown> {
  switch (id.kind) {
    case 'identified':
      return { path: id.dst.show, ...(id.url === undefined ? {} : { url: id.url }), ...(id.authority === undefined ? {} : { authority: id.authority }) };
    case 'redirect':
      return { redirect: id.location, status: id.status };
    case 'unidentified':
      return { error: id.reason };
  }
}
