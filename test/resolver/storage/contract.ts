// The behaviour every dtab store shares (namerd's DtabStore contract), run against each kind.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { type Activity, type Dtab, type State, readDtab } from '../../../src/naming/index.js';
import { NullStatsReceiver } from '../../../src/service/stats/index.js';
import {
  DtabNamespaceAbsentError,
  DtabNamespaceExistsError,
  DtabVersionMismatchError,
  InvalidDtabNamespaceError,
  StorageUnavailableError,
} from '../../../src/resolver/storage/errors.js';
import type { DtabStore, StorageContext, VersionedDtab } from '../../../src/resolver/storage/types.js';

export function testContext(): StorageContext {
  return { log: pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' }), stats: NullStatsReceiver };
}

/** Resolves with the first state of `act` that `pred` accepts; rejects after `ms` with the last state seen. */
export function waitFor<T>(act: Activity<T>, pred: (s: State<T>) => boolean, ms = 10_000, what = 'state'): Promise<State<T>> {
  return new Promise((resolve, reject) => {
    let last: State<T> | undefined;
    let done = false;
    // Assigned after observe() returns, but read inside it when the first state matches at once.
    // eslint-disable-next-line prefer-const
    let sub: { close(): void } | undefined;
    const timer = setTimeout(() => {
      done = true;
      sub?.close();
      reject(new Error(`timed out after ${ms} ms waiting for ${what}; last: ${describe_(last)}`));
    }, ms);
    sub = act.observe((s) => {
      last = s;
      if (done || !pred(s)) return;
      done = true;
      clearTimeout(timer);
      // Closed on the next tick: observe() may still be running.
      queueMicrotask(() => sub?.close());
      resolve(s);
    });
    if (done) sub.close();
  });
}

function describe_(s: State<unknown> | undefined): string {
  if (s === undefined) return 'none';
  if (s.kind === 'failed') return `failed: ${s.error.message}`;
  if (s.kind === 'pending') return 'pending';
  const v = s.value;
  if (v instanceof Set) return `{${[...(v as Set<string>)].join(',')}}`;
  if (v === undefined) return 'absent';
  return `dtab ${(v as VersionedDtab).dtab.show}`;
}

/** Polls `cond` every 20 ms until it holds; rejects after `ms`. */
export async function until(cond: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The current dtab of `ns` once the store has one showing `text` (canonical form). */
export async function dtabShown(store: DtabStore, ns: string, text: string, ms = 10_000): Promise<VersionedDtab> {
  const want = readDtab(text).show;
  const s = await waitFor(store.observe(ns), (s) => s.kind === 'ok' && s.value?.dtab.show === want, ms, `${ns} = ${want}`);
  return (s as { value: VersionedDtab }).value;
}

export async function absent(store: DtabStore, ns: string, ms = 10_000): Promise<void> {
  await waitFor(store.observe(ns), (s) => s.kind === 'ok' && s.value === undefined, ms, `${ns} absent`);
}

export async function listed(store: DtabStore, pred: (names: ReadonlySet<string>) => boolean, ms = 10_000): Promise<ReadonlySet<string>> {
  const s = await waitFor(store.list(), (s) => s.kind === 'ok' && pred(s.value), ms, 'namespace list');
  return (s as { value: ReadonlySet<string> }).value;
}

export async function current(store: DtabStore, ns: string): Promise<VersionedDtab> {
  const s = await waitFor(store.observe(ns), (s) => s.kind === 'ok' && s.value !== undefined, 10_000, `${ns} present`);
  return (s as { value: VersionedDtab }).value;
}

const d = (text: string): Dtab => readDtab(text);

/** How a contract run gets stores: fresh, isolated data per call; `peer` opens a second client on a store's data. */
/**
 * Creates `w0`, `w1`, … every 10 ms (at most 400) until stopped, as a backend goes away and comes
 * back: records which creates were acknowledged, and counts those refused as unavailable.
 */
export function racingCreates(store: DtabStore): { readonly acked: string[]; failures(): number; stop(): Promise<void> } {
  const acked: string[] = [];
  let failures = 0;
  let stopped = false;
  const writes = (async () => {
    for (let i = 0; !stopped && i < 400; i++) {
      try {
        await store.create(`w${i}`, readDtab(`/w=>/${i}`));
        acked.push(`w${i}`);
      } catch (e) {
        assert.ok(e instanceof StorageUnavailableError, String(e));
        failures++;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    acked,
    failures: () => failures,
    stop: () => {
      stopped = true;
      return writes;
    },
  };
}

export interface StoreFactory {
  open(): Promise<DtabStore>;
  peer(store: DtabStore): Promise<DtabStore>;
}

let counter = 0;
const uniqueNs = (tag: string): string => `${tag}-${process.pid}-${++counter}`;

export function dtabStoreContract(name: string, factory: StoreFactory): void {
  describe(`${name}: DtabStore contract`, () => {
    const opened: DtabStore[] = [];
    const open = async (): Promise<DtabStore> => {
      const s = await factory.open();
      opened.push(s);
      return s;
    };
    const peer = async (s: DtabStore): Promise<DtabStore> => {
      const p = await factory.peer(s);
      if (p !== s) opened.push(p);
      return p;
    };
    after(async () => {
      await Promise.all(opened.map((s) => s.close()));
    });

    it('reports an absent namespace as undefined, and refuses to update or delete it', async () => {
      const store = await open();
      const ns = uniqueNs('absent');
      await absent(store, ns);
      await assert.rejects(store.update(ns, d('/a=>/b'), new Uint8Array(8)), DtabNamespaceAbsentError);
      await assert.rejects(store.delete(ns), DtabNamespaceAbsentError);
      const names = await listed(store, () => true);
      assert.equal(names.has(ns), false);
      await absent(store, ns);
    });

    it('creates a namespace once; a second create conflicts and changes nothing', async () => {
      const store = await open();
      const ns = uniqueNs('create');
      await store.create(ns, d('/svc => /#/io.prx.fs'));
      const v1 = await dtabShown(store, ns, '/svc=>/#/io.prx.fs');
      assert.ok(v1.version.length > 0);
      await assert.rejects(store.create(ns, d('/other => /x')), DtabNamespaceExistsError);
      const again = await current(store, ns);
      assert.equal(again.dtab.show, '/svc=>/#/io.prx.fs');
      assert.deepEqual(again.version, v1.version);
    });

    it('updates with the current version and refuses a stale one', async () => {
      const store = await open();
      const ns = uniqueNs('update');
      await store.create(ns, d('/a=>/b'));
      const v1 = await dtabShown(store, ns, '/a=>/b');
      await store.update(ns, d('/a=>/c'), v1.version);
      const v2 = await dtabShown(store, ns, '/a=>/c');
      assert.notDeepEqual(v2.version, v1.version);
      await assert.rejects(store.update(ns, d('/a=>/stale'), v1.version), DtabVersionMismatchError);
      await assert.rejects(store.update(ns, d('/a=>/junk'), new Uint8Array([1, 2, 3])), DtabVersionMismatchError);
      const now = await current(store, ns);
      assert.equal(now.dtab.show, '/a=>/c');
      assert.deepEqual(now.version, v2.version);
    });

    it('puts (upserts) without a version', async () => {
      const store = await open();
      const ns = uniqueNs('put');
      await store.put(ns, d('/a=>/one'));
      const v1 = await dtabShown(store, ns, '/a=>/one');
      await store.put(ns, d('/a=>/two'));
      const v2 = await dtabShown(store, ns, '/a=>/two');
      assert.notDeepEqual(v2.version, v1.version);
    });

    it('deletes a namespace, which can then be created again', async () => {
      const store = await open();
      const ns = uniqueNs('delete');
      await store.create(ns, d('/a=>/b'));
      await dtabShown(store, ns, '/a=>/b');
      await store.delete(ns);
      await absent(store, ns);
      await listed(store, (n) => !n.has(ns));
      await assert.rejects(store.delete(ns), DtabNamespaceAbsentError);
      await store.create(ns, d('/a=>/again'));
      await dtabShown(store, ns, '/a=>/again');
    });

    it('deletes with a version only while the namespace is still at it', async () => {
      const store = await open();
      const ns = uniqueNs('cas-delete');
      await store.create(ns, d('/a=>/b'));
      const v1 = await dtabShown(store, ns, '/a=>/b');
      await store.update(ns, d('/a=>/c'), v1.version);
      const v2 = await dtabShown(store, ns, '/a=>/c');
      await assert.rejects(store.delete(ns, v1.version), DtabVersionMismatchError);
      await assert.rejects(store.delete(ns, new Uint8Array([1, 2, 3])), DtabVersionMismatchError);
      assert.equal((await current(store, ns)).dtab.show, '/a=>/c');
      await store.delete(ns, v2.version);
      await absent(store, ns);
      await assert.rejects(store.delete(ns, v2.version), DtabNamespaceAbsentError);
    });

    it('lists namespaces as they come and go', async () => {
      const store = await open();
      const a = uniqueNs('list');
      const b = uniqueNs('list');
      await store.create(a, d('/a=>/b'));
      await store.put(b, d('/a=>/c'));
      await listed(store, (n) => n.has(a) && n.has(b));
      await store.delete(a);
      const names = await listed(store, (n) => !n.has(a));
      assert.ok(names.has(b));
    });

    it('observe delivers every change of its own writes, in order, without repeats', async () => {
      const store = await open();
      const ns = uniqueNs('observe');
      const seen: string[] = [];
      const sub = store.observe(ns).observe((s) => {
        if (s.kind === 'ok') seen.push(s.value === undefined ? '-' : s.value.dtab.show);
        else if (s.kind === 'failed') seen.push(`failed: ${s.error.message}`);
      });
      try {
        await absent(store, ns);
        await store.create(ns, d('/a=>/1'));
        await dtabShown(store, ns, '/a=>/1');
        const v = await current(store, ns);
        await store.update(ns, d('/a=>/2'), v.version);
        await dtabShown(store, ns, '/a=>/2');
        await store.put(ns, d('/a=>/3'));
        await dtabShown(store, ns, '/a=>/3');
        await store.delete(ns);
        await absent(store, ns);
        // Let late watch events arrive: they must not replay anything.
        await new Promise((r) => setTimeout(r, 300));
      } finally {
        sub.close();
      }
      assert.deepEqual(seen, ['-', '/a=>/1', '/a=>/2', '/a=>/3', '-']);
    });

    it("sees another client's writes through its watch", async () => {
      const store = await open();
      const other = await peer(store);
      const ns = uniqueNs('peer');
      await absent(store, ns);
      await other.create(ns, d('/from=>/peer'));
      const v1 = await dtabShown(store, ns, '/from=>/peer');
      await store.update(ns, d('/from=>/store'), v1.version);
      await dtabShown(other, ns, '/from=>/store');
      await other.delete(ns);
      await absent(store, ns);
      await listed(store, (n) => !n.has(ns));
    });

    it('lets exactly one of N concurrent updates from the same version win', async () => {
      const store = await open();
      const other = await peer(store);
      const ns = uniqueNs('race');
      await store.create(ns, d('/a=>/0'));
      const v = await current(store, ns);
      await current(other, ns);
      const n = 8;
      const results = await Promise.allSettled(
        Array.from({ length: n }, (_, i) => (i % 2 === 0 ? store : other).update(ns, d(`/a=>/${i + 1}`), v.version)),
      );
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      assert.equal(won.length, 1, `winners: ${won.join(',')}`);
      for (const r of results) {
        if (r.status === 'rejected') assert.ok(r.reason instanceof DtabVersionMismatchError, String(r.reason));
      }
      const winner = won[0] as number;
      await dtabShown(store, ns, `/a=>/${winner + 1}`);
      await dtabShown(other, ns, `/a=>/${winner + 1}`);
    });

    it('loses no write when N writers append by compare-and-set, retrying on mismatch', async () => {
      const store = await open();
      const other = await peer(store);
      const ns = uniqueNs('append');
      await store.create(ns, d('/base=>/0'));
      const writers = 6;
      await Promise.all(
        Array.from({ length: writers }, async (_, i) => {
          const s = i % 2 === 0 ? store : other;
          for (let attempt = 0; attempt < 300; attempt++) {
            const cur = await current(s, ns);
            try {
              await s.update(ns, cur.dtab.append(d(`/w${i}=>/x`).dentries[0]!), cur.version);
              return;
            } catch (e) {
              if (!(e instanceof DtabVersionMismatchError)) throw e;
              await new Promise((r) => setTimeout(r, 2 + Math.random() * 10));
            }
          }
          throw new Error(`writer ${i} never won`);
        }),
      );
      const final = await waitFor(store.observe(ns), (s) => s.kind === 'ok' && s.value !== undefined && s.value.dtab.size === writers + 1);
      const text = (final as { value: VersionedDtab }).value.dtab.show;
      for (let i = 0; i < writers; i++) assert.ok(text.includes(`/w${i}=>/x`), `${text} lacks writer ${i}`);
    });

    it('refuses namespaces that cannot be a key', async () => {
      const store = await open();
      for (const bad of ['', 'a/b', '..', 'tab\there']) {
        await assert.rejects(store.create(bad, d('/a=>/b')), InvalidDtabNamespaceError, JSON.stringify(bad));
        await assert.rejects(store.put(bad, d('/a=>/b')), InvalidDtabNamespaceError, JSON.stringify(bad));
      }
    });

    it('reports itself healthy while the backend answers', async () => {
      const store = await open();
      await listed(store, () => true);
      assert.deepEqual(store.health(), { ok: true });
    });
  });
}
