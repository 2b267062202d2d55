import { type Dirent, type FSWatcher, watch } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type State, Pending, Var, failed, ok, utf8ToBinary } from '../naming/index.js';

/** A directory tree's regular files (contents) and directories, keyed by `a/b/c` (binary elems). */
export type FsSnapshot = ReadonlyMap<string, { readonly kind: 'dir' } | { readonly kind: 'file'; readonly text: string }>;

let openWatchers = 0;

/** Directory watchers currently open across all snapshots (tests prove none leak). */
export function openDirectoryWatchers(): number {
  return openWatchers;
}

/**
 * Changes settle before they are read: a rescan waits until no watch event came for this long
 * (an editor's save, or a program rewriting a file in place, is a burst of events) ...
 */
export const SETTLE_MS = 50;
/** ... but never longer than this after the burst's first event, so a file rewritten non-stop still updates. */
const MAX_SETTLE_MS = 500;
/**
 * A file that keeps reading empty or malformed (or stays away) this long after it did not is
 * believed even if it still looks in the middle of a write (a clock skewed into the future).
 */
const MAX_HOLD_MS = 2000;
/** A safety rescan catches events the OS dropped and a root directory that reappears. */
const RESCAN_MS = 5000;

/** Options of {@link watchDirectory}. */
export interface WatchDirectoryOptions {
  /**
   * Whether a file's text cannot be what its writer meant (empty, malformed): read right after a
   * change such text is taken for a write in progress (see {@link watchDirectory}).
   */
  readonly suspect?: (text: string) => boolean;
}

type FileEntry = { readonly kind: 'file'; readonly text: string };
type Entry = { readonly kind: 'dir' } | FileEntry;
/** A scan: the snapshot, and each file's modification time when it was read. */
interface Scan {
  readonly entries: Map<string, Entry>;
  readonly mtimes: Map<string, number>;
}

/**
 * A live snapshot of `rootDir`: read on first observation, re-read when any watched directory
 * changes (every directory of the tree is watched, so new subdirectories are picked up), and
 * released — watchers and timers closed — when the last observer leaves. Hidden entries (names
 * starting with `.`, e.g. editor swap files) are ignored.
 *
 * A file rewritten in place passes through states its writer never meant (truncated to empty,
 * half written). So changes settle first ({@link SETTLE_MS} after the last event), and a file
 * that had a sound text and now reads `suspect` or is gone keeps its last sound text while it is
 * being written — modified within the last {@link SETTLE_MS} (or gone for less) — and is read
 * again once that has passed; only what stays is believed. Atomic renames never show such states.
 */
export function watchDirectory(rootDir: string, onError: (e: unknown) => void, options: WatchDirectoryOptions = {}): Var<State<FsSnapshot>> {
  const suspect = options.suspect ?? ((text: string) => text.trim() === '');
  return Var.async<State<FsSnapshot>>(Pending, (set) => {
    const watchers = new Map<string, FSWatcher>();
    let closed = false;
    let scanning = false;
    let rescanWanted = false;
    let settle: NodeJS.Timeout | undefined;
    /** The latest time the armed rescan may run. */
    let deadline = Infinity;
    let last: string | undefined;
    /** The snapshot last published (sound texts, and the held ones). */
    let published: ReadonlyMap<string, Entry> = new Map();
    /** Since when each held file has read suspect or been gone. */
    const heldSince = new Map<string, number>();

    // One timer, re-armed on each event: a rescan SETTLE_MS after the last event of a burst, at
    // the latest MAX_SETTLE_MS after its first (or `latest`, for a held file's second look).
    const arm = (latest: number): void => {
      if (closed) return;
      const now = Date.now();
      deadline = Math.min(deadline, latest);
      if (settle) clearTimeout(settle);
      settle = setTimeout(
        () => {
          settle = undefined;
          deadline = Infinity;
          void rescan();
        },
        Math.max(0, Math.min(now + SETTLE_MS, deadline) - now),
      );
      settle.unref();
    };
    const schedule = (): void => arm(settle ? Infinity : Date.now() + MAX_SETTLE_MS);

    /**
     * The snapshot to publish from a scan. A file that reads suspect (or, having been sound, is
     * gone) while it is being written keeps what was published for it — its last sound entry, or
     * nothing for a new file — and `held` asks for a second look. Only what stays is believed.
     */
    const settled = (scan: Scan, now: number): { snapshot: Map<string, Entry>; held: boolean } => {
      const snapshot = scan.entries;
      let held = false;
      const hold = (rel: string, beingWritten: boolean): boolean => {
        const since = heldSince.get(rel) ?? now;
        if (!beingWritten || now - since >= MAX_HOLD_MS) return false;
        heldSince.set(rel, since);
        held = true;
        return true;
      };
      const writing = (rel: string): boolean => now - (scan.mtimes.get(rel) ?? 0) < SETTLE_MS;
      const stillHeld = new Set<string>();
      for (const [rel, before] of published) {
        if (before.kind !== 'file' || suspect(before.text)) continue;
        const after = snapshot.get(rel);
        if (after === undefined) {
          // Gone: a file has no modification time any more, so it is held for SETTLE_MS from when it went.
          if (hold(rel, now - (heldSince.get(rel) ?? now) < SETTLE_MS)) {
            snapshot.set(rel, before);
            stillHeld.add(rel);
          }
        } else if (after.kind === 'file' && after.text !== before.text && suspect(after.text) && hold(rel, writing(rel))) {
          snapshot.set(rel, before);
          stillHeld.add(rel);
        }
      }
      for (const [rel, entry] of scan.entries) {
        if (published.has(rel) || entry.kind !== 'file' || !suspect(entry.text)) continue;
        if (hold(rel, writing(rel))) {
          snapshot.delete(rel);
          stillHeld.add(rel);
        }
      }
      for (const rel of heldSince.keys()) if (!stillHeld.has(rel)) heldSince.delete(rel);
      return { snapshot, held };
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
          let next: Exclude<State<FsSnapshot>, { kind: 'pending' }> | undefined;
          try {
            const { snapshot, held } = settled(await scan(rootDir, dirs), Date.now());
            // A held file is read again once its write should be over.
            if (held) arm(Date.now() + SETTLE_MS);
            // The first snapshot waits (pending) rather than show a file in the middle of a write.
            if (!held || last !== undefined) {
              published = snapshot;
              next = ok(snapshot);
            }
          } catch (e) {
            next = failed(new Error(`cannot read directory ${rootDir}: ${(e as Error).message}`));
            onError(e);
          }
          if (closed) return;
          syncWatchers(dirs);
          if (next === undefined) continue;
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

async function scan(rootDir: string, dirs: Set<string>): Promise<Scan> {
  const out = new Map<string, Entry>();
  const mtimes = new Map<string, number>();
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
          const file = await open(full, 'r');
          try {
            out.set(key, { kind: 'file', text: await file.readFile('utf8') });
            // After the read: a write that raced it shows as a recent modification.
            mtimes.set(key, (await file.stat()).mtimeMs);
          } finally {
            await file.close();
          }
        } catch {
          // removed between readdir and read: absent in this snapshot
        }
      }
    }
  };
  await walk(rootDir, '');
  return { entries: out, mtimes };
}

function fingerprintOf(s: FsSnapshot): string {
  const parts: string[] = [];
  for (const [k, v] of [...s].sort((a, b) => (a[0] < b[0] ? -1 : 1))) parts.push(v.kind === 'dir' ? `${k}/` : `${k}\0${v.text}`);
  return parts.join('\0\0');
}
