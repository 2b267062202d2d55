// Per-name client and service parameters (Linkerd's `io.l5d.global` / `io.l5d.static` configs).
import { BugError } from '../../core/errors.js';
import { type Path, PathMatcher, PathPatternError, type PathVars } from '../../naming/index.js';

/**
 * A validated client or service policy (see `clientPolicy()` / `servicePolicy()` in the config
 * module): `io.prx.global` (the default when `kind` is absent) with its parameters inline, or
 * `io.prx.static` with `configs`, each a `prefix` pattern (`/#/io.prx.fs/*`, `/svc/{service}`)
 * and parameters. A parameter that is absent or `undefined` inherits from the layer below. Typed
 * as loosely as the config module's output types are.
 */
export type PolicyConfig =
  | Readonly<Record<string, unknown>>
  | { readonly kind: 'io.prx.static'; readonly configs: readonly Readonly<Record<string, unknown>>[] };

/** The parameters in force for one name, and the variables its matching prefixes captured. */
export interface ResolvedPolicyParams<P> {
  readonly params: P;
  readonly vars: PathVars;
}

const NO_VARS: PathVars = Object.freeze({});

interface CompiledConfig {
  readonly matcher: PathMatcher;
  // Only the parameters the config sets, so layering is a plain assign.
  readonly params: Readonly<Record<string, unknown>>;
}

/** The keys of `obj` except `skip`, dropping undefined values (they inherit). */
function setParams(obj: Readonly<Record<string, unknown>>, skip: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(obj)) {
    const value = obj[key];
    if (key !== skip && value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * Resolves the parameters of names under one policy. Layers, bottom to top: `defaults`, then the
 * global parameters, or every static config whose prefix matches the name, in file order, a later
 * config replacing a top-level parameter an earlier one set (nested objects are not merged).
 * Prefixes are parsed once, here. Results are frozen; a global policy, or a name no static prefix
 * matches, gets one shared result, so callers may cache results per name freely.
 */
export class PolicyResolver<P extends object> {
  readonly #configs: readonly CompiledConfig[];
  readonly #defaults: P;
  // The result when nothing in the policy varies by name.
  readonly #fixed: ResolvedPolicyParams<P>;

  constructor(policy: PolicyConfig, defaults: P) {
    this.#defaults = defaults;
    const kind = policy['kind'];
    if (kind === undefined || kind === 'io.prx.global') {
      this.#configs = [];
      this.#fixed = freeze({ ...defaults, ...setParams(policy, 'kind') }, NO_VARS);
    } else if (kind === 'io.prx.static' && Array.isArray(policy['configs'])) {
      this.#configs = (policy['configs'] as readonly Readonly<Record<string, unknown>>[]).map(compile);
      this.#fixed = freeze({ ...defaults }, NO_VARS);
    } else {
      throw new BugError(`not a validated policy: kind ${JSON.stringify(kind)}`);
    }
  }

  /** The parameters in force for `name` and the variables captured by the prefixes it matched. */
  resolve(name: Path): ResolvedPolicyParams<P> {
    let params: Record<string, unknown> | undefined;
    let vars: Record<string, string> | undefined;
    for (const config of this.#configs) {
      const captured = config.matcher.match(name);
      if (captured === undefined) continue;
      params = Object.assign(params ?? { ...this.#defaults }, config.params);
      if (config.matcher.variables.length > 0) vars = { ...vars, ...captured };
    }
    if (params === undefined) return this.#fixed;
    return freeze(params as P, vars === undefined ? NO_VARS : Object.freeze(vars));
  }
}

function compile(config: Readonly<Record<string, unknown>>): CompiledConfig {
  const prefix = config['prefix'];
  if (typeof prefix !== 'string') throw new PathPatternError(String(prefix), 'a static config needs a prefix');
  return { matcher: PathMatcher.parse(prefix), params: setParams(config, 'prefix') };
}

function freeze<P>(params: P, vars: PathVars): ResolvedPolicyParams<P> {
  return Object.freeze({ params: Object.freeze(params), vars });
}

/**
 * The parameters in force for `name` under `policy` over `defaults` (`clientParamDefaults`,
 * `serviceParamDefaults`); see {@link PolicyResolver}, which parses the prefixes once for many names.
 */
export function resolvePolicyParams<P extends object>(policy: PolicyConfig, name: Path, defaults: P): ResolvedPolicyParams<P> {
  return new PolicyResolver(policy, defaults).resolve(name);
}
