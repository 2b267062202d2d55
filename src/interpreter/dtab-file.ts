import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { Activity, type Closable, type Dtab, Pending, type State, Var, failed, ok, readDtab } from '../naming/index.js';
import { DtabFileError } from './errors.js';

/** What `/<router>/interpreter_state/…` shows of a watched dtab file. */
export interface DtabFileStatus {
  readonly dtabFile: string;
  /** Whether the file is being watched (something is bound through it). */
  readonly watching: boolean;
  readonly exists: boolean | null;
  /** The dtab in force: the last one that parsed. */
  readonly dtab: string | null;
  readonly lastLoadedAt: string | null;
  readonly lastError: { readonly message: string; readonly at: string } | null;
}

/** How long to wait before watching again after the directory's watch failed (it was removed). */
const REWATCH_MS = 1000;

/**
 * A dtab read from a file and kept current: the directory is watched (so atomic saves — write a
 * new file, rename it over — and symlink swaps are seen) and the file re-read on every change.
 *
 * - A malformed edit keeps the last dtab that parsed; the error is logged and shown in `status()`.
 *   Only when no version ever parsed does the dtab fail, with the parse error.
 * - A missing file leaves the dtab pending (bindings wait, up to the router's binding timeout)
 *   until it is created again: Linkerd's `io.l5d.fs` interpreter does the same.
 *
 * The watch runs while something observes `dtab`.
 */
export class WatchedDtabFile {
  readonly path: string;
  readonly dtab: Activity<Dtab>;
  readonly #log: Logger | undefined;
  #lastGood: Dtab | undefined;
  #lastText: string | undefined;
  #exists: boolean | null = null;
  #lastLoadedAt: Date | undefined;
  #lastError: { message: string; at: Date } | undefined;
  #watching = false;

  constructor(path: string, log?: Logger) {
    this.path = resolve(path);
    this.#log = log;
    this.dtab = new Activity(Var.async<State<Dtab>>(Pending, (set) => this.#watch(set)));
  }

  status(): DtabFileStatus {
    return {
      dtabFile: this.path,
      watching: this.#watching,
      exists: this.#exists,
      dtab: this.#lastGood?.show ?? null,
      lastLoadedAt: this.#lastLoadedAt?.toISOString() ?? null,
      lastError: this.#lastError ? { message: this.#lastError.message, at: this.#lastError.at.toISOString() } : null,
    };
  }

  #watch(set: (s: State<Dtab>) => void): Closable {
    const dir = dirname(this.path);
    let stopped = false;
    let reading = false;
    let again = false;
    let watcher: FSWatcher | undefined;
    let rewatch: NodeJS.Timeout | undefined;
    let current: State<Dtab> = Pending;
    // Re-publishing an unchanged dtab would make every binding through it bind again.
    const publish = (s: State<Dtab>): void => {
      if (s === current || (s.kind === 'ok' && current.kind === 'ok' && s.value === current.value)) return;
      current = s;
      set(s);
    };
    this.#watching = true;
    // A fresh start re-reads the file even if its text is unchanged: the var forgot its value.
    this.#lastText = undefined;

    const read = async (): Promise<void> => {
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      try {
        do {
          again = false;
          const text = await readText(this.path);
          if (!stopped) this.#apply(text, publish);
        } while (again && !stopped);
      } finally {
        reading = false;
      }
    };
    const arm = (): void => {
      rewatch = undefined;
      if (stopped) return;
      try {
        // The directory, not the file: a file watch dies with the inode an atomic save replaces.
        // Every event re-reads: a symlinked file (a mounted config map) changes under another name.
        watcher = watch(dir, { persistent: false }, () => void read());
        watcher.on('error', (e) => {
          watcher?.close();
          watcher = undefined;
          this.#recordError(`cannot watch ${dir}: ${errorMessage(e)}`);
          if (!stopped) rewatch = setTimeout(arm, REWATCH_MS).unref();
        });
      } catch (e) {
        this.#recordError(`cannot watch ${dir}: ${errorMessage(e)}`);
        rewatch = setTimeout(arm, REWATCH_MS).unref();
      }
      void read();
    };
    arm();
    return {
      close: () => {
        stopped = true;
        this.#watching = false;
        watcher?.close();
        if (rewatch) clearTimeout(rewatch);
      },
    };
  }

  #apply(text: string | undefined, set: (s: State<Dtab>) => void): void {
    if (text === undefined) {
      if (this.#exists !== false) this.#log?.warn({ dtabFile: this.path }, 'dtab file is missing; bindings wait until it exists');
      this.#exists = false;
      this.#lastText = undefined;
      set(Pending);
      return;
    }
    this.#exists = true;
    if (text === this.#lastText) return;
    this.#lastText = text;
    let dtab: Dtab;
    try {
      dtab = readDtab(text, { located: true });
    } catch (e) {
      const error = new DtabFileError(this.path, errorMessage(e));
      this.#recordError(error.message);
      set(this.#lastGood === undefined ? failed(error) : ok(this.#lastGood));
      return;
    }
    this.#lastGood = dtab;
    this.#lastLoadedAt = new Date();
    this.#lastError = undefined;
    set(ok(dtab));
  }

  #recordError(message: string): void {
    this.#lastError = { message, at: new Date() };
    this.#log?.error({ dtabFile: this.path }, `${message}${this.#lastGood ? '; keeping the last good dtab' : ''}`);
  }
}

/** The file's text, or undefined when it does not exist (or is not a readable file). */
async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}
