import type { z } from 'zod';
import { type KindDef, registerKind } from '../../../config/index.js';
import type { Logger } from '../../../core/log.js';
import type { Path } from '../../../naming/index.js';

/** Request headers by lower-case name (node's IncomingHttpHeaders shape). */
export type HeaderMap = Record<string, string | string[] | undefined>;

/** What an identifier may look at: the request head. */
export interface IdentifyRequest {
  readonly method: string;
  /** The request-target as received (origin form, `/path?query`). */
  readonly url: string;
  /** `1.0`, `1.1`, … (node's `httpVersion`). */
  readonly httpVersion: string;
  readonly headers: HeaderMap;
}

export type Identification =
  | {
      readonly kind: 'identified';
      readonly dst: Path;
      /** rewritten request-target to forward (io.prx.path consume, a mesh-control rewrite) */
      readonly url?: string;
      /** rewritten Host (`:authority` on h2) to forward (a mesh-control rewrite) */
      readonly authority?: string;
      /** What the mesh-control kinds report of the destination (set by io.prx.orch.meshctl). */
      readonly meshTarget?: MeshTarget;
    }
  | { readonly kind: 'unidentified'; readonly reason: string }
  /** The request is answered with a redirect instead of being routed (a mesh-control redirect rule). */
  | { readonly kind: 'redirect'; readonly status: number; readonly location: string };

/** The destination service and its labels, as a mesh-control identifier saw them. */
export interface MeshTarget {
  /** e.g. `reviews.default.svc.cluster.local` */
  readonly service: string;
  /** e.g. `{version: 'v1'}`; empty when the destination has no label selector */
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * Turns a request into a logical name (`dst`), or says why it cannot. Synchronous: an identifier
 * that depends on remote state (io.prx.orch.meshctl, io.prx.ingress) answers from its last
 * fetched copy.
 */
export interface HttpIdentifier {
  identify(req: IdentifyRequest): Identification;
  /** Stops background work (polling, watches); called when the router closes. */
  close?(): void;
}

/** What building an identifier needs from its router. */
export interface IdentifierContext {
  /** The router's `dstPrefix` (`/svc` by default); names start with it. */
  readonly dstPrefix: Path;
  readonly routerLabel: string;
  /** The router's log, for identifiers that watch something (`io.prx.ingress`). */
  readonly log?: Logger;
}

/** Registers an identifier kind (its schema, with defaults, and its factory) in family `identifier`. */
export function defineIdentifier<Cfg>(def: {
  readonly kind: string;
  readonly schema: z.ZodType<Cfg>;
  readonly create: (cfg: Cfg, ctx: IdentifierContext) => HttpIdentifier;
}): KindDef<Cfg, IdentifierContext, HttpIdentifier> {
  return registerKind<Cfg, IdentifierContext, HttpIdentifier>({ family: 'identifier', ...def });
}

/** An unidentified result (frozen, so identifiers can return one shared instance per reason). */
export function unidentified(reason: string): Identification {
  return Object.freeze({ kind: 'unidentified', reason });
}

/** The first value of a header (Finagle's `headerMap.get`), or undefined when absent. */
export function firstHeader(headers: HeaderMap, lowerName: string): string | undefined {
  const v = headers[lowerName];
  return typeof v === 'string' ? v : v?.[0];
}

/** The path part of a request-target: everything before `?` (not percent-decoded, as in Linkerd). */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** Values longer than this are identified afresh each time (a cache entry's memory stays small). */
const CACHED_VALUE_CHARS = 256;
/** Distinct values remembered; past that the cache starts over (a client cycling values costs misses, never memory). */
const CACHED_VALUES = 512;

/**
 * Identifications of recent values of one identifier (a header's value, a path): the same request
 * names the same immutable Path each time, so the hot path allocates none.
 */
export class IdentificationCache {
  readonly #byValue = new Map<string, Identification>();

  get(value: string): Identification | undefined {
    return this.#byValue.get(value);
  }

  /** Remembers `id` for `value` (when short enough) and returns it. */
  remember(value: string, id: Identification): Identification {
    if (value.length > CACHED_VALUE_CHARS) return id;
    if (this.#byValue.size >= CACHED_VALUES) this.#byValue.clear();
    this.#byValue.set(value, Object.freeze(id));
    return id;
  }
}
