import type { Worker } from 'node:worker_threads';
import type { EventLoopMonitor } from '../event-loop.js';
import { jsonResponse, negotiate, type AdminEndpoint } from '../handler.js';

/**
 * Worker threads the process has started. Node keeps no list of them, so whoever starts a worker
 * tracks it here to make it visible on `/admin/threads`; it is forgotten when it exits.
 */
export class WorkerRegistry {
  readonly #workers = new Map<Worker, string>();

  track(worker: Worker, name: string): void {
    this.#workers.set(worker, name);
    worker.once('exit', () => this.#workers.delete(worker));
  }

  get workers(): ReadonlyMap<Worker, string> {
    return this.#workers;
  }
}

interface ThreadInfo {
  readonly threadId: number;
  readonly name: string;
  /** Busy fraction of the thread's event loop (main: over the monitor's last window). */
  readonly eventLoopUtilization: number;
  /** Main thread only: what keeps its loop alive. */
  readonly activeResources?: Readonly<Record<string, number>>;
  readonly details: Readonly<Record<string, unknown>>;
}

/** Counts of the resources keeping the event loop alive, by type (`TCPServerWrap`, `Timeout`, …). */
function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo().sort()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

/**
 * The serving thread's id, read on first use: loading `node:worker_threads` at start-up costs the
 * proxy 0.4 MiB of heap and more of node's code pages, for this endpoint alone.
 */
async function ownThreadId(): Promise<number> {
  return (await import('node:worker_threads')).threadId;
}

function snapshot(mainThreadId: number, monitor: EventLoopMonitor, workers: WorkerRegistry): ThreadInfo[] {
  const utilization = monitor.utilization();
  const main: ThreadInfo = {
    threadId: mainThreadId,
    name: 'main',
    eventLoopUtilization: utilization.recent,
    activeResources: activeResources(),
    details: {
      eventLoopUtilizationSinceStart: utilization.sinceStart,
      memory: process.memoryUsage(),
      cpuMicros: process.cpuUsage(),
    },
  };
  const others = [...workers.workers].map(
    ([worker, name]): ThreadInfo => ({
      threadId: worker.threadId,
      name,
      eventLoopUtilization: worker.performance.eventLoopUtilization().utilization,
      details: { resourceLimits: worker.resourceLimits ?? {} },
    }),
  );
  return [main, ...others];
}

function renderText(threads: readonly ThreadInfo[]): string {
  const lines: string[] = [];
  for (const t of threads) {
    lines.push(`thread ${t.threadId} "${t.name}": event loop ${(t.eventLoopUtilization * 100).toFixed(1)}% busy`);
    for (const [type, count] of Object.entries(t.activeResources ?? {})) lines.push(`    ${type} x${count}`);
  }
  lines.push(
    '',
    'JavaScript runs on one thread per event loop; a running thread\'s stack cannot be sampled from',
    'outside. Use /admin/pprof/profile for where time goes and /admin/contention for blocking.',
  );
  return lines.join('\n');
}

/**
 * `/admin/threads` and `/admin/threads.json`: the main thread and tracked worker threads with
 * their event-loop utilization, plus the main thread's active handles and requests by type.
 */
export function threadsEndpoints(monitor: EventLoopMonitor, workers: WorkerRegistry): AdminEndpoint[] {
  const description = 'Threads: event-loop utilization and active handles/requests by type.';
  return [
    {
      path: '/admin/threads',
      description,
      handler: async (req) => {
        const threads = snapshot(await ownThreadId(), monitor, workers);
        return negotiate(req, { text: () => renderText(threads), json: () => ({ threads }) });
      },
    },
    {
      path: '/admin/threads.json',
      description,
      handler: async () => jsonResponse({ threads: snapshot(await ownThreadId(), monitor, workers) }),
    },
  ];
}
