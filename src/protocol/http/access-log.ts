import { statSync } from 'node:fs';
import { access, mkdir, open, rename, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { InboundRequest } from './h1/server.js';
import {
  nextRollTime,
  parseRollPolicy,
  pruneRotated,
  rollSuffix,
  rotatedPath,
  type RollPolicy,
} from './access-log-roll.js';

export { InvalidRollPolicyError, parseRollPolicy, type RollPolicy } from './access-log-roll.js';

/**
 * The HTTP access log (`httpAccessLog*` router parameters), after Linkerd 1's `AccessLogger`: one
 * line per completed request,
 *
 *     <host> <remoteHost> <identity> <user> [dd/MM/yyyy:HH:mm:ss +0000] "<METHOD> <uri> <protocol>" <status> <bytes> "<referer>" "<userAgent>"
 *
 * e.g. `web.example 10.0.0.7 - - [05/03/2024:14:07:09 +0000] "GET /a?b=1 HTTP/1.1" 200 1234 "-" "curl/8.5.0"`.
 * As in Linkerd, the first field is the request's Host header, the date uses a numeric month, and
 * the referer and user agent trail in quotes; absent values print `-`. Times are rendered in UTC.
 */
export interface AccessLogEntry {
  /** The request's Host header; `-` when absent. */
  readonly host?: string;
  /** The client address. */
  readonly remoteHost: string;
  /** RFC 1413 identity; Linkerd always logs `-`. */
  readonly identity?: string;
  /** Authenticated user; Linkerd always logs `-`. */
  readonly user?: string;
  /** When the response completed (Date or ms since epoch). */
  readonly time: Date | number;
  /** Request method; logged upper-cased. */
  readonly method: string;
  readonly uri: string;
  /** Protocol version text, e.g. `HTTP/1.1`. */
  readonly protocol: string;
  readonly status: number;
  /** Response size (Content-Length) or `-` when unknown. */
  readonly bytes: number | '-';
  readonly referer?: string;
  readonly userAgent?: string;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
const orDash = (s: string | undefined): string => (s === undefined || s === '' ? '-' : s);

/** The log timestamp `dd/MM/yyyy:HH:mm:ss +0000` (UTC), as Linkerd's `TimeFormat` prints it. */
export function formatAccessLogTime(time: Date | number): string {
  const d = new Date(time);
  const date = `${pad(d.getUTCDate())}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCFullYear(), 4)}`;
  return `${date}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}

/** One access-log line for `e`, without the trailing newline (format: {@link AccessLogEntry}). */
export function formatAccessLogLine(e: AccessLogEntry): string {
  const request = `${e.method.toUpperCase()} ${e.uri} ${e.protocol}`;
  return (
    `${orDash(e.host)} ${orDash(e.remoteHost)} ${orDash(e.identity)} ${orDash(e.user)} ` +
    `[${formatAccessLogTime(e.time)}] "${request}" ${e.status} ${e.bytes} ` +
    `"${orDash(e.referer)}" "${orDash(e.userAgent)}"`
  );
}

/** How to open an {@link AccessLog}. */
export interface AccessLogOptions {
  /** The live log file; its directory is created if missing. */
  readonly path: string;
  /** When to roll (default never); see {@link parseRollPolicy}. */
  readonly rollPolicy?: RollPolicy;
  /** Append to an existing file (default true); false truncates it on open. */
  readonly append?: boolean;
  /** Rotated files to keep; -1 (default) keeps all. */
  readonly rotateCount?: number;
  /** Current time in ms (default `Date.now`); drives time-based rolling and rotated names. */
  readonly clock?: () => number;
  /** Told about the first write/roll failure only; logging carries on where it can. */
  readonly onError?: (err: Error) => void;
}

/**
 * A router's access log from its four keys (`httpAccessLog*`, `h2AccessLog*`), or undefined when
 * no path is configured; write failures go to `log`.
 */
export function routerAccessLog(
  keys: { readonly path: string | undefined; readonly rollPolicy: string; readonly append: boolean; readonly rotateCount: number },
  log: { error(obj: object, msg: string): void },
): AccessLog | undefined {
  if (keys.path === undefined) return undefined;
  return new AccessLog({
    path: keys.path,
    rollPolicy: parseRollPolicy(keys.rollPolicy),
    append: keys.append,
    rotateCount: keys.rotateCount,
    onError: (err) => log.error({ err: err.message }, 'access log write failed'),
  });
}

type Op = { kind: 'write'; lines: string[] } | { kind: 'roll'; openedAt: number };

/**
 * A buffered, non-blocking access-log writer. {@link AccessLog.log} formats the line and queues it
 * synchronously (roll decisions are made there too, so a line never lands in the wrong file); a
 * single background loop performs the file I/O in order. Size rolling counts the bytes of an
 * appended-to file's existing content, and never rolls an empty file (a line larger than the limit
 * is written alone). Rotated-file naming and pruning: see {@link RollPolicy}.
 */
export class AccessLog {
  readonly path: string;
  readonly #policy: RollPolicy;
  readonly #rotateCount: number;
  readonly #clock: () => number;
  readonly #onError: ((err: Error) => void) | undefined;
  readonly #ops: Op[] = [];
  #handle: FileHandle | undefined;
  #flag: 'a' | 'w';
  #openedAt: number;
  #rollAt: number | undefined;
  #size = 0;
  #draining: Promise<void> | undefined;
  #closed = false;
  #errorReported = false;

  constructor(options: AccessLogOptions) {
    this.path = options.path;
    this.#policy = options.rollPolicy ?? { kind: 'never' };
    this.#rotateCount = options.rotateCount ?? -1;
    this.#clock = options.clock ?? Date.now;
    this.#onError = options.onError;
    const append = options.append ?? true;
    this.#flag = append ? 'a' : 'w';
    if (append) {
      try {
        this.#size = statSync(this.path).size;
      } catch {
        this.#size = 0;
      }
    }
    this.#openedAt = this.#clock();
    this.#rollAt = nextRollTime(this.#policy, this.#openedAt);
    this.#ops.push({ kind: 'write', lines: [] }); // opens (and truncates, if asked) promptly
    this.#schedule();
  }

  /** Queues one line for `entry`; returns at once. Ignored after {@link AccessLog.close}. */
  log(entry: AccessLogEntry): void {
    if (this.#closed) return;
    const line = `${formatAccessLogLine(entry)}\n`;
    const bytes = Buffer.byteLength(line);
    const now = this.#clock();
    const timed = this.#rollAt !== undefined && now >= this.#rollAt;
    const sized = this.#policy.kind === 'maxSize' && this.#size > 0 && this.#size + bytes > this.#policy.bytes;
    if (timed || sized) {
      this.#ops.push({ kind: 'roll', openedAt: this.#openedAt });
      this.#openedAt = now;
      this.#rollAt = nextRollTime(this.#policy, now);
      this.#size = 0;
    }
    this.#size += bytes;
    const last = this.#ops.at(-1);
    if (last?.kind === 'write') last.lines.push(line);
    else this.#ops.push({ kind: 'write', lines: [line] });
    this.#schedule();
  }

  /** Writes everything queued so far; resolves when it is on disk (or has failed). */
  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  /** Stops accepting lines, flushes the queue and closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    const h = this.#handle;
    this.#handle = undefined;
    if (h) await h.close().catch((e: unknown) => this.#report(e));
  }

  #schedule(): void {
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = undefined;
      if (this.#ops.length > 0) this.#schedule(); // queued between the loop's end and here
    });
  }

  async #drain(): Promise<void> {
    // Yield first so lines logged in the same tick are batched into one write.
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (let op = this.#ops.shift(); op; op = this.#ops.shift()) {
      try {
        if (op.kind === 'write') await this.#write(op.lines);
        else await this.#roll(op.openedAt);
      } catch (e) {
        this.#report(e);
      }
    }
  }

  async #ensureOpen(): Promise<FileHandle> {
    if (this.#handle) return this.#handle;
    await mkdir(dirname(this.path), { recursive: true });
    this.#handle = await open(this.path, this.#flag);
    this.#flag = 'a'; // truncate only on the first open
    return this.#handle;
  }

  async #write(lines: string[]): Promise<void> {
    const h = await this.#ensureOpen();
    if (lines.length > 0) await h.write(lines.join(''));
  }

  async #roll(openedAt: number): Promise<void> {
    const h = this.#handle;
    this.#handle = undefined;
    if (h) await h.close();
    const suffix = rollSuffix(this.#policy, openedAt);
    let target = rotatedPath(this.path, suffix);
    for (let serial = 1; await exists(target); serial++) target = rotatedPath(this.path, suffix, serial);
    try {
      await rename(this.path, target);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // nothing written yet: nothing to rotate
      return;
    }
    await pruneRotated(this.path, this.#rotateCount);
  }

  #report(e: unknown): void {
    if (this.#errorReported) return;
    this.#errorReported = true;
    this.#onError?.(e instanceof Error ? e : new Error(String(e)));
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** The access-log line of a request answered with `status` and a body of `length` bytes (unknown: `-`). */
export function accessLogEntryOf(req: InboundRequest, status: number, length: number | undefined): AccessLogEntry {
  const h = req.headers;
  return {
    ...(typeof h.host === 'string' ? { host: h.host } : {}),
    remoteHost: req.socket.remoteAddress ?? '-',
    time: Date.now(),
    method: req.method,
    uri: req.url,
    protocol: `HTTP/${req.httpVersion}`,
    status,
    bytes: length === undefined ? '-' : Number(length),
    ...(typeof h.referer === 'string' ? { referer: h.referer } : {}),
    ...(typeof h['user-agent'] === 'string' ? { userAgent: h['user-agent'] } : {}),
  };
}
