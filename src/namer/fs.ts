import { existsSync, statSync } from 'node:fs';
import { z } from 'zod';
import type { Var} from '../naming/index.js';
import {
  Activity, type Addr, AddrNeg, AddrPending, type Address, BoundName, Neg, Path, type State, addrBound,
  addrEquals, addrFailed, address, leaf, type Name, type NameTree,
} from '../naming/index.js';
import { type FsSnapshot, watchDirectory } from './fs-snapshot.js';
import { addIssue, namerShape, lazySchema } from '../config/index.js';
import { type EnumeratingNamer, type RunningNamer, defineNamer, sameLookup } from './namer-kind.js';

/**
 * `io.prx.fs`: one file per name under `rootDir` (subdirectories nest: `/#/io.prx.fs/a/b` is the
 * file `a/b`, and anything after a file is the residual). Each line is `host port` or
 * `host port * weight`; `#` starts a comment. Files are watched: edits, new files, deletions and
 * renames apply live, once settled; a file caught empty or malformed while being written keeps its
 * last sound addresses until it settles. A missing file is Neg; a malformed line fails the name's
 * address with the line in the message.
 */
export const fsNamerSchema = lazySchema(() => z.strictObject({
  ...namerShape('io.prx.fs'),
  rootDir: z.string().min(1).superRefine((dir, ctx) => {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      addIssue(ctx, [], 'directory does not exist', { value: dir });
    }
  }),
}));
export type FsNamerConfig = z.output<typeof fsNamerSchema>;

export class FsNamer implements EnumeratingNamer, RunningNamer {
  readonly #prefix: Path;
  readonly #snapshot: Var<State<FsSnapshot>>;
  // Address vars per file, so every binding of one file shares one parse of its contents.
  readonly #addrs = new Map<string, Var<Addr>>();

  constructor(rootDir: string, prefix: Path, onError: (e: unknown) => void = () => {}) {
    this.#prefix = prefix;
    // No address, or a malformed line, right after a change is taken for a write in progress.
    this.#snapshot = watchDirectory(rootDir, onError, { suspect: noSoundAddress });
  }

  lookup(path: Path): Activity<NameTree<Name>> {
    return new Activity(
      this.#snapshot
        .map((s): State<NameTree<Name>> => (s.kind === 'ok' ? { kind: 'ok', value: this.#resolve(s.value, path) } : s))
        .dedup(sameLookup),
    );
  }

  #resolve(snap: FsSnapshot, path: Path): NameTree<Name> {
    let rel = '';
    for (let i = 0; i < path.size; i++) {
      rel = i === 0 ? (path.elems[0] as string) : `${rel}/${path.elems[i] as string}`;
      const entry = snap.get(rel);
      if (!entry) return Neg;
      if (entry.kind === 'file') {
        return leaf(new BoundName(this.#prefix.concat(path.take(i + 1)), this.#addrOf(rel), path.drop(i + 1)));
      }
    }
    return Neg;
  }

  #addrOf(rel: string): Var<Addr> {
    let v = this.#addrs.get(rel);
    if (!v) {
      v = this.#snapshot
        .map((s): Addr => {
          if (s.kind === 'pending') return AddrPending;
          if (s.kind === 'failed') return addrFailed(s.error);
          const entry = s.value.get(rel);
          return entry?.kind === 'file' ? parseAddresses(rel, entry.text) : AddrNeg;
        })
        .dedup(addrEquals);
      this.#addrs.set(rel, v);
    }
    return v;
  }

  boundNames(): Activity<Path[]> {
    return new Activity(
      this.#snapshot.map((s): State<Path[]> => {
        if (s.kind !== 'ok') return s;
        const names: Path[] = [];
        for (const [rel, e] of s.value) if (e.kind === 'file') names.push(this.#prefix.concat(Path.of(...rel.split('/'))));
        names.sort((a, b) => (a.show < b.show ? -1 : 1));
        return { kind: 'ok', value: names };
      }),
    );
  }

  /** The snapshot var is lazy: with no observer left it holds no watcher, so there is nothing to do. */
  close(): void {
    this.#addrs.clear();
  }
}

/** A file's text that names no address or has a malformed line (see watchDirectory's `suspect`). */
function noSoundAddress(text: string): boolean {
  const addr = parseAddresses('', text);
  return addr.kind !== 'bound' || addr.addresses.length === 0;
}

const PORT = /^[0-9]{1,5}$/;

/** Parses a name's file: `host port` or `host port * weight` per line; `#` comments. */
export function parseAddresses(name: string, text: string): Addr {
  const addresses: Address[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string;
    const hash = raw.indexOf('#');
    const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
    if (line === '') continue;
    const parts = line.split(/\s+/);
    const [host = '', portText = '', star, weightText] = parts;
    const port = PORT.test(portText) ? Number(portText) : 0;
    const weight = weightText === undefined ? 1 : Number(weightText);
    const wellFormed =
      (parts.length === 2 || (parts.length === 4 && star === '*')) &&
      port >= 1 && port <= 65535 &&
      Number.isFinite(weight) && weight >= 0;
    if (!wellFormed) {
      return addrFailed(new Error(`malformed address in ${name} line ${i + 1}: '${raw.trim()}'`));
    }
    addresses.push(address(host, port, weight));
  }
  return addrBound(addresses);
}

defineNamer({
  kind: 'io.prx.fs',
  schema: fsNamerSchema,
  create: (cfg, ctx) =>
    new FsNamer(cfg.rootDir, ctx.prefix, (e) => ctx.log.warn({ err: e, rootDir: cfg.rootDir }, 'fs namer cannot read its directory')),
});
