import type { Path } from '../../naming/index.js';
import { type AdminEndpoint, jsonResponse } from '../handler.js';
import type { EnumeratingNamer } from '../../namer/namer-kind.js';

/** How long `/bound-names.json` waits for a namer's first listing. */
const LIST_TIMEOUT_MS = 2000;

/**
 * `/bound-names.json`: every name the enumerating namers (e.g. `io.prx.fs`) currently serve, as
 * a sorted JSON array of bound ids. A namer that cannot list in time is left out.
 */
export function boundNamesEndpoint(namers: () => readonly EnumeratingNamer[]): AdminEndpoint {
  return {
    path: '/bound-names.json',
    description: 'Names served by namers that can enumerate them',
    method: 'GET',
    handler: async () => {
      const lists = await Promise.all(
        namers().map((n) => n.boundNames().toPromise(AbortSignal.timeout(LIST_TIMEOUT_MS)).catch((): Path[] => [])),
      );
      const ids = [...new Set(lists.flat().map((p) => p.show))].sort();
      return jsonResponse(ids);
    },
  };
}
