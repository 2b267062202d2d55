import { BadRequest } from './controller-request.js';
import { JSON_MEDIA_TYPE } from './dtab-codec.js';

/**
 * Heartbeats on the HTTP controller's watch streams: a bare newline, written every period to
 * each open stream, so that a client can tell a quiet watch from a dead link (a silent stream is
 * a dead one) and a load balancer never sees the connection idle. A JSON stream reader skips
 * whitespace between documents, so Linkerd's `io.l5d.namerd.http` is unaffected.
 */

/** Heartbeat period of a JSON watch whose client did not ask for one (the proxy's default `minPeriodMs`). */
export const DEFAULT_HEARTBEAT_MS = 5000;
/** Bounds of a requested period: more often would cost the resolver, less often would not keep links alive. */
export const MIN_HEARTBEAT_MS = 100;
export const MAX_HEARTBEAT_MS = 60_000;
/** The query parameter a client asks for a period with (`0`: none). */
export const HEARTBEAT_PARAM = 'heartbeatMs';
/** The response header announcing the period in force (absent: no heartbeats). */
export const HEARTBEAT_HEADER = 'prx-heartbeat-ms';

/**
 * The heartbeat period of a watch, in ms, or 0 for none. `heartbeatMs` is honoured within
 * [{@link MIN_HEARTBEAT_MS}, {@link MAX_HEARTBEAT_MS}] (`0` turns heartbeats off); without it a
 * JSON stream gets {@link DEFAULT_HEARTBEAT_MS} and a dtab text stream none (a blank line there
 * would read as an empty dtab to a line-by-line reader that never asked for heartbeats).
 */
export function readHeartbeatParam(params: URLSearchParams, contentType: string): number {
  const raw = params.get(HEARTBEAT_PARAM);
  if (raw === null) return contentType === JSON_MEDIA_TYPE ? DEFAULT_HEARTBEAT_MS : 0;
  if (!/^\d{1,9}$/.test(raw)) throw new BadRequest(`Invalid ${HEARTBEAT_PARAM}: ${raw} / expected a whole number of milliseconds`);
  const ms = Number(raw);
  return ms === 0 ? 0 : Math.min(MAX_HEARTBEAT_MS, Math.max(MIN_HEARTBEAT_MS, ms));
}

/** What the timers drive: a stream that writes a heartbeat when asked (unless it is backed up). */
export interface Heartbeating {
  heartbeat(): void;
}

/** Each period's streams are written in this many slices, spread over the period. */
const SLICES = 8;

/** The streams of one period, in slices: a tick writes one slice, so a tick never writes to every stream at once. */
interface HeartbeatGroup {
  readonly timer: NodeJS.Timeout;
  readonly slices: readonly Set<Heartbeating>[];
  size: number;
  /** The slice the next stream joins (round robin), and the slice the next tick writes. */
  nextJoin: number;
  nextTick: number;
}

/**
 * One timer per distinct period, shared by every stream with that period (one per stream would
 * cost each watch a timer). It ticks {@link SLICES} times a period and each tick writes to one
 * slice of the streams, so every stream gets a heartbeat once a period while the resolver's event
 * loop never stops for all of them at once (an update waiting behind ten thousand writes).
 */
export class WatchHeartbeats {
  readonly #groups = new Map<number, HeartbeatGroup>();

  add(periodMs: number, stream: Heartbeating): void {
    let group = this.#groups.get(periodMs);
    if (group === undefined) {
      const slices = Array.from({ length: SLICES }, () => new Set<Heartbeating>());
      const timer = setInterval(() => {
        const g = this.#groups.get(periodMs);
        if (g === undefined) return;
        const slice = g.slices[g.nextTick] as Set<Heartbeating>;
        g.nextTick = (g.nextTick + 1) % SLICES;
        for (const s of slice) s.heartbeat();
      }, periodMs / SLICES);
      timer.unref();
      group = { timer, slices, size: 0, nextJoin: 0, nextTick: 0 };
      this.#groups.set(periodMs, group);
    }
    (group.slices[group.nextJoin] as Set<Heartbeating>).add(stream);
    group.nextJoin = (group.nextJoin + 1) % SLICES;
    group.size++;
  }

  remove(periodMs: number, stream: Heartbeating): void {
    const group = this.#groups.get(periodMs);
    if (group === undefined || !group.slices.some((slice) => slice.delete(stream)) || --group.size > 0) return;
    clearInterval(group.timer);
    this.#groups.delete(periodMs);
  }

  /** Distinct periods with open streams (tests check that they are released). */
  get groupCount(): number {
    return this.#groups.size;
  }
}
