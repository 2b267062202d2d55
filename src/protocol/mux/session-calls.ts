import { IntMap } from '../../core/int-map.js';
import type { MuxServerSession } from './server-session.js';

/** A call a mux server is serving: its session and tag, and how it is abandoned. */
export interface TaggedCall {
  readonly session: MuxServerSession;
  readonly tag: number;
  /** The client discarded it or its session closed: stop its work. */
  discarded(): void;
}

/**
 * The calls a mux server has in flight, by session and tag: what a Tdiscarded or a closed
 * session abandons, and the sessions a drain and a close reach (mux and thriftmux servers alike).
 */
export class SessionCalls<C extends TaggedCall> {
  readonly #bySession = new Map<MuxServerSession, IntMap<C>>();

  /**
   * A session was made. Requests in its first bytes may have been taken while it was built (their
   * map exists then and stays); a session already over is not kept.
   */
  adopt(session: MuxServerSession): void {
    if (!session.ended && !this.#bySession.has(session)) this.#bySession.set(session, new IntMap<C>());
  }

  add(call: C): void {
    let calls = this.#bySession.get(call.session);
    if (calls === undefined) this.#bySession.set(call.session, (calls = new IntMap<C>()));
    calls.set(call.tag, call);
  }

  /** The client discarded the call on `tag`. */
  discard(session: MuxServerSession, tag: number): void {
    this.#bySession.get(session)?.get(tag)?.discarded();
  }

  /** A session's connection closed: its calls are abandoned. */
  close(session: MuxServerSession): void {
    const calls = this.#bySession.get(session);
    this.#bySession.delete(session);
    if (calls !== undefined) for (const c of calls.values()) c.discarded();
  }

  /** The call is over. */
  end(call: C): void {
    const calls = this.#bySession.get(call.session);
    if (calls?.get(call.tag) === call) calls.delete(call.tag);
  }

  /** The calls in flight on `session` (a new array). */
  callsOf(session: MuxServerSession): C[] {
    return this.#bySession.get(session)?.values() ?? [];
  }

  sessions(): IterableIterator<MuxServerSession> {
    return this.#bySession.keys();
  }
}
