/**
 * Adapts the resolver's dtab store to the admin UI's {@link StoredDtabs}: versions travel as
 * base64 (the HTTP controller's ETag), and the store's typed errors become save outcomes.
 */
import type { StoredDtabView, StoredDtabs, SaveOutcome } from '../admin/ui/index.js';
import { errorMessage } from '../core/errors.js';
import type { Dtab } from '../naming/index.js';
import type { ResolverParts } from '../resolver/process.js';
import {
  DtabNamespaceAbsentError,
  DtabNamespaceExistsError,
  DtabVersionMismatchError,
  InvalidDtabNamespaceError,
  StorageForbiddenError,
} from '../resolver/storage/errors.js';

/** How long the UI waits for storage to answer a read. */
const READ_TIMEOUT_MS = 2000;

export function storedDtabs(parts: ResolverParts): StoredDtabs {
  const get = async (namespace: string): Promise<StoredDtabView | undefined> => {
    const v = await parts.store.observe(namespace).toPromise(AbortSignal.timeout(READ_TIMEOUT_MS));
    return v === undefined ? undefined : { namespace, dtab: v.dtab.show, version: Buffer.from(v.version).toString('base64') };
  };
  return {
    get,
    list: async () => (await Promise.all(parts.namespaces().map(get))).filter((v): v is StoredDtabView => v !== undefined),
    health: () => parts.store.health(),
    save: async (namespace: string, dtab: Dtab, version: string | undefined): Promise<SaveOutcome> => {
      try {
        if (version === undefined) await parts.store.create(namespace, dtab);
        else await parts.store.update(namespace, dtab, Buffer.from(version, 'base64'));
      } catch (e) {
        if (e instanceof DtabVersionMismatchError || e instanceof DtabNamespaceExistsError) {
          return { kind: 'conflict', current: await get(namespace).catch(() => undefined) };
        }
        if (e instanceof DtabNamespaceAbsentError) return { kind: 'absent' };
        if (e instanceof InvalidDtabNamespaceError) return { kind: 'refused', status: 400, message: e.message };
        if (e instanceof StorageForbiddenError) return { kind: 'refused', status: 403, message: e.message };
        return { kind: 'refused', status: 503, message: `storage refused the write: ${errorMessage(e)}` };
      }
      return { kind: 'saved', current: await get(namespace).catch(() => undefined) };
    },
  };
}
