import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { ip, kindShape, nonEmptyString, port, lazySchema } from '../../config/index.js';
import { errorMessage } from '../../core/errors.js';
import { type Dtab, readDtab, showPathTree } from '../../naming/index.js';
import type { Backoff } from '../../service/policy/index.js';
import { CachedDtabStore, DtabCache, type Observed } from './cache.js';
import { type StoredEntry, checkNamespace, isValidNamespace, readTextVersion, textVersion } from './codec.js';
import {
  DtabNamespaceAbsentError,
  DtabNamespaceExistsError,
  DtabVersionMismatchError,
  StorageForbiddenError,
  StorageUnavailableError,
  StoredDtabInvalidError,
} from './errors.js';
import { type HttpResult, StorageHttpClient } from './http-client.js';
import { JsonObjectSplitter } from '../../protocol/orch/json-stream.js';
import { defineStorage } from './kind.js';
import { DEFAULT_WATCH_BACKOFF, RetryTimer } from './retry.js';
import type { DtabStore, StorageContext } from './types.js';

/**
 * `io.prx.orch`: dtabs as custom resources of the container orchestrator, through its API (plain
 * HTTP, as served by `kubectl proxy` on localhost:8001). Each dtab namespace is one object of
 * kind `DTab` (group `prx.io`, version `v1alpha1`, plural `dtabs`, namespaced) in `namespace`,
 * named after it and holding `dentries: [{prefix, dst}]`; its version is the object's
 * `resourceVersion` (ETag = base64 of its text). Updates carry that resourceVersion, so a stale
 * one is refused with 409. One list + watch keeps every dtab current; a 410 Gone (either as a
 * watch event or a response) lists again.
 *
 * Install the resource (1.8+) as a CustomResourceDefinition `dtabs.prx.io` (scope Namespaced,
 * plural `dtabs`, singular `dtab`, kind `DTab`). Releases up to 1.7 used a ThirdPartyResource
 * `d-tab.prx.io` whose watches are only served on the `/watch/` path: set
 * `thirdPartyResource: true`. `apiGroup` reads dtabs stored under another vendor group, such as
 * namerd's `l5d.io`.
 *
 * ```yaml
 * storage:
 *   kind: io.prx.orch
 *   host: localhost
 *   port: 8001
 *   namespace: linkerd
 * ```
 */
export const k8sStorageSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.orch'),
  host: ip.default('localhost'),
  port: port.default(8001),
  namespace: nonEmptyString.default('default'),
  apiGroup: nonEmptyString.default('prx.io'),
  thirdPartyResource: z.boolean().default(false),
}));

export type K8sStorageConfig = z.output<typeof k8sStorageSchema>;

/** Knobs outside the config (tests shorten them). */
export interface K8sStoreOptions {
  readonly retryBackoff?: Backoff;
}

const K8S_NAME = {
  pattern: /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
  rule: 'orchestrator object names are lower-case letters, digits, "-" and "." (RFC 1123 subdomain)',
};

interface DtabObject {
  readonly metadata?: { readonly name?: string; readonly resourceVersion?: string };
  readonly dentries?: readonly { readonly prefix?: unknown; readonly dst?: unknown }[] | null;
}

interface WatchEvent {
  readonly type?: string;
  readonly object?: DtabObject & { readonly code?: number; readonly message?: string };
}

export class K8sDtabStore extends CachedDtabStore implements DtabStore {
  readonly #cfg: K8sStorageConfig;
  readonly #ctx: StorageContext;
  readonly #http: StorageHttpClient;
  readonly #base: string;
  readonly #retry: RetryTimer;
  readonly #abort = new AbortController();
  /** The largest resourceVersion seen: where a broken watch resumes. */
  #rv = 0n;
  #rvText = '';
  #closed = false;

