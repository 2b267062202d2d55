import { BlockDetector, type BlockedPeriod } from '../event-loop.js';
import { BadRequestError } from '../errors.js';
import type { AdminEndpoint, AdminRequest, AdminResponse } from '../handler.js';
import type { ProfileBuilder } from '../pprof/builder.js';
import type * as PprofConvert from '../pprof/convert.js';
import { MAX_PROFILE_HZ, MAX_PROFILE_SECONDS, type Profiler } from '../pprof/profiler.js';

/** Defaults from the spec's Limits table (10 s at 100 Hz). */
export const DEFAULT_PROFILE_SECONDS = 10;
export const DEFAULT_PROFILE_HZ = 100;
/** V8's own default heap sampling interval. */
export const DEFAULT_HEAP_INTERVAL_BYTES = 32 * 1024;

/**
 * A contention profile counts the loop as blocked when a 5 ms timer fires 10 ms or more late:
 * fine enough to catch the callbacks that hurt latency, coarse enough to ignore timer jitter.
 */
const CONTENTION_RESOLUTION_MS = 5;
const CONTENTION_THRESHOLD_MS = 10;

function numberParam(req: AdminRequest, name: string, fallback: number, min: number, max: number): number {
  const raw = req.query.get(name);
  if (raw === null || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new BadRequestError(`${name} must be a number between ${min} and ${max}, got '${raw}'`);
  }
  return value;
}

function cpuParams(req: AdminRequest): { seconds: number; hz: number; periodNanos: number } {
  const seconds = numberParam(req, 'seconds', DEFAULT_PROFILE_SECONDS, 0.001, MAX_PROFILE_SECONDS);
  const hz = numberParam(req, 'hz', DEFAULT_PROFILE_HZ, 1, MAX_PROFILE_HZ);
  return { seconds, hz, periodNanos: Math.round(1e9 / hz) };
}

async function pprofResponse(builder: ProfileBuilder, name: string): Promise<AdminResponse> {
  return {
    contentType: 'application/octet-stream',
    headers: { 'content-disposition': `attachment; filename="${name}.pb.gz"` },
    body: await builder.encode(),
  };
}

/** The pprof encoders, loaded on the first profile: protobufjs costs ~8 MB of RSS a proxy need not carry. */
function convert(): Promise<typeof PprofConvert> {
  return import('../pprof/convert.js');
}

/**
 * `/admin/pprof/profile`, `/admin/pprof/contention` and `/admin/pprof/heap`: gzipped pprof
 * protobufs for `go tool pprof <admin_url>/admin/pprof/profile`. One profile runs at a time;
 * a concurrent request gets 409.
 */
export function pprofEndpoints(profiler: Profiler): AdminEndpoint[] {
  return [
    {
      path: '/admin/pprof/profile',
      method: 'GET',
      description: 'CPU usage profile, pprof format. Query `seconds` (default 10), `hz` (default 100).',
      handler: async (req) => {
        const { seconds, hz, periodNanos } = cpuParams(req);
        const profile = await profiler.cpu(seconds, hz, req.signal);
        return pprofResponse((await convert()).cpuToPprof(profile, periodNanos), 'profile');
      },
    },
    {
      path: '/admin/pprof/contention',
      method: 'GET',
      description:
        'Event-loop contention profile, pprof format: the stacks running while the event loop was ' +
        'blocked, weighted by the delay. Query `seconds` (default 10), `hz` (default 100).',
      handler: async (req) => {
        const { seconds, hz, periodNanos } = cpuParams(req);
        const blocked: BlockedPeriod[] = [];
        const detector = new BlockDetector({
          resolutionMs: CONTENTION_RESOLUTION_MS,
          thresholdMs: CONTENTION_THRESHOLD_MS,
          onBlock: (p) => blocked.push(p),
        });
        detector.start();
        let profile;
        try {
          profile = await profiler.cpu(seconds, hz, req.signal);
        } finally {
          detector.flush();
        }
        return pprofResponse((await convert()).contentionToPprof(profile, periodNanos, blocked), 'contention');
      },
    },
    {
      path: '/admin/pprof/heap',
      method: 'GET',
      description:
        'Heap profile, pprof format: sampled allocations made during the window that are still live. ' +
        'Query `seconds` (default 10), `interval` (bytes between samples, default 32768).',
      handler: async (req) => {
        const seconds = numberParam(req, 'seconds', DEFAULT_PROFILE_SECONDS, 0.001, MAX_PROFILE_SECONDS);
        const interval = Math.round(numberParam(req, 'interval', DEFAULT_HEAP_INTERVAL_BYTES, 512, 1 << 30));
        const profile = await profiler.heap(seconds, interval, req.signal);
        return pprofResponse((await convert()).heapToPprof(profile, interval), 'heap');
      },
    },
  ];
}
