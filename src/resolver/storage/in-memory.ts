import { z } from 'zod';
import { addIssue, dtabText as dtabTextSchema, kindShape, lazySchema } from '../../config/index.js';
import { type Dtab, readDtab } from '../../naming/index.js';
import { CachedDtabStore, DtabCache } from './cache.js';
import { checkNamespace, readU64Version, sameVersion, u64Version } from './codec.js';
import { DtabNamespaceAbsentError, DtabNamespaceExistsError, DtabVersionMismatchError, InvalidDtabNamespaceError } from './errors.js';
import { defineStorage } from './kind.js';
import type { DtabStore, StorageContext } from './types.js';

/**
 * `io.prx.inMemory`: dtabs held in the process, seeded from `namespaces` (namespace → dtab text).
 * Lost on restart, so not for production. Versions are 8-byte big-endian counters as in namerd:
 * a new namespace is 1 (ETag `AAAAAAAAAAE=`), every update adds 1, delete then create restarts at 1.
 *
 * ```yaml
 * storage:
 *   kind: io.prx.inMemory
 *   namespaces:
 *     default: /svc => /#/io.prx.fs
 * ```
 */
export const inMemoryStorageSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.inMemory'),
  namespaces: z
    .record(z.string(), dtabTextSchema)
    .default({})
    .superRefine((namespaces, ctx) => {
      for (const ns of Object.keys(namespaces)) {
        try {
          checkNamespace(ns);
        } catch (e) {
          if (e instanceof InvalidDtabNamespaceError) addIssue(ctx, [ns], e.message);
        }
      }
    }),
}));

export type InMemoryStorageConfig = z.output<typeof inMemoryStorageSchema>;

export class InMemoryDtabStore extends CachedDtabStore implements DtabStore {
  // A store-wide write counter orders the cache's changes (versions are per namespace).
  #order = 0n;

  constructor(namespaces: Readonly<Record<string, string>>, ctx: StorageContext) {
    super(new DtabCache(ctx.log));
    const seed = Object.entries(namespaces).map(([ns, text]) => ({
      ns,
      entry: { kind: 'dtab' as const, value: { dtab: readDtab(text), version: u64Version(1n) } },
      order: 0n,
    }));
    this.cache.reconcile(seed, 0n);
    ctx.stats.gauge(['namespaces'], () => this.#count());
  }

  create(ns: string, dtab: Dtab): Promise<void> {
    return this.#run(() => {
      checkNamespace(ns);
      if (this.cache.current(ns) !== undefined) throw new DtabNamespaceExistsError(ns);
      this.#write(ns, dtab, 1n);
    });
  }

  update(ns: string, dtab: Dtab, version: Uint8Array): Promise<void> {
    return this.#run(() => {
      checkNamespace(ns);
      const cur = this.#currentVersion(ns);
      if (cur === undefined) throw new DtabNamespaceAbsentError(ns);
      if (!sameVersion(u64Version(cur), version)) throw new DtabVersionMismatchError(ns);
      this.#write(ns, dtab, cur + 1n);
    });
  }

  put(ns: string, dtab: Dtab): Promise<void> {
    return this.#run(() => {
      checkNamespace(ns);
      this.#write(ns, dtab, (this.#currentVersion(ns) ?? 0n) + 1n);
    });
  }

  delete(ns: string, version?: Uint8Array): Promise<void> {
    return this.#run(() => {
      checkNamespace(ns);
      const cur = this.#currentVersion(ns);
      if (cur === undefined) throw new DtabNamespaceAbsentError(ns);
      if (version !== undefined && !sameVersion(u64Version(cur), version)) throw new DtabVersionMismatchError(ns);
      this.cache.apply(ns, undefined, ++this.#order);
    });
  }

  close(): Promise<void> {
    this.cache.close();
    return Promise.resolve();
  }

  #currentVersion(ns: string): bigint | undefined {
    const e = this.cache.current(ns);
    if (e === undefined) return undefined;
    return readU64Version(e.kind === 'dtab' ? e.value.version : e.version);
  }

  #write(ns: string, dtab: Dtab, version: bigint): void {
    this.cache.apply(ns, { kind: 'dtab', value: { dtab, version: u64Version(version) } }, ++this.#order);
  }

  #count(): number {
    const s = this.cache.list().states.sample();
    return s.kind === 'ok' ? s.value.size : 0;
  }

  // Writes are synchronous; errors become rejections like every other store's.
  #run(f: () => void): Promise<void> {
    try {
      f();
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }
}

defineStorage({
  kind: 'io.prx.inMemory',
  schema: inMemoryStorageSchema,
  create: (cfg: InMemoryStorageConfig, ctx) => new InMemoryDtabStore(cfg.namespaces, ctx),
});
