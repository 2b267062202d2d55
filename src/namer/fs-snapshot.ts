import { type Dirent, type FSWatcher, watch } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type State, Pending, Var, failed, ok, utf8ToBinary } from '../naming/index.js';

/** A directory tree's regular files (contents) and directories, keyed by `a/b/c` (binary elems). */
export type FsSnapshot = ReadonlyMap<string, { readonly kind: 'dir' } | { readonly kind: 'file'; readonly text: string }>;

let openWatchers = 0;

/** Directory watchers currently open across all snapshots (tests prove none leak). */
export function openDirectoryWatchers(): number {
  return openWatchers;
}

/** Debounce for bursts of watch events (an editor's save is several). */
const SETTLE_MS = 15;
/** A safety rescan catches events the OS dropped and a root directory that reappears. */
const RESCAN_MS = 5000;

/**
 * A live snapshot of `rootDir`: read on first observation, re-read when any watched directory
 * changes (every directory of the tree is watched, so new subdirectories are picked up), and
 * released — watchers and timers closed — when the last observer leaves. Hidden entries (names
 * starting with `.`, e.g. editor swap files) are ignored.
 */
export function watchDirectory(rootDir: string, onError: (e: unknown) => void): Var<State<FsSnapshot>> {
  return Var.async<State<FsSnapshot>>(Pending, (set) => {
    const watchers = new Map<string, FSWatcher>();
    let closed = false;
    let scanning = false;
    let rescanWanted = false;
    let settle: NodeJS.Timeout | undefined;
    let last: string | undefined;

    const schedule = (): void => {
      if (closed || settle) return;
      settle = setTimeout(() => {
        settle = undefined;
        void rescan();
      }, SETTLE_MS);
      settle.unref();
    };

    const syncWatchers = (dirs: Set<string>): void => {
      for (const [dir, w] of watchers) {
        if (!dirs.has(dir)) {
          w.close();
          openWatchers--;
          watchers.delete(dir);
        }
      }
      for (const dir of dirs) {
        if (watchers.has(dir)) continue;
        try {
          const w = watch(dir, { persistent: false }, schedule);
          openWatchers++;
          w.on('error', () => {
            w.close();
            if (watchers.delete(dir)) openWatchers--;
            schedule();
          });
          watchers.set(dir, w);
        } catch {
          // The directory vanished between scan and watch; the next scan reconciles.
          schedule();
        }
      }
    };

    const rescan = async (): Promise<void> => {
      if (scanning) {
        rescanWanted = true;
        return;
      }
      scanning = true;
      try {
        do {
          rescanWanted = false;
          const dirs = new Set<string>();
          let next: Exclude<State<FsSnapshot>, { kind: 'pending' }>;
          try {
            next = ok(await scan(rootDir, dirs));
          } catch (e) {
            next = failed(new Error(`cannot read directory ${rootDir}: ${(e as Error).message}`));
            onError(e);
          }
          if (closed) return;
          syncWatchers(dirs);
          const fingerprint = next.kind === 'ok' ? fingerprintOf(next.value) : `!${next.error.message}`;
          if (fingerprint !== last) {
            last = fingerprint;
            set(next);
          }
        } while (rescanWanted && !closed);
      } finally {
        scanning = false;
      }
    };

    const poll = setInterval(() => void rescan(), RESCAN_MS);
    poll.unref();
    void rescan();
    return {
      close() {
        closed = true;
        clearInterval(poll);
        if (settle) clearTimeout(settle);
        for (const w of watchers.values()) w.close();
        openWatchers -= watchers.size;
        watchers.clear();
      },
    };
  });
}

async function scan(rootDir: string, dirs: Set<string>): Promise<FsSnapshot> {
  const out = new Map<string, { kind: 'dir' } | { kind: 'file'; text: string }>();
  const walk = async (dir: string, rel: string): Promise<void> => {
    dirs.add(dir);
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      if (rel === '') throw e;
      return; // a subdirectory removed mid-scan
    }
    for (const ent of entries) {
      if (ent.name.startsWith('.')) continue;
      const key = rel === '' ? utf8ToBinary(ent.name) : `${rel}/${utf8ToBinary(ent.name)}`;
      const full = join(dir, ent.name);
      if (ent.isDirectory()) {
        out.set(key, { kind: 'dir' });
        await walk(full, key);
      } else if (ent.isFile()) {
        try {
          out.set(key, { kind: 'file', text: await readFile(full, 'utf8') });
        } catch {
          // removed between readdir and read: absent in this snapshot
        }
      }
    }
  };
  await walk(rootDir, '');
  return out;
}

function fingerprintOf(s: FsSnapshot): string {
  const parts: string[] = [];
  for (const [k, v] of [...s].sort((a, b) => (a[0] < b[0] ? -1 : 1))) parts.push(v.kind === 'dir' ? `${k}/` : `${k}\0${v.text}`);
  return parts.join('\0\0');
}
