import { write, writeSync } from 'node:fs';

/**
 * Where the process's log lines go by default: a file descriptor (stdout), written asynchronously,
 * in order, one write in flight at a time, so a slow reader never blocks the event loop.
 *
 * It stands in for `pino.destination({sync: false})` for one reason: that stream's exit-time flush
 * retries a failed write forever, so a proxy whose stdout reader had gone away (EPIPE) never
 * exited after SIGTERM. Here a write error other than EAGAIN ends logging to the descriptor: later
 * lines are dropped (pino does the same on EPIPE) and the process exits normally.
 */
export class FdLogDestination {
  readonly fd: number;
  /** Lines not yet handed to a write. */
  #pending: string[] = [];
  /** A write is on its way to the descriptor. */
  #writing = false;
  #failed: NodeJS.ErrnoException | undefined;
  #idleWaiters: (() => void)[] = [];
  #exitHook: (() => void) | undefined;

  constructor(fd = 1, opts: { readonly flushOnExit?: boolean } = {}) {
    this.fd = fd;
    if (opts.flushOnExit ?? true) {
      this.#exitHook = () => this.flushSync();
      process.once('exit', this.#exitHook);
    }
  }

  /** The error that ended writing, if one did. */
  get error(): NodeJS.ErrnoException | undefined {
    return this.#failed;
  }

  /** Queues one line (pino's destination contract); false once writing has failed. */
  write(line: string): boolean {
    if (this.#failed !== undefined) return false;
    this.#pending.push(line);
    if (!this.#writing) this.#writeNext();
    return true;
  }

  /** Calls `cb` once every queued line has been written (or writing has failed). */
  flush(cb?: (err?: Error) => void): void {
    if (cb === undefined) return;
    if (this.#idle()) cb(this.#failed);
    else this.#idleWaiters.push(() => cb(this.#failed));
  }

  /**
   * Writes what is queued synchronously (the process is exiting). A write already in flight is
   * left to finish on its own; EAGAIN is retried for at most about a second; any other error stops.
   */
  flushSync(): void {
    if (this.#failed !== undefined || this.#pending.length === 0) return;
    let buf = Buffer.from(this.#pending.join(''));
    this.#pending = [];
    for (let tries = 0; buf.length > 0 && tries < 100; ) {
      try {
        buf = buf.subarray(writeSync(this.fd, buf));
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (err.code !== 'EAGAIN') {
          this.#fail(err);
          return;
        }
        tries++;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      }
    }
  }

  /** Stops the exit-time flush (tests and registries that are thrown away). */
  close(): void {
    if (this.#exitHook !== undefined) process.off('exit', this.#exitHook);
    this.#exitHook = undefined;
  }

  #idle(): boolean {
    return this.#failed !== undefined || (!this.#writing && this.#pending.length === 0);
  }

  #writeNext(): void {
    // Lines queued while a write was in flight go out together, in one write.
    const buf = Buffer.from(this.#pending.join(''));
    this.#pending = [];
    this.#writeFrom(buf);
  }

  #writeFrom(buf: Buffer): void {
    this.#writing = true;
    write(this.fd, buf, 0, buf.length, null, (err, written) => {
      if (err) {
        if (err.code === 'EAGAIN') {
          setTimeout(() => this.#writeFrom(buf), 10);
          return;
        }
        this.#fail(err);
        return;
      }
      if (written < buf.length) {
        this.#writeFrom(buf.subarray(written));
        return;
      }
      this.#writing = false;
      if (this.#pending.length > 0) this.#writeNext();
      else this.#wakeIdle();
    });
  }

  #fail(err: NodeJS.ErrnoException): void {
    this.#failed = err;
    this.#pending = [];
    this.#writing = false;
    this.#wakeIdle();
  }

  #wakeIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }
}