  constructor(cfg: K8sStorageConfig, ctx: StorageContext, opts: K8sStoreOptions = {}) {
    super(new DtabCache(ctx.log, K8S_NAME));
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#http = new StorageHttpClient(cfg.host, cfg.port, undefined, { headersTimeoutMs: 30_000 });
    this.#base = `/apis/${cfg.apiGroup}/v1alpha1/namespaces/${encodeURIComponent(cfg.namespace)}/dtabs`;
    this.#retry = new RetryTimer(opts.retryBackoff ?? DEFAULT_WATCH_BACKOFF);
    ctx.stats.gauge(['connected'], () => (this.cache.health().ok ? 1 : 0));
    this.#list();
  }

  async create(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns, K8S_NAME);
    const res = await this.#send('POST', this.#base, this.#object(ns, dtab, undefined));
    if (res.status === 409) throw new DtabNamespaceExistsError(ns);
    this.#wrote(ns, this.#ok(res, 'create'));
  }

  async update(ns: string, dtab: Dtab, version: Uint8Array): Promise<void> {
    checkNamespace(ns, K8S_NAME);
    const rv = readTextVersion(version);
    // An empty resourceVersion would make the update unconditional.
    if (rv === undefined || rv === '') {
      const cur = await this.#send('GET', this.#item(ns));
      if (cur.status === 404) throw new DtabNamespaceAbsentError(ns);
      this.#ok(cur, 'read');
      throw new DtabVersionMismatchError(ns);
    }
    const res = await this.#send('PUT', this.#item(ns), this.#object(ns, dtab, rv));
    if (res.status === 409) throw new DtabVersionMismatchError(ns);
    if (res.status === 404) throw new DtabNamespaceAbsentError(ns);
    this.#wrote(ns, this.#ok(res, 'update'));
  }

  async put(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns, K8S_NAME);
    // Read the current resourceVersion and replace exactly that; a race goes round again.
    for (let attempt = 0; attempt < 5; attempt++) {
      const cur = await this.#send('GET', this.#item(ns));
      if (cur.status === 404) {
        const res = await this.#send('POST', this.#base, this.#object(ns, dtab, undefined));
        if (res.status === 409) continue;
        return this.#wrote(ns, this.#ok(res, 'create'));
      }
      const rv = (this.#ok(cur, 'read') as DtabObject).metadata?.resourceVersion;
      const res = await this.#send('PUT', this.#item(ns), this.#object(ns, dtab, rv));
      if (res.status === 409 || res.status === 404) continue;
      return this.#wrote(ns, this.#ok(res, 'update'));
    }
    throw new StorageUnavailableError(`put of dtab ${ns} kept racing with other writers; try again`);
  }

  async delete(ns: string, version?: Uint8Array): Promise<void> {
    checkNamespace(ns, K8S_NAME);
    const rv = version === undefined ? undefined : readTextVersion(version);
    if (version !== undefined && (rv === undefined || rv === '')) {
      // No resourceVersion to hold the delete to: it can only mismatch (or find nothing).
      const cur = await this.#send('GET', this.#item(ns));
      if (cur.status === 404) throw new DtabNamespaceAbsentError(ns);
      this.#ok(cur, 'read');
      throw new DtabVersionMismatchError(ns);
    }
    // A precondition makes the API server refuse (409) a delete of any other resourceVersion.
    const options = rv === undefined ? undefined : JSON.stringify({ kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion: rv } });
    const res = await this.#send('DELETE', this.#item(ns), options);
    if (res.status === 404) throw new DtabNamespaceAbsentError(ns);
    if (res.status === 409) throw new DtabVersionMismatchError(ns);
    const body = this.#ok(res, 'delete') as DtabObject & { kind?: string };
    // The answer is the deleted object: no later version of it can exist, so its resourceVersion orders the deletion.
    const goneRv = body.kind === 'DTab' ? body.metadata?.resourceVersion : undefined;
    if (goneRv !== undefined) this.cache.apply(ns, undefined, this.#order(goneRv));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#retry.close();
    this.cache.close();
    this.#abort.abort();
    await this.#http.close();
  }

  #item(ns: string): string {
    return `${this.#base}/${encodeURIComponent(ns)}`;
  }

  #object(ns: string, dtab: Dtab, rv: string | undefined): string {
    return JSON.stringify({
      apiVersion: `${this.#cfg.apiGroup}/v1alpha1`,
      kind: 'DTab',
      metadata: { name: ns, namespace: this.#cfg.namespace, ...(rv === undefined ? {} : { resourceVersion: rv }) },
      dentries: dtab.dentries.map((d) => ({ prefix: d.prefix.show, dst: showPathTree(d.dst) })),
    });
  }

  async #send(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: string): Promise<HttpResult> {
    if (this.#closed) throw new StorageUnavailableError('dtab storage is closed');
    try {
      return await this.#http.call(method, path, {
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        ...(body === undefined ? {} : { body }),
      });
    } catch (e) {
      this.cache.unhealthy(e);
      throw e;
    }
  }

  /** The parsed body of a successful answer; other statuses become storage errors. */
  #ok(res: HttpResult, what: string): unknown {
    if (res.status === 401 || res.status === 403) throw new StorageForbiddenError(`orchestrator API refused the dtab ${what}: ${statusMessage(res)}`);
    if (res.status < 200 || res.status >= 300) {
      throw new StorageUnavailableError(`orchestrator API dtab ${what} answered ${res.status}: ${statusMessage(res)}`);
    }
    try {
      return JSON.parse(res.body) as unknown;
    } catch (e) {
      throw new StorageUnavailableError(`orchestrator API dtab ${what} answered unreadable JSON: ${errorMessage(e)}`);
    }
  }

  #wrote(ns: string, obj: unknown): void {
    const o = obj as DtabObject;
    const rv = o.metadata?.resourceVersion;
    if (rv !== undefined) this.cache.apply(ns, this.#entry(ns, o, rv), this.#order(rv));
  }

  /** resourceVersions are numbers in practice (namerd compared them so too); one that is not counts as the newest. */
  #order(rv: string): bigint {
    const n = /^[0-9]{1,19}$/.test(rv) ? BigInt(rv) : this.#rv + 1n;
    if (n > this.#rv) {
      this.#rv = n;
      this.#rvText = rv;
    }
    return n;
  }

  #entry(ns: string, o: DtabObject, rv: string): StoredEntry {
    const version = textVersion(rv);
    try {
      const text = (o.dentries ?? []).map((d) => {
        if (typeof d.prefix !== 'string' || typeof d.dst !== 'string') throw new Error('a dentry lacks a string prefix or dst');
        return `${d.prefix}=>${d.dst}`;
      });
      return { kind: 'dtab', value: { dtab: readDtab(text.join(';')), version } };
    } catch (e) {
      return { kind: 'invalid', error: new StoredDtabInvalidError(ns, errorMessage(e)), version };
    }
  }

  #observed(o: DtabObject | undefined): Observed | undefined {
    const name = o?.metadata?.name;
    const rv = o?.metadata?.resourceVersion;
    if (o === undefined || name === undefined || rv === undefined || !isValidNamespace(name)) return undefined;
    return { ns: name, entry: this.#entry(name, o, rv), order: this.#order(rv) };
  }

  /** Lists every dtab, replaces the cache's view, and watches from the list's resourceVersion. */
  #list(): void {
    if (this.#closed) return;
    this.#http
      .call('GET', this.#base, { headers: { Accept: 'application/json' }, signal: this.#abort.signal })
      .then((res) => {
        if (res.status === 404) throw new StorageUnavailableError(`orchestrator API request for the DTab list returned 404 (is the dtabs.${this.#cfg.apiGroup} resource installed?)`);
        const list = this.#ok(res, 'list') as { metadata?: { resourceVersion?: string }; items?: DtabObject[] };
        const listed = (list.items ?? []).map((o) => this.#observed(o)).filter((o): o is Observed => o !== undefined);
        const rv = list.metadata?.resourceVersion ?? '';
        const at = rv === '' ? this.#rv : this.#order(rv);
        this.cache.reconcile(listed, at);
        this.#retry.reset();
        this.#watch(rv === '' ? this.#rvText : rv);
      })
      .catch((e: unknown) => {
        if (this.#closed) return;
        this.cache.unhealthy(e);
        this.#retry.schedule(() => this.#list());
      });
  }

  #watchPath(rv: string): string {
    const q = new URLSearchParams(rv === '' ? {} : { resourceVersion: rv });
    if (this.#cfg.thirdPartyResource) {
      return `/apis/${this.#cfg.apiGroup}/v1alpha1/watch/namespaces/${encodeURIComponent(this.#cfg.namespace)}/dtabs?${q.toString()}`;
    }
    q.set('watch', 'true');
    q.set('allowWatchBookmarks', 'true');
    return `${this.#base}?${q.toString()}`;
  }

  /** One watch stream; when it ends it is resumed from the newest resourceVersion seen. */
  #watch(rv: string): void {
    if (this.#closed) return;
    const started = Date.now();
    void this.#runWatch(rv).then(
      (next) => {
        if (this.#closed) return;
        if (next === 'relist') return this.#list();
        // A stream that ends at once every time would spin: back off unless it lasted a while.
        if (Date.now() - started > 1000) this.#watch(this.#rvText);
        else this.#retry.schedule(() => this.#watch(this.#rvText));
      },
      (e: unknown) => {
        if (this.#closed) return;
        this.cache.unhealthy(e);
        this.#retry.schedule(() => this.#list());
      },
    );
  }

  async #runWatch(rv: string): Promise<'resume' | 'relist'> {
    const res = await this.#http.stream(this.#watchPath(rv), { headers: { Accept: 'application/json' }, signal: this.#abort.signal });
    if (res.status === 410) {
      await res.text().catch(() => '');
      return 'relist';
    }
    if (res.status !== 200) {
      const body = await res.text().catch(() => '');
      throw new StorageUnavailableError(`orchestrator API dtab watch answered ${res.status}: ${body.trim().slice(0, 200)}`);
    }
    this.cache.healthy();
    const splitter = new JsonObjectSplitter();
    const decoder = new StringDecoder('utf8');
    for await (const chunk of res.body) {
      for (const ev of splitter.push(decoder.write(chunk)) as WatchEvent[]) {
        if (this.#closed) return 'resume';
        // Returning ends the loop, which closes this stream; the list starts over.
        if (this.#onEvent(ev) === 'relist') return 'relist';
      }
    }
    return 'resume';
  }

  #onEvent(ev: WatchEvent): 'ok' | 'relist' {
    const o = ev.object;
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED': {
        const seen = this.#observed(o);
        if (seen !== undefined) this.cache.apply(seen.ns, seen.entry, seen.order);
        return 'ok';
      }
      case 'DELETED': {
        const name = o?.metadata?.name;
        const rv = o?.metadata?.resourceVersion;
        if (name !== undefined && rv !== undefined && isValidNamespace(name)) this.cache.apply(name, undefined, this.#order(rv));
        return 'ok';
      }
      case 'BOOKMARK': {
        const rv = o?.metadata?.resourceVersion;
        if (rv !== undefined) this.#order(rv);
        return 'ok';
      }
      case 'ERROR':
        if (o?.code === 410) return 'relist';
        this.#ctx.log.warn({ status: o }, 'orchestrator dtab watch reported an error; listing again');
        return 'relist';
      case undefined:
      default:
        this.#ctx.log.debug({ type: ev.type }, 'ignoring unknown watch event');
        return 'ok';
    }
  }
}

function statusMessage(res: HttpResult): string {
  try {
    const s = JSON.parse(res.body) as { message?: unknown };
    if (typeof s.message === 'string') return s.message;
  } catch {
    // not a Status object
  }
  return res.body.trim().slice(0, 200) || String(res.status);
}

defineStorage({
  kind: 'io.prx.orch',
  schema: k8sStorageSchema,
  create: (cfg: K8sStorageConfig, ctx) => new K8sDtabStore(cfg, ctx),
});
