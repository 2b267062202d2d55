import {
  type Activity, BoundName, ConfiguredNamersInterpreter, Dtab, type NameTree, type Namer, type Path, mapTree, readPath,
} from '../../naming/index.js';

/**
 * `path` bound through the `/$/` namer with an empty dtab (Linkerd's global interpreter), every
 * leaf renamed to `prefix ++ path`. One shared activity: its lookups run while anything observes it.
 */
export function bindThroughSystem(system: Namer, prefix: Path, pathText: string): Activity<NameTree<BoundName>> {
  const path = readPath(pathText);
  const id = prefix.concat(path);
  const rename = (b: BoundName): BoundName => new BoundName(id, b.addr, b.residual);
  return new ConfiguredNamersInterpreter([], { system })
    .bind(Dtab.empty, path)
    .map((tree) => mapTree(tree, rename));
}
