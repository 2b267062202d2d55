// The frame every attack runs in: a deadline, a tally of outcomes per attack, the sockets held
// open (destroyed when the attack phase ends), and loops bounded by time and paced.
import type * as net from 'node:net';
import type { FleetPorts } from './fleet.js';
import { type Outcome, heldSocket, releaseHeld, sleep } from './wire.js';

export interface Attack {
  /** `<item>.<what>`, e.g. `1.bomb.data`. */
  readonly name: string;
  /** Which process it aims at. */
  readonly target: 'prx' | 'resolver';
  /** The answers a hardened process gives, in words; `undefined`: none checked (descriptors are the proof). */
  readonly expect?: string;
  /** Whether an outcome is one of those answers. */
  readonly expected?: (o: Outcome) => boolean;
  run(ctx: AttackContext): Promise<void>;
}

export interface AttackContext {
  readonly ports: FleetPorts;
  readonly deadline: number;
  readonly held: Set<net.Socket>;
  /** Rewrites the `churn` fs namer file in place (item 12). */
  rewriteChurn(flip: boolean): void;
  tally(attack: string, outcome: Outcome): void;
  over(): boolean;
}

export class Tally {
  readonly counts = new Map<string, Map<Outcome, number>>();

  add(attack: string, outcome: Outcome): void {
    let m = this.counts.get(attack);
    if (!m) this.counts.set(attack, (m = new Map<Outcome, number>()));
    m.set(outcome, (m.get(outcome) ?? 0) + 1);
  }

  of(attack: string): Record<Outcome, number> {
    return Object.fromEntries(this.counts.get(attack) ?? []);
  }
}

/** Sleeps `ms`, or less if the attack phase ends first. */
export function pause(ctx: AttackContext, ms: number): Promise<void> {
  return sleep(Math.min(ms, ctx.deadline - Date.now()));
}

/** `workers` loops, each running `once` then pausing `pauseMs`, until the deadline. */
export async function repeat(
  ctx: AttackContext,
  name: string,
  workers: number,
  pauseMs: number,
  once: (iteration: number) => Promise<Outcome>,
): Promise<void> {
  let iteration = 0;
  const loop = async () => {
    while (!ctx.over()) {
      let outcome: Outcome;
      try {
        outcome = await once(iteration++);
      } catch (e) {
        outcome = `error:${(e as Error).message.slice(0, 40)}`;
      }
      ctx.tally(name, outcome);
      await pause(ctx, pauseMs);
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
}

/**
 * `count` sockets held open to `port`, each fed by `feed` every `everyMs` after `onConnect`;
 * one that the server ends is tallied and replaced after `pauseMs` until the deadline.
 */
export async function holdOpen(
  ctx: AttackContext,
  name: string,
  o: { port: number; count: number; everyMs: number; openPerSec: number; first: string; feed: (() => string) | null },
): Promise<void> {
  const one = async (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const outcome = await heldSocket(
      o.port,
      (s) => {
        s.write(o.first);
        const feed = o.feed;
        if (feed) timer = setInterval(() => s.writable && s.write(feed()), o.everyMs);
      },
      ctx.held,
    );
    clearInterval(timer);
    ctx.tally(name, outcome);
  };
  const slot = async (i: number) => {
    await pause(ctx, (1000 * i) / o.openPerSec);
    while (!ctx.over()) {
      await one();
      await pause(ctx, 1000);
    }
  };
  await Promise.all(Array.from({ length: o.count }, (_, i) => slot(i)));
}

/** Ends every held socket (the attack phase is over). */
export function releaseAll(held: Set<net.Socket>): void {
  for (const s of held) releaseHeld(s);
}
