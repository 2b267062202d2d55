import { errorMessage } from '../../core/errors.js';
import { type Backoff, RetryTimer, jittered } from '../../service/policy/index.js';
import { type OrchApiClient, collectionPath, statusMessage } from './client.js';
import { OrchApiError } from './errors.js';
import { type OrchObject, type OrchResource, type WatchEvent, objectKey } from './types.js';

export interface InformerOptions {
  /** One namespace; undefined watches all of them. */
  readonly namespace?: string | undefined;
  /** One object (by `fieldSelector=metadata.name=<name>`), so a name costs one small watch. */
  readonly name?: string | undefined;
  readonly labelSelector?: string | undefined;
  /** Between failed lists and watches (default 100 ms growing to 30 s, jittered). */
  readonly backoff?: Backoff | undefined;
}

export interface InformerState<T> {
  /** Keyed `namespace/name`. */
  readonly objects: ReadonlyMap<string, T>;
  /** A list has succeeded at least once. */
  readonly synced: boolean;
  /** The newest resourceVersion seen: where a broken watch resumes. */
  readonly resourceVersion: string;
  /** The last failure, cleared by the next success. */
  readonly error: OrchApiError | undefined;
  /** Lists made (1 + relists after 410 Gone and failures). */
  readonly lists: number;
  /** Watch streams opened. */
  readonly watches: number;
}

export const DEFAULT_INFORMER_BACKOFF: Backoff = jittered(100, 30_000);

/** A stream that ends sooner than this after it opened is resumed only after a backoff delay. */
const SHORT_WATCH_MS = 1_000;

/**
 * Keeps a collection of orchestrator objects (or one object) current: a list, then a watch from
 * the list's resourceVersion that is resumed from the newest version seen whenever the server
 * ends it; bookmarks advance that version; 410 Gone (an answer or an ERROR event) lists again.
 * Failures keep the last good objects and retry with backoff. `onChange` gets the live map after
 * every list and every change: read it then, copy it to keep it.
 */
export class Informer<T extends OrchObject> {
  readonly #client: OrchApiClient;
  readonly #path: string;
  readonly #selectors: URLSearchParams;
  readonly #onChange: (objects: ReadonlyMap<string, T>) => void;
  readonly #onError: ((e: OrchApiError) => void) | undefined;
  readonly #retry: RetryTimer;
  readonly #abort = new AbortController();
  readonly #objects = new Map<string, T>();
  #rv = '';
  #synced = false;
  #error: OrchApiError | undefined;
  #lists = 0;
  #watches = 0;
  #closed = false;

  constructor(
    client: OrchApiClient,
    resource: OrchResource,
    opts: InformerOptions,
    onChange: (objects: ReadonlyMap<string, T>) => void,
    onError?: (e: OrchApiError) => void,
  ) {
    this.#client = client;
    this.#path = collectionPath(resource, opts.namespace);
    this.#selectors = new URLSearchParams();
    if (opts.name !== undefined) this.#selectors.set('fieldSelector', `metadata.name=${opts.name}`);
    if (opts.labelSelector !== undefined && opts.labelSelector !== '') this.#selectors.set('labelSelector', opts.labelSelector);
    this.#onChange = onChange;
    this.#onError = onError;
    this.#retry = new RetryTimer(opts.backoff ?? DEFAULT_INFORMER_BACKOFF);
    this.#list();
  }

  get state(): InformerState<T> {
    return { objects: this.#objects, synced: this.#synced, resourceVersion: this.#rv, error: this.#error, lists: this.#lists, watches: this.#watches };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#retry.close();
    this.#abort.abort();
  }

  #url(extra: Record<string, string>): string {
    const q = new URLSearchParams(this.#selectors);
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    const qs = q.toString();
    return qs === '' ? this.#path : `${this.#path}?${qs}`;
  }

  #list(): void {
    if (this.#closed) return;
    this.#lists++;
    this.#client
      .get<{ metadata?: { resourceVersion?: string }; items?: T[] | null }>(this.#url({}), this.#abort.signal)
      .then((res) => {
        if (this.#closed) return;
        if (res.body === undefined) throw new OrchApiError(`orchestrator API list ${this.#path} answered ${res.status}: ${statusMessage(res.status, res.errorText)}`, res.status);
        this.#objects.clear();
        for (const o of res.body.items ?? []) if (o?.metadata?.name !== undefined) this.#objects.set(objectKey(o), o);
        this.#rv = res.body.metadata?.resourceVersion ?? '';
        this.#synced = true;
        this.#error = undefined;
        this.#retry.reset();
        this.#onChange(this.#objects);
        this.#watch();
      })
      .catch((e: unknown) => this.#failed(e, () => this.#list()));
  }

  #failed(e: unknown, retry: () => void): void {
    if (this.#closed) return;
    const err = e instanceof OrchApiError ? e : new OrchApiError(`orchestrator API ${this.#path}: ${errorMessage(e)}`, 0, { cause: e });
    this.#error = err;
    this.#onError?.(err);
    this.#retry.schedule(retry);
  }

  #watch(): void {
    if (this.#closed) return;
    const started = Date.now();
    this.#runWatch().then(
      (next) => {
        if (this.#closed) return;
        if (next === 'relist') return this.#list();
        // A server that ends streams at once every time would make this spin.
        if (Date.now() - started > SHORT_WATCH_MS) this.#watch();
        else this.#retry.schedule(() => this.#watch());
      },
      (e: unknown) => this.#failed(e, () => this.#list()),
    );
  }

  async #runWatch(): Promise<'resume' | 'relist'> {
    this.#watches++;
    const params: Record<string, string> = { watch: 'true', allowWatchBookmarks: 'true' };
    if (this.#rv !== '') params['resourceVersion'] = this.#rv;
    const stream = await this.#client.watch(this.#url(params), this.#abort.signal);
    if (stream.status === 410) {
      await stream.text().catch(() => '');
      return 'relist';
    }
    if (stream.status !== 200) {
      const text = await stream.text().catch(() => '');
      throw new OrchApiError(`orchestrator API watch ${this.#path} answered ${stream.status}: ${statusMessage(stream.status, text)}`, stream.status);
    }
    this.#error = undefined;
    this.#retry.reset();
    for await (const ev of stream.events) {
      if (this.#closed) return 'resume';
      // Returning ends the loop, which closes the stream.
      if (this.#apply(ev) === 'relist') return 'relist';
    }
    return 'resume';
  }

  #apply(ev: WatchEvent): 'ok' | 'relist' {
    const o = ev.object;
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        if (o?.metadata?.name === undefined) return 'ok';
        if (o.metadata.resourceVersion !== undefined) this.#rv = o.metadata.resourceVersion;
        if (ev.type === 'DELETED') this.#objects.delete(objectKey(o));
        else this.#objects.set(objectKey(o), o as T);
        this.#onChange(this.#objects);
        return 'ok';
      }
      case 'BOOKMARK':
        if (o?.metadata?.resourceVersion !== undefined) this.#rv = o.metadata.resourceVersion;
        return 'ok';
      case 'ERROR':
        // 410 Gone: the version is older than the server keeps. Anything else: start over too.
        if (o?.code !== 410) {
          this.#error = new OrchApiError(`orchestrator API watch ${this.#path} reported: ${o?.message ?? 'an error'}`, o?.code ?? 0);
          this.#onError?.(this.#error);
        }
        return 'relist';
      case undefined:
      default:
        return 'ok';
    }
  }
}
