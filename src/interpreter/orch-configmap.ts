import { z } from 'zod';
import { interpreterShape, nonEmptyString, port as portNumber, shortName, lazySchema } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import {
  Activity, type Closable, Dtab, type MountedNamer, type NameInterpreter, type Namer, Pending, type State, Var, ok, readDtab,
} from '../naming/index.js';
import { CONFIGMAPS, type ConfigMapObject, DEFAULT_ORCH_API_PORT, Informer, OrchApiClient, type OrchApiEnvironment, OrchInClusterError } from '../protocol/orch/index.js';
import type { Backoff } from '../service/policy/index.js';
import type { ClosableInterpreter, InterpreterContext } from './context.js';
import { LiveDtabInterpreter } from './live-dtab.js';
import { ConfigMapDtabError } from './errors.js';
import { buildTransformers, withTransformers } from './transformer.js';
import './transformers/index.js';

/**
 * `io.prx.orch.configMap` (experimental; Linkerd's `io.l5d.k8s.configMap`): the default interpreter
 * with a dtab read from one key of an orchestrator (Kubernetes) ConfigMap and watched, so edits
 * apply live. A name binds through that dtab followed by the router's (and the request's), so
 * router and request dentries win, as with `io.prx.fs`.
 *
 * ```yaml
 * interpreter:
 *   kind: io.prx.orch.configMap
 *   experimental: true
 *   namespace: default
 *   name: prx-dtabs        # the ConfigMap
 *   filename: web          # its key holding the dtab
 *   host: 127.0.0.1        # the API (kubectl proxy); absent: in-cluster, else localhost
 *   port: 8001
 * ```
 *
 * As in Linkerd: a missing ConfigMap or key is an empty dtab (and so is a deleted one); a malformed
 * dtab keeps the last good one (an empty one when none parsed yet), logged and shown on
 * `/<router>/interpreter_state/io.prx.orch.configMap.json`. Until the first answer of the API,
 * bindings wait (the router's binding timeout applies).
 */
export const orchConfigMapInterpreterSchema = lazySchema(() => z.strictObject({
  ...interpreterShape('io.prx.orch.configMap'),
  name: nonEmptyString,
  filename: nonEmptyString,
  host: nonEmptyString.optional(),
  port: portNumber.default(DEFAULT_ORCH_API_PORT),
  namespace: shortName.default('default'),
}));
export type OrchConfigMapInterpreterConfig = z.output<typeof orchConfigMapInterpreterSchema>;

/** Tuning outside the config (tests use it). */
export interface ConfigMapDtabOptions {
  readonly backoff?: Backoff | undefined;
  readonly environment?: OrchApiEnvironment;
  readonly log?: Logger | undefined;
}

/** What `/<router>/interpreter_state/io.prx.orch.configMap.json` shows. */
export interface ConfigMapDtabStatus {
  readonly api: string;
  readonly namespace: string;
  readonly name: string;
  readonly filename: string;
  /** Whether the ConfigMap is being watched (something is bound through it). */
  readonly watching: boolean;
  /** Whether the ConfigMap exists (null before the API first answered). */
  readonly exists: boolean | null;
  /** Whether it has the key `filename` (null when unknown). */
  readonly hasKey: boolean | null;
  /** The dtab in force: the last one that parsed (empty for a missing ConfigMap or key). */
  readonly dtab: string | null;
  readonly lastLoadedAt: string | null;
  /** The last malformed dtab or API failure, cleared by the next good dtab. */
  readonly lastError: { readonly message: string; readonly at: string } | null;
}

/** One ConfigMap key's dtab, kept current by a list+watch of that one object while observed. */
export class ConfigMapDtab {
  readonly dtab: Activity<Dtab>;
  readonly #cfg: OrchConfigMapInterpreterConfig;
  readonly #client: OrchApiClient;
  readonly #backoff: Backoff | undefined;
  readonly #log: Logger | undefined;
  readonly #key: string;
  #lastGood: Dtab | undefined;
  #lastText: string | undefined;
  #exists: boolean | null = null;
  #hasKey: boolean | null = null;
  #lastLoadedAt: Date | undefined;
  #lastError: { message: string; at: Date } | undefined;
  #watching = false;
  #informer: Informer<ConfigMapObject> | undefined;
  #closed = false;

