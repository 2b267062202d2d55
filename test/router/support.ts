// Protocol-free helpers for router tests (no router is registered by importing them): free ports,
// test namers (pending, a real io.prx.fs over a temporary directory), bounded polling.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsNamer } from '../../src/namer/fs.js';
import { Activity, readPath, type MountedNamer, type Namer } from '../../src/naming/index.js';

/** A port free right now (the config schema, like Linkerd's, does not accept port 0). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A namer whose every lookup stays pending forever (binding timeouts). */
export const pendingNamer: Namer = { lookup: () => Activity.pending() };

/** A namer mounted at `/#/<prefix>`. */
export function mount(prefix: string, namer: Namer): MountedNamer {
  return { prefix: readPath(`/#/${prefix}`), namer };
}

/** Resolves once `pred` holds, polling every few ms (for state that changes without an event); fails after `ms`. */
export async function eventually(pred: () => boolean, ms = 3000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A real `io.prx.fs` namer over a temporary directory, mounted at `/#/io.prx.fs`. */
export interface TempFsNamer {
  readonly mounted: MountedNamer;
  /** Replaces a name's file atomically (write aside, then rename). */
  write(name: string, text: string): void;
  close(): void;
}

export function tempFsNamer(files: Record<string, string>): TempFsNamer {
  const root = mkdtempSync(join(tmpdir(), 'prx-fs-'));
  const staging = mkdtempSync(join(tmpdir(), 'prx-fs-staging-'));
  const write = (name: string, text: string): void => {
    const tmp = join(staging, name);
    writeFileSync(tmp, text);
    renameSync(tmp, join(root, name));
  };
  for (const [name, text] of Object.entries(files)) write(name, text);
  const prefix = readPath('/#/io.prx.fs');
  const namer = new FsNamer(root, prefix);
  return {
    mounted: { prefix, namer },
    write,
    close: () => {
      namer.close();
      rmSync(root, { recursive: true, force: true });
      rmSync(staging, { recursive: true, force: true });
    },
  };
}

/**
 * A complete chunked body (sizes, data, CRLF, an empty last chunk), decoded as a test reads a
 * proxy's own well-formed encoding; undefined while incomplete. With `requireEnd`, the empty
 * last chunk must be followed by its CRLF and nothing else (no trailers).
 */
export function decodeChunked(text: string, requireEnd: boolean): string | undefined {
  let out = '';
  let at = 0;
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(text.slice(at, eol), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return !requireEnd || text.slice(eol + 2) === '\r\n' ? out : undefined;
    if (text.length < eol + 2 + size + 2) return undefined;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}
