import type { BlockedPeriod } from '../event-loop.js';
import { ProfileBuilder } from './builder.js';
import type { Timed, V8CpuProfile, V8HeapNode, V8HeapProfile } from './profiler.js';

/**
 * Conversions from V8's profile shapes to pprof. Stacks are leaf first; V8's synthetic `(root)`
 * frame is dropped, while `(program)` (native code) and `(garbage collector)` stay as frames.
 */

interface TimedSample {
  /** Leaf node id. */
  readonly nodeId: number;
  /** Monotonic microseconds at which the sample was taken. */
  readonly atUs: number;
  /** Microseconds this sample stands for: the time until the next sample. */
  readonly durationUs: number;
}

/** The samples of a CPU profile with their times (V8 stores deltas). */
function timedSamples(profile: V8CpuProfile): TimedSample[] {
  const ids = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const times: number[] = [];
  let t = profile.startTime;
  for (let i = 0; i < ids.length; i++) {
    t += deltas[i] ?? 0;
    times.push(t);
  }
  return ids.map((nodeId, i) => {
    const atUs = times[i] ?? profile.startTime;
    const next = times[i + 1] ?? profile.endTime;
    return { nodeId, atUs, durationUs: Math.max(0, next - atUs) };
  });
}

/** Maps every node id to its stack of location ids (leaf first), computed once per node. */
function cpuStacks(profile: V8CpuProfile, builder: ProfileBuilder): (nodeId: number) => readonly number[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const stacks = new Map<number, readonly number[]>();
  const stackOf = (id: number): readonly number[] => {
    const cached = stacks.get(id);
    if (cached) return cached;
    const node = byId.get(id);
    const parentId = parent.get(id);
    const above = parentId === undefined ? [] : stackOf(parentId);
    const isRoot = !node || node.callFrame.functionName === '(root)';
    const stack = isRoot ? above : [builder.location(node.callFrame), ...above];
    stacks.set(id, stack);
    return stack;
  };
  return stackOf;
}

function leafName(profile: V8CpuProfile): (nodeId: number) => string | undefined {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame.functionName]));
  return (id) => byId.get(id);
}

/**
 * A CPU profile: values `samples/count` and `cpu/nanoseconds` per stack. Samples of the idle loop
 * (`(idle)`) are left out: they are not CPU time.
 */
export function cpuToPprof(
  { profile, startedAt, durationNanos }: Timed<V8CpuProfile>,
  periodNanos: number,
): ProfileBuilder {
  const builder = new ProfileBuilder({
    sampleTypes: [
      ['samples', 'count'],
      ['cpu', 'nanoseconds'],
    ],
    periodType: ['cpu', 'nanoseconds'],
    period: periodNanos,
    startedAt,
    durationNanos,
  });
  const stackOf = cpuStacks(profile, builder);
  const nameOf = leafName(profile);
  for (const s of timedSamples(profile)) {
    if (nameOf(s.nodeId) === '(idle)') continue;
    builder.addSample(stackOf(s.nodeId), [1, s.durationUs * 1000]);
  }
  return builder;
}

/** Microseconds of `[from, to)` covered by the (non-overlapping) `periods`. */
function overlapUs(from: number, to: number, periods: readonly BlockedPeriod[]): number {
  let total = 0;
  for (const p of periods) total += Math.max(0, Math.min(to, p.endUs) - Math.max(from, p.startUs));
  return total;
}

/**
 * An event-loop contention profile: the Node analogue of the JVM's "blocked threads". It keeps
 * only the CPU samples taken while the event loop was blocked (timers overdue, see
 * `BlockDetector`) and weights each by how much of its time fell inside a blocked period. Values:
 * `samples/count` and `delay/nanoseconds`, so `go tool pprof` ranks the code that held the loop.
 */
export function contentionToPprof(
  { profile, startedAt, durationNanos }: Timed<V8CpuProfile>,
  periodNanos: number,
  blocked: readonly BlockedPeriod[],
): ProfileBuilder {
  const builder = new ProfileBuilder({
    sampleTypes: [
      ['samples', 'count'],
      ['delay', 'nanoseconds'],
    ],
    periodType: ['delay', 'nanoseconds'],
    period: periodNanos,
    startedAt,
    durationNanos,
    comments: [`event-loop blocked periods: ${blocked.length}`],
  });
  const stackOf = cpuStacks(profile, builder);
  for (const s of timedSamples(profile)) {
    const delayUs = overlapUs(s.atUs, s.atUs + s.durationUs, blocked);
    if (delayUs > 0) builder.addSample(stackOf(s.nodeId), [1, delayUs * 1000]);
  }
  return builder;
}

/**
 * A heap profile of sampled allocations still live: values `objects/count` and `space/bytes`.
 * V8 samples one allocation per `intervalBytes` on average; each sample of size `s` is scaled by
 * 1 / (1 − e^(−s/interval)) to estimate how many such objects it stands for (as V8 does for its
 * own `selfSize`).
 */
export function heapToPprof(
  { profile, startedAt, durationNanos }: Timed<V8HeapProfile>,
  intervalBytes: number,
): ProfileBuilder {
  const builder = new ProfileBuilder({
    sampleTypes: [
      ['objects', 'count'],
      ['space', 'bytes'],
    ],
    periodType: ['space', 'bytes'],
    period: intervalBytes,
    startedAt,
    durationNanos,
  });
  // Walk the tree once, remembering each node's stack (leaf first).
  const stacks = new Map<number, readonly number[]>();
  const walk = (node: V8HeapNode, above: readonly number[]): void => {
    const stack = node.callFrame.functionName === '(root)' ? above : [builder.location(node.callFrame), ...above];
    stacks.set(node.id, stack);
    for (const child of node.children) walk(child, stack);
  };
  walk(profile.head, []);
  for (const { size, nodeId } of profile.samples) {
    const stack = stacks.get(nodeId);
    if (!stack) continue;
    const scale = 1 / (1 - Math.exp(-size / intervalBytes));
    builder.addSample(stack, [scale, size * scale]);
  }
  return builder;
}