  constructor(cfg: OrchConfigMapInterpreterConfig, opts: ConfigMapDtabOptions = {}) {
    this.#cfg = cfg;
    this.#key = `${cfg.namespace}/${cfg.name}`;
    this.#backoff = opts.backoff;
    this.#log = opts.log;
    // Made now, so an incomplete in-cluster environment is a start-up error naming this kind.
    try {
      this.#client = OrchApiClient.create({ host: cfg.host, port: cfg.port }, opts.environment);
    } catch (e) {
      if (e instanceof OrchInClusterError) throw new OrchInClusterError(`io.prx.orch.configMap: ${e.message}`);
      throw e;
    }
    this.dtab = new Activity(Var.async<State<Dtab>>(Pending, (set) => this.#watch(set)));
  }

  status(): ConfigMapDtabStatus {
    return {
      api: this.#client.origin,
      namespace: this.#cfg.namespace,
      name: this.#cfg.name,
      filename: this.#cfg.filename,
      watching: this.#watching,
      exists: this.#exists,
      hasKey: this.#hasKey,
      dtab: this.#lastGood?.show ?? null,
      lastLoadedAt: this.#lastLoadedAt?.toISOString() ?? null,
      lastError: this.#lastError ? { message: this.#lastError.message, at: this.#lastError.at.toISOString() } : null,
    };
  }

  /** Ends the watch (even if bindings still observe the dtab: the proxy is stopping) and the client. */
  close(): void {
    this.#closed = true;
    this.#watching = false;
    this.#informer?.close();
    void this.#client.close();
  }

  #watch(set: (s: State<Dtab>) => void): Closable {
    let current: State<Dtab> = Pending;
    // Re-publishing an unchanged dtab would make every binding through it bind again.
    const publish = (dtab: Dtab): void => {
      if (current.kind === 'ok' && current.value === dtab) return;
      current = ok(dtab);
      set(current);
    };
    // A fresh start applies the object even if its text is unchanged: the var forgot its value.
    this.#lastText = undefined;
    if (this.#closed) return { close: () => {} };
    this.#watching = true;
    const informer = new Informer<ConfigMapObject>(
      this.#client,
      CONFIGMAPS,
      { namespace: this.#cfg.namespace, name: this.#cfg.name, backoff: this.#backoff },
      (objects) => publish(this.#apply(findNamed(objects.values(), this.#cfg.name))),
      (e) => this.#recordError(e.message),
    );
    this.#informer = informer;
    return {
      close: () => {
        this.#watching = false;
        informer.close();
        if (this.#informer === informer) this.#informer = undefined;
      },
    };
  }

  /** The dtab in force once `object` (undefined: absent) is the ConfigMap. */
  #apply(object: ConfigMapObject | undefined): Dtab {
    const where = `config map ${this.#key}`;
    if (object === undefined || object.data?.[this.#cfg.filename] === undefined) {
      const exists = object !== undefined;
      if (this.#exists !== exists || this.#hasKey !== false) {
        this.#log?.warn({ configMap: this.#key }, exists ? `${where} has no key ${this.#cfg.filename}; its dtab is empty` : `${where} does not exist; its dtab is empty`);
      }
      this.#exists = exists;
      this.#hasKey = exists ? false : null;
      this.#lastText = undefined;
      return this.#loaded(Dtab.empty);
    }
    this.#exists = true;
    this.#hasKey = true;
    const text = object.data[this.#cfg.filename] as string;
    if (text === this.#lastText && this.#lastGood !== undefined) return this.#lastGood;
    this.#lastText = text;
    try {
      return this.#loaded(readDtab(text, { located: true }));
    } catch (e) {
      const error = new ConfigMapDtabError(this.#key, this.#cfg.filename, errorMessage(e));
      this.#recordError(error.message);
      // Linkerd's rule: keep the previous dtab; before any, an empty one.
      this.#lastGood ??= Dtab.empty;
      return this.#lastGood;
    }
  }

  #loaded(dtab: Dtab): Dtab {
    this.#lastGood = dtab;
    this.#lastLoadedAt = new Date();
    this.#lastError = undefined;
    return dtab;
  }

  #recordError(message: string): void {
    this.#lastError = { message, at: new Date() };
    const kept = this.#lastGood === undefined ? '' : this.#lastGood.isEmpty ? '; using an empty dtab' : '; keeping the last good dtab';
    this.#log?.error({ configMap: this.#key }, `${message}${kept}`);
  }
}

/** The one object a single-object informer holds, by name (whatever its map key). */
function findNamed(objects: Iterable<ConfigMapObject>, name: string): ConfigMapObject | undefined {
  for (const o of objects) if (o.metadata.name === name) return o;
  return undefined;
}

export class OrchConfigMapInterpreter extends LiveDtabInterpreter<ConfigMapDtabStatus> implements ClosableInterpreter {
  readonly configMap: ConfigMapDtab;

  constructor(cfg: OrchConfigMapInterpreterConfig, namers: readonly MountedNamer[], system: Namer, opts: ConfigMapDtabOptions = {}) {
    super(namers, system);
    this.configMap = new ConfigMapDtab(cfg, opts);
  }

  get dtab(): Activity<Dtab> {
    return this.configMap.dtab;
  }

  state(): ConfigMapDtabStatus {
    return this.configMap.status();
  }

  close(): void {
    this.configMap.close();
  }
}

registerKind({
  family: 'interpreter',
  kind: 'io.prx.orch.configMap',
  experimental: true,
  schema: orchConfigMapInterpreterSchema,
  create: (cfg: OrchConfigMapInterpreterConfig, ctx: InterpreterContext): NameInterpreter =>
    withTransformers(new OrchConfigMapInterpreter(cfg, ctx.namers, ctx.system, { log: ctx.log }), buildTransformers(cfg.transformers, ctx)),
});
