/**
 * The primary's worker processes (`node:cluster`): forks them with the primary's own entry point,
 * V8 flags and environment, hands each the validated config text, restarts one that dies (with
 * backoff, logged; the others keep serving), relays requests to them and drains them on shutdown.
 *
 * Listening sockets are shared the cluster way: the primary binds each router's port. The
 * scheduling policy is round-robin (`SCHED_RR`: the primary accepts each connection and passes
 * it to the next worker over IPC) unless `NODE_CLUSTER_SCHED_POLICY=none` asks for every worker
 * to accept on the shared socket itself. Measured on Node 20 (README, "Workers"): with `none`
 * the kernel gives most connections to one worker (a proxy's clients hold few long-lived
 * connections, so that worker does most of the work), while round-robin costs the primary a
 * little CPU per new connection and nothing per request. Node 20 has no `reusePort` for TCP
 * servers, so separate listeners are not possible.
 */
import cluster, { type Worker } from 'node:cluster';
import type { ConfigSource } from '../../config/index.js';
import type { Logger, LoggerLevel } from '../../core/log.js';
import { WorkerRequestError, WorkerStartError, WorkerUnavailableError } from './errors.js';
import { isMessage, type WorkerAnswer, type WorkerInfo, type WorkerMessage, type WorkerRequest } from './messages.js';

/** The first restart of a worker waits this long; each further one in a row twice as long. */
const RESTART_BASE_MS = 250;
const RESTART_MAX_MS = 30_000;
/** A worker that served this long before dying restarts after the base delay again. */
const STABLE_MS = 30_000;
/** How long past the drain deadline a worker may take to exit before it is killed. */
const EXIT_SLACK_MS = 1000;

export interface PoolOptions {
  readonly count: number;
  readonly source: ConfigSource;
  readonly log: Logger;
  /** The run-time state a worker starts with (levels and tracing changed through the admin). */
  readonly runtimeState: () => { readonly logLevels: readonly LoggerLevel[]; readonly tracing: boolean };
}

interface Pending {
  readonly resolve: (a: WorkerAnswer) => void;
  readonly reject: (e: Error) => void;
  readonly timer: NodeJS.Timeout;
}

type SlotState = 'starting' | 'ready' | 'restarting' | 'stopped';

class Slot {
  readonly index: number;
  worker: Worker | undefined;
  state: SlotState = 'starting';
  restarts = 0;
  /** Deaths in a row without a stable run between them (the backoff exponent). */
  failures = 0;
  readyAt = 0;
  lastError: string | undefined;
  restartTimer: NodeJS.Timeout | undefined;
  readonly pending = new Map<number, Pending>();

  constructor(index: number) {
    this.index = index;
  }
}

/** A worker as `/admin/workers.json` lists it. */
export interface WorkerRow {
  readonly worker: number;
  readonly pid: number | null;
  readonly state: SlotState;
  readonly restarts: number;
  readonly readySince: string | null;
}

