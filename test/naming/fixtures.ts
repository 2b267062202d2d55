// Test namers from the conformance notes: FakeNamer mounted at /#/fake and Finagle's class
// namer `com.twitter.finagle.naming.testnamer`.
import {
  Activity, BoundName, ConfiguredNamersInterpreter, Empty, Fail, Neg, Path, SystemNamer, Var,
  address, addrBound, leaf, readPath, type Name, type NameTree, type Namer,
} from '../../src/naming/index.js';

export class FakeNamer implements Namer {
  lookup(rest: Path): Activity<NameTree<Name>> {
    const [k, ...tail] = rest.elems;
    if (k === undefined || k === 'neg') return Activity.value(Neg);
    if (k === 'fail') return Activity.value(Fail);
    if (k === 'empty') return Activity.value(Empty);
    if (k === 'error') return Activity.exception(new Error(`fake namer error: ${Path.of('#', 'fake').concat(rest).show}`));
    if (k === 'pending') return Activity.pending();
    if (k === 'alias') return Activity.value(leaf(Path.of(...tail)));
    const id = Path.of('#', 'fake', k);
    return Activity.value(leaf(new BoundName(id, Var.value(addrBound([address('10.0.0.1', 1)])), Path.of(...tail))));
  }
}

const testNamer: Namer = {
  lookup: () => Activity.value(leaf(readPath('/rewritten/by/test/namer'))),
};

/** Any host name "resolves" to itself, so leaves under /$/inet always carry a bound address. */
const fakeDns = (host: string, port: number) => Var.value(addrBound([address(host, port)]));

export function conformanceInterpreter(maxDepth?: number): ConfiguredNamersInterpreter {
  return new ConfiguredNamersInterpreter([{ prefix: Path.of('#', 'fake'), namer: new FakeNamer() }], {
    system: new SystemNamer({
      resolveHost: fakeDns,
      kinds: new Map([['com.twitter.finagle.naming.testnamer', testNamer]]),
    }),
    ...(maxDepth !== undefined ? { maxDepth } : {}),
  });
}
