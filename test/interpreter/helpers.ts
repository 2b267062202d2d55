import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Activity, type Addr, BoundName, type Closable, Dtab, MutableVar, type NameTree, type Namer, Neg, type Path, type State, type Var,
  addrBound, address, leaf, readDtab, readPath, showTree,
} from '../../src/naming/index.js';

/** The first value `observe` delivers that satisfies `f` (rejects after `ms`). */
export function until<T>(observe: (cb: (v: T) => void) => Closable, f: (v: T) => boolean, ms = 4000): Promise<T> {
  return new Promise((resolve, reject) => {
    let last: T | undefined;
    // eslint-disable-next-line prefer-const -- read inside observe() before assignment
    let sub: Closable | undefined;
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      sub?.close();
      reject(new Error(`condition not reached in ${ms} ms; last value: ${describe(last)}`));
    }, ms);
    sub = observe((v) => {
      last = v;
      if (done || !f(v)) return;
      done = true;
      clearTimeout(timer);
      queueMicrotask(() => sub?.close());
      resolve(v);
    });
  });
}

function describe(v: unknown): string {
  if (v !== null && typeof v === 'object' && 'kind' in v) {
    const s = v as State<NameTree<BoundName>>;
    if (s.kind === 'ok' && typeof s.value === 'object' && s.value !== null && 'type' in s.value) return showBound(s);
    if (s.kind === 'failed') return `failed: ${s.error.message}`;
  }
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/** Polls `f` until it returns true (rejects after `ms`). */
export async function eventually(f: () => boolean, ms = 4000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached in ${ms} ms`);
    await sleep(10);
  }
}

/** A bound tree's state as text: `ok /#/a/b` (ids, residuals after a space), `pending`, `failed: …`. */
export function showBound(s: State<NameTree<BoundName>>): string {
  if (s.kind === 'pending') return 'pending';
  if (s.kind === 'failed') return `failed: ${s.error.message}`;
  return showTree(s.value, (b) => `${b.idStr}${b.residual.isEmpty ? '' : ' ' + b.residual.show}`);
}

/** Waits for a state of `act` whose text form is `expected`. */
export function untilShown(act: Activity<NameTree<BoundName>>, expected: string, ms?: number): Promise<State<NameTree<BoundName>>> {
  return until((cb) => act.observe(cb), (s) => showBound(s) === expected, ms);
}

/** An address set as text: `127.0.0.1:80*1 …`, or its kind. */
export function showAddr(a: Addr): string {
  if (a.kind === 'bound') return a.addresses.map((x) => `${x.host}:${x.port}*${x.weight}`).join(' ');
  if (a.kind === 'failed') return `failed: ${a.error.message}`;
  return a.kind;
}

/** Waits for an address set whose text form is `expected`. */
export function untilAddr(addr: Var<Addr>, expected: string, ms?: number): Promise<Addr> {
  return until((cb) => addr.observe(cb), (a) => showAddr(a) === expected, ms);
}

/** The only leaf of an ok tree. */
export function onlyLeaf(s: State<NameTree<BoundName>>): BoundName {
  if (s.kind !== 'ok' || s.value.type !== 'leaf') throw new Error(`expected one leaf, got ${showBound(s)}`);
  return s.value.value;
}

export const PREFIX = readPath('/#/io.prx.test');

/**
 * An in-memory namer: `/#/io.prx.test/<name>` is a leaf whose addresses the test sets, each
 * `host:port`, or `host:port@node` for an address with `nodeName` metadata (as the orch namer sets).
 */
export class MapNamer implements Namer {
  readonly #addrs = new Map<string, MutableVar<Addr>>();

  set(name: string, addrs: readonly string[]): void {
    const addr = addrBound(addrs.map((text) => {
      const [a = '', node] = text.split('@');
      const i = a.lastIndexOf(':');
      return address(a.slice(0, i).replace(/^\[|\]$/g, ''), Number(a.slice(i + 1)), 1, node === undefined ? undefined : { nodeName: node });
    }));
    const v = this.#addrs.get(name);
    if (v) v.update(addr);
    else this.#addrs.set(name, new MutableVar(addr));
  }

  lookup(path: Path): Activity<NameTree<BoundName>> {
    const v = this.#addrs.get(path.elems[0] ?? '');
    if (!v) return Activity.value(Neg);
    return Activity.value(leaf(new BoundName(PREFIX.concat(path.take(1)), v, path.drop(1))));
  }
}

/** What the silent-cut test needs of a resolver link and the resolver behind it. */
export interface SilentCut {
  readonly namer: { bind(name: string, addr: Addr): unknown };
  readonly putDtab: (text: string) => Promise<void>;
  readonly relay: { blackhole(): void; connections(): number };
  readonly interp: { bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> };
  /** The first bind watch's status (links name its key differently). */
  readonly bindStatus: () => { readonly lastError: unknown; readonly state: string; readonly reconnects: number } | undefined;
  readonly minPeriodMs: number;
  readonly closeTimeoutMs: number;
}

/**
 * The liveness test every resolver link passes: bound through a relay, the relay goes silent
 * without closing, the dtab changes meanwhile; the link must notice within closeTimeoutMs + one
 * period (plus a period of scheduling slack on a shared machine), keep its last good tree while
 * down, reconnect, and deliver the change made during the cut.
 */
export async function assertSilentCutRecovers(c: SilentCut): Promise<void> {
  c.namer.bind('blue', addrBound([address('127.0.0.1', 1001)]));
  c.namer.bind('green', addrBound([address('127.0.0.1', 1002)]));
  const seen: string[] = [];
  const sub = c.interp.bind(Dtab.empty, readPath('/svc/app')).observe((s) => seen.push(showBound(s)));
  try {
    await c.putDtab('/svc => /#/test;/svc/app => /#/test/blue');
    await eventually(() => seen.at(-1) === '/#/test/blue', 4000, 'bound to blue');
    // Binds and addresses share one connection.
    assert.equal(c.relay.connections(), 1);

    c.relay.blackhole();
    const cutAt = Date.now();
    await c.putDtab('/svc => /#/test;/svc/app => /#/test/green');
    await eventually(() => (c.bindStatus()?.lastError ?? null) !== null, 5000, 'the silent link noticed');
    const detectedMs = Date.now() - cutAt;
    assert.ok(detectedMs <= c.closeTimeoutMs + 2 * c.minPeriodMs + 500, `detected after ${detectedMs} ms`);
    assert.equal(seen.at(-1), '/#/test/blue', 'the last good tree stays while the link is down');
    await eventually(() => seen.at(-1) === '/#/test/green', 5000, 'the update made during the cut arrives');
    assert.ok(c.relay.connections() >= 2, 'a new connection was made');
    assert.equal(c.bindStatus()?.state, 'streaming');
    assert.ok((c.bindStatus()?.reconnects ?? 0) >= 1);
  } finally {
    sub.close();
  }
}

/** What the binding check needs of a resolver link and the resolver behind it. */
export interface LinkBinding {
  readonly namer: { bind(name: string, addr: Addr): { update(a: Addr): void } };
  readonly putDtab: (text: string) => Promise<void>;
  readonly interp: { bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> };
}

/**
 * The binding every resolver link must do: a name bound through the resolver (residual kept),
 * its addresses and their weights live, a dtab change, and a request dtab applied. Returns with
 * the binding and its address watch still observed (close them to release the watches).
 */
export async function assertBindsThroughResolver(c: LinkBinding): Promise<Closable> {
  const web = c.namer.bind('web', addrBound([address('127.0.0.1', 8080)]));
  c.namer.bind('api', addrBound([address('127.0.0.1', 9090)]));
  const act = c.interp.bind(Dtab.empty, readPath('/svc/web/rest'));
  const seen: string[] = [];
  const sub = act.observe((s) => seen.push(showBound(s)));
  await eventually(() => seen.at(-1) === '/#/test/web /rest', 4000, 'bound');
  const addrs: string[] = [];
  const addrSub = onlyLeaf(act.states.sample()).addr.observe((a) => addrs.push(showAddr(a)));
  await eventually(() => addrs.at(-1) === '127.0.0.1:8080*1', 4000, 'addresses');
  web.update(addrBound([address('127.0.0.1', 8080), address('127.0.0.1', 8081, 3)]));
  await eventually(() => addrs.at(-1) === '127.0.0.1:8080*1 127.0.0.1:8081*3', 4000, 'namer change with weight');

  await c.putDtab('/svc => /#/test;/svc/web => /#/test/api');
  await eventually(() => seen.at(-1) === '/#/test/api /rest', 4000, 'dtab change');

  const localSeen: string[] = [];
  const localSub = c.interp.bind(readDtab('/svc/web => /#/test/web'), readPath('/svc/web')).observe((s) => localSeen.push(showBound(s)));
  await eventually(() => localSeen.at(-1) === '/#/test/web', 4000, 'request dtab');
  localSub.close();
  return {
    close: () => {
      addrSub.close();
      sub.close();
    },
  };
}