export class WorkerPool {
  readonly #opts: PoolOptions;
  readonly #slots: Slot[];
  #nextId = 1;
  #stopping = false;
  #initial: { resolve: (info: WorkerInfo) => void; reject: (e: Error) => void; waiting: number } | undefined;
  #info: WorkerInfo | undefined;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    this.#slots = Array.from({ length: opts.count }, (_, i) => new Slot(i + 1));
    // Set before the first fork (the cluster module fixes it then).
    if (process.env['NODE_CLUSTER_SCHED_POLICY'] === undefined) cluster.schedulingPolicy = cluster.SCHED_RR;
    cluster.setupPrimary({ serialization: 'advanced' });
  }

  /** How many workers the config asked for. */
  get count(): number {
    return this.#slots.length;
  }

  /** `none` (the kernel spreads connections) or `rr` (the primary hands them out). */
  get schedulingPolicy(): 'none' | 'rr' {
    return cluster.schedulingPolicy === cluster.SCHED_RR ? 'rr' : 'none';
  }

  /** Forks every worker; resolves once all of them serve, rejects with the first that cannot. */
  start(): Promise<WorkerInfo> {
    return new Promise((resolve, reject) => {
      this.#initial = { resolve, reject, waiting: this.#slots.length };
      for (const slot of this.#slots) this.#fork(slot);
    });
  }

  #fork(slot: Slot): void {
    slot.restartTimer = undefined;
    slot.state = 'starting';
    slot.readyAt = 0;
    slot.lastError = undefined;
    const worker = cluster.fork({ PRX_WORKER: String(slot.index) });
    slot.worker = worker;
    worker.on('message', (m: unknown) => this.#onMessage(slot, worker, m));
    worker.on('exit', (code: number | null, signal: string | null) => this.#onExit(slot, worker, code, signal));
    // A failed send to a worker that is exiting: its exit is handled on 'exit'.
    worker.on('error', (e: Error) => this.#opts.log.debug({ err: e, worker: slot.index }, 'worker channel error'));
  }

  #onMessage(slot: Slot, worker: Worker, m: unknown): void {
    if (!isMessage<WorkerMessage>(m) || slot.worker !== worker) return;
    switch (m.type) {
      case 'hello': {
        const { source, runtimeState } = this.#opts;
        const { logLevels, tracing } = runtimeState();
        // Slot 1 alone announces: one discovery member per proxy, not one per worker.
        worker.send({ type: 'start', slot: slot.index, configText: source.text, configOrigin: source.origin, announce: slot.index === 1, logLevels, tracing });
        return;
      }
      case 'ready': {
        slot.state = 'ready';
        slot.readyAt = Date.now();
        this.#info ??= m.info;
        const initial = this.#initial;
        if (initial) {
          if (--initial.waiting === 0) {
            this.#initial = undefined;
            initial.resolve(m.info);
          }
        } else {
          this.#opts.log.info({ worker: slot.index, workerPid: worker.process.pid, restarts: slot.restarts }, `worker ${slot.index} restarted`);
        }
        return;
      }
      case 'failed':
        slot.lastError = m.message;
        return;
      case 'reply': {
        const pending = slot.pending.get(m.id);
        if (!pending) return;
        slot.pending.delete(m.id);
        clearTimeout(pending.timer);
        if (m.answer) pending.resolve(m.answer);
        else pending.reject(new WorkerRequestError(`worker ${slot.index}: ${m.error ?? 'no answer'}`));
        return;
      }
    }
  }

  #onExit(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    for (const [id, pending] of slot.pending) {
      clearTimeout(pending.timer);
      pending.reject(new WorkerUnavailableError(`worker ${slot.index} exited before answering`));
      slot.pending.delete(id);
    }
    const how = signal === null ? `with status ${code ?? 0}` : `on ${signal}`;
    if (this.#stopping) {
      slot.state = 'stopped';
      return;
    }
    const initial = this.#initial;
    if (initial) {
      this.#initial = undefined;
      initial.reject(new WorkerStartError(slot.lastError ?? `worker ${slot.index} exited ${how} before it served`));
      return;
    }
    if (slot.readyAt > 0 && Date.now() - slot.readyAt >= STABLE_MS) slot.failures = 0;
    slot.failures++;
    slot.restarts++;
    const delay = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (slot.failures - 1));
    slot.state = 'restarting';
    this.#opts.log.error(
      { worker: slot.index, workerPid: worker.process.pid, code, signal, restartInMs: delay, ...(slot.lastError ? { error: slot.lastError } : {}) },
      `worker ${slot.index} exited ${how}; restarting it in ${delay} ms`,
    );
    slot.restartTimer = setTimeout(() => this.#fork(slot), delay);
  }

  /** Sends `body` to worker `index` (1-based) and resolves with its answer. */
  request(index: number, body: WorkerRequest, timeoutMs: number): Promise<WorkerAnswer> {
    const slot = this.#slots[index - 1];
    const worker = slot?.worker;
    if (!slot || !worker || slot.state !== 'ready') return Promise.reject(new WorkerUnavailableError(`worker ${index} is not serving`));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        slot.pending.delete(id);
        reject(new WorkerUnavailableError(`worker ${index} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      slot.pending.set(id, { resolve, reject, timer });
      worker.send({ type: 'request', id, body });
    });
  }

  /** The slots (1-based) of the workers serving now. */
  ready(): number[] {
    return this.#slots.filter((s) => s.state === 'ready').map((s) => s.index);
  }

  /** What the first worker reported of the routers (every worker runs the same config). */
  get info(): WorkerInfo | undefined {
    return this.#info;
  }

  describe(): WorkerRow[] {
    return this.#slots.map((s) => ({
      worker: s.index,
      pid: s.worker?.process.pid ?? null,
      state: s.state,
      restarts: s.restarts,
      readySince: s.readyAt > 0 && s.state === 'ready' ? new Date(s.readyAt).toISOString() : null,
    }));
  }

  /**
   * Tells every worker to drain (each within the same grace period) and waits for them to exit;
   * one still running `EXIT_SLACK_MS` past `deadline` is killed.
   */
  async shutdown(reason: string, deadline: number): Promise<void> {
    this.#stopping = true;
    const exits: Promise<void>[] = [];
    for (const slot of this.#slots) {
      if (slot.restartTimer) clearTimeout(slot.restartTimer);
      const worker = slot.worker;
      if (!worker) {
        slot.state = 'stopped';
        continue;
      }
      exits.push(new Promise((resolve) => worker.once('exit', () => resolve())));
      // A worker still starting has nothing in flight (and no handler for the message yet): SIGTERM ends it.
      if (slot.state === 'ready' && worker.isConnected()) worker.send({ type: 'shutdown', reason });
      else worker.process.kill('SIGTERM');
    }
    const all = Promise.all(exits);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()) + EXIT_SLACK_MS)));
    const inTime = await Promise.race([all.then(() => true), late]);
    clearTimeout(timer);
    if (!inTime) {
      this.#opts.log.warn('workers did not exit within the grace period; killing them');
      this.kill();
      await all;
    }
  }

  /** Ends every worker at once (a second signal, or a failed start). */
  kill(): void {
    this.#stopping = true;
    for (const slot of this.#slots) {
      if (slot.restartTimer) clearTimeout(slot.restartTimer);
      slot.worker?.process.kill('SIGKILL');
    }
  }
}
