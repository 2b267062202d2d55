import {
  type Activity, type BoundName, ConfiguredNamersInterpreter, type DelegationSource, type Dtab, type MountedNamer, type Name,
  type NameTree, type Namer, type Path,
} from '../naming/index.js';
import type { StatefulInterpreter } from './context.js';

/**
 * An interpreter whose dtab comes from a live source (a watched file, a ConfigMap): as in Linkerd's
 * `ConfiguredDtabNamer`, a name binds through that dtab followed by the dtab the router passes
 * (its own plus the request's local dtab), over the configured namers.
 */
export abstract class LiveDtabInterpreter<Status> implements StatefulInterpreter, DelegationSource {
  readonly #namers: ConfiguredNamersInterpreter;

  constructor(namers: readonly MountedNamer[], system: Namer) {
    this.#namers = new ConfiguredNamersInterpreter(namers, { system });
  }

  /** The source's dtab, live. */
  abstract get dtab(): Activity<Dtab>;

  abstract state(): Status;

  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> {
    return this.dtab.flatMap((sourceDtab) => this.#namers.bind(sourceDtab.concat(dtab), path));
  }

  /** For delegation explanations: the namers, after the (source + request) dtab. */
  namerLookup(path: Path): Activity<NameTree<Name>> {
    return this.#namers.namerLookup(path);
  }
}
