import type { Namer, Path } from '../../naming/index.js';
import { isStateful } from '../../namer/namer-kind.js';
import { type AdminEndpoint, jsonResponse } from '../handler.js';

/**
 * `/namer_state/<prefix>.json` for each namer that keeps state worth showing (e.g. `io.prx.orch`:
 * its watches, their resource versions and errors), as Linkerd's `/namer_state/io.l5d.k8s.json`.
 * `prefix` is the namer's mount point (`/#/io.prx.orch` → `/namer_state/io.prx.orch.json`).
 */
export function namerStateEndpoints(namers: readonly { readonly prefix: Path; readonly namer: Namer }[]): AdminEndpoint[] {
  return namers.flatMap(({ prefix, namer }) => {
    if (!isStateful(namer)) return [];
    const label = (prefix.elems[0] === '#' ? prefix.drop(1) : prefix).show.slice(1);
    return [{
      path: `/namer_state/${label}.json`,
      method: 'GET',
      description: `Internal state of the namer at /#/${label}.`,
      handler: () => jsonResponse(namer.adminState(), 200, true),
    }];
  });
}
