import {
  type Activity,
  type Addr,
  type Address,
  type BoundName,
  type Dtab,
  type NameTree,
  type Path,
  type State,
  Var,
  addrJson,
  delegateTreeJson,
  firstAddr,
  leavesOf,
} from '../../naming/index.js';
import type { ResolverNaming } from '../naming.js';
import type { VersionedDtab } from '../storage/types.js';
import type { DtabCodec } from './dtab-codec.js';
import { PENDING_RENDER, type Rendered, renderedError, renderedLine } from './watch-stream.js';

// The HTTP controller's bodies, each as a live `Var<Rendered>`: a watch streams its lines, a
// plain GET answers with the first one. JSON shapes are Linkerd's (see the delegator's).

/** Metadata key carrying an endpoint's load-balancing weight when it is not 1 (Linkerd's name). */
export const WEIGHT_META = 'endpoint_addr_weight';

/** An address set as JSON: `{"type":"bound","addrs":[{"ip","port","meta"}],"meta":{}}`, `{"type":"neg"}`, … */
export function addrToJson(addr: Addr): unknown {
  const json = addrJson(addr);
  if (addr.kind !== 'bound' || json.type !== 'bound') return json;
  addr.addresses.forEach((a: Address, i) => {
    const entry = json.addrs[i];
    if (entry && a.weight !== 1) entry.meta[WEIGHT_META] = a.weight;
  });
  return json;
}

/**
 * A bound tree as JSON without `path` fields (`/api/1/bind`): a leaf is
 * `{"type":"leaf","bound":{"addr":…,"id":…,"path":<residual>}}`; `alt` and `union` nest their
 * branches; `neg`, `fail` and `empty` are bare. `addrs` are the leaves' addresses, depth first.
 */
export function boundTreeJson(tree: NameTree<BoundName>, addrs: readonly Addr[]): unknown {
  let next = 0;
  const render = (t: NameTree<BoundName>): unknown => {
    switch (t.type) {
      case 'leaf': {
        const addr = addrs[next++];
        const bound = { addr: addr === undefined ? { type: 'pending' } : addrToJson(addr), id: t.value.idStr, path: t.value.residual.show };
        return { type: 'leaf', bound };
      }
      case 'alt':
        return { type: 'alt', alt: t.trees.map(render) };
      case 'union':
        return { type: 'union', union: t.trees.map((w) => ({ weight: w.weight, tree: render(w.tree) })) };
      case 'neg':
      case 'fail':
      case 'empty':
        return { type: t.type };
    }
  };
  return render(tree);
}

/** A JSON document per ok state; pending says nothing; a failure is the stream's last word. */
function fromStates<T>(states: Var<State<T>>, render: (value: T) => Rendered): Var<Rendered> {
  return states.map((s): Rendered => {
    switch (s.kind) {
      case 'pending':
        return PENDING_RENDER;
      case 'failed':
        return renderedError(s.error);
      case 'ok':
        return render(s.value);
    }
  });
}

/** `/api/1/dtabs`: the namespaces as a sorted JSON array. */
export function renderNamespaces(list: Activity<ReadonlySet<string>>): Var<Rendered> {
  return fromStates(list.states, (names) => renderedLine(JSON.stringify([...names].sort())));
}

/** `/api/1/dtabs/<ns>?watch=true`: each version in `codec`; nothing while the namespace is absent. */
export function renderDtab(dtab: Activity<VersionedDtab | undefined>, codec: DtabCodec): Var<Rendered> {
  return fromStates(dtab.states, (v) => (v === undefined ? PENDING_RENDER : renderedLine(codec.write(v.dtab))));
}

/**
 * `/api/1/bind`: the bound tree with each leaf's current address. The tree is shown once every
 * leaf's address is known (as Linkerd waits for a non-pending address) and again whenever the
 * tree or an address changes.
 */
export function renderBoundTree(tree: Activity<NameTree<BoundName>>): Var<Rendered> {
  return tree.states.flatMap((s): Var<Rendered> => {
    if (s.kind === 'pending') return Var.value(PENDING_RENDER);
    if (s.kind === 'failed') return Var.value(renderedError(s.error));
    const leaves = leavesOf(s.value);
    return Var.collect(leaves.map((b) => b.addr)).map((addrs): Rendered => {
      if (addrs.some((a) => a.kind === 'pending')) return PENDING_RENDER;
      return renderedLine(JSON.stringify(boundTreeJson(s.value, addrs)));
    });
  });
}

/** `/api/1/addr` and `/api/1/resolve`: the address set. */
export function renderAddr(addr: Activity<Addr>): Var<Rendered> {
  return fromStates(addr.states, (a) => renderedLine(JSON.stringify(addrToJson(a))));
}

/** `/api/1/bound-names`: the names as a JSON array. */
export function renderBoundNames(names: Activity<string[]>): Var<Rendered> {
  return fromStates(names.states, (list) => renderedLine(JSON.stringify(list)));
}

/**
 * `/api/1/delegate`: the delegation tree (the delegator's JSON) of `path` through the stored dtab
 * of `ns` followed by `extra`, explained again whenever the stored dtab changes. A delegation
 * still waiting on namers is abandoned when nobody watches any more.
 */
export function renderDelegation(naming: ResolverNaming, ns: string, extra: Dtab, path: Path): Var<Rendered> {
  return naming.dtab(ns).states.flatMap((s): Var<Rendered> => {
    if (s.kind === 'pending') return Var.value(PENDING_RENDER);
    if (s.kind === 'failed') return Var.value(renderedError(s.error));
    const dtab = s.value.concat(extra);
    return Var.async<Rendered>(PENDING_RENDER, (set) => {
      const ac = new AbortController();
      naming
        .delegateWith(dtab, path, ac.signal)
        .then((tree) => delegateTreeJson(tree, { resolveAddr: (b) => firstAddr(b, ac.signal) }))
        .then(
          (json) => set(renderedLine(JSON.stringify(json))),
          (e: unknown) => {
            if (!ac.signal.aborted) set(renderedError(e));
          },
        );
      return { close: () => ac.abort() };
    });
  });
}

