import type { Session } from 'node:inspector/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError } from '../errors.js';
import { monotonicMicros } from '../event-loop.js';
import type { CallFrame } from './builder.js';

/** A V8 CPU profile (inspector `Profiler.Profile`); times in microseconds on the monotonic clock. */
export interface V8CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: CallFrame;
    readonly children?: readonly number[] | undefined;
  }[];
  readonly startTime: number;
  readonly endTime: number;
  /** Node id of the leaf frame of each sample. */
  readonly samples?: readonly number[] | undefined;
  /** Microseconds since the previous sample (the first: since `startTime`). */
  readonly timeDeltas?: readonly number[] | undefined;
}

/** A node of a V8 sampling heap profile (inspector `HeapProfiler.SamplingHeapProfileNode`). */
export interface V8HeapNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly V8HeapNode[];
}

/** A V8 sampling heap profile: live sampled allocations, each with its node and size. */
export interface V8HeapProfile {
  readonly head: V8HeapNode;
  readonly samples: readonly { readonly size: number; readonly nodeId: number }[];
}

/** A profile together with the wall-clock time it started at. */
export interface Timed<P> {
  readonly profile: P;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  readonly durationNanos: number;
}

/** Profiling limits: a request may not hold the profiler longer than this, nor sample faster. */
export const MAX_PROFILE_SECONDS = 60;
export const MAX_PROFILE_HZ = 10_000;

/**
 * The process's one profiler: V8's CPU and sampling heap profilers reached through an in-process
 * inspector session. Profiles are exclusive — V8 runs one CPU profile per session meaningfully and
 * concurrent profiles would distort each other — so a second request gets 409.
 */
export class Profiler {
  #busy = false;

  /** Samples the main thread's stacks for `seconds` at `hz`. */
  async cpu(seconds: number, hz: number, signal: AbortSignal): Promise<Timed<V8CpuProfile>> {
    return this.#exclusive(async (session) => {
      await session.post('Profiler.enable');
      // Microseconds between samples; must be set before starting.
      await session.post('Profiler.setSamplingInterval', { interval: Math.max(1, Math.round(1e6 / hz)) });
      const startedAt = Date.now();
      const startUs = monotonicMicros();
      await session.post('Profiler.start');
      // Stop even when aborted, so the profiler never keeps sampling behind our back.
      try {
        await sleep(seconds * 1000, undefined, { signal });
      } catch (e) {
        await session.post('Profiler.stop');
        throw e;
      }
      const { profile } = await session.post('Profiler.stop');
      return { profile, startedAt, durationNanos: (monotonicMicros() - startUs) * 1000 };
    });
  }

  /** Samples allocations for `seconds`, one sample per `intervalBytes` on average; reports those still live. */
  async heap(seconds: number, intervalBytes: number, signal: AbortSignal): Promise<Timed<V8HeapProfile>> {
    return this.#exclusive(async (session) => {
      const startedAt = Date.now();
      const startUs = monotonicMicros();
      await session.post('HeapProfiler.startSampling', { samplingInterval: intervalBytes });
      try {
        await sleep(seconds * 1000, undefined, { signal });
        const { profile } = await session.post('HeapProfiler.getSamplingProfile');
        // @types/node 20 predates the protocol's node `id` and `samples`, which V8 does return.
        const durationNanos = (monotonicMicros() - startUs) * 1000;
        return { profile: profile as unknown as V8HeapProfile, startedAt, durationNanos };
      } finally {
        await session.post('HeapProfiler.stopSampling');
      }
    });
  }

  async #exclusive<T>(run: (session: Session) => Promise<T>): Promise<T> {
    if (this.#busy) throw new ConflictError('a profile is already being taken; try again when it is done');
    this.#busy = true;
    // node:inspector is loaded for the first profile, not at start-up.
    const { Session: InspectorSession } = process.getBuiltinModule('node:inspector/promises');
    const session = new InspectorSession();
    session.connect();
    try {
      return await run(session);
    } finally {
      session.disconnect();
      this.#busy = false;
    }
  }
}
