import type { Logger } from '../core/log.js';
import type { MountedNamer, NameInterpreter, Namer } from '../naming/index.js';
import { underlyingInterpreter } from './transformer.js';

/** What building an interpreter needs from the process: its namers and the `/$/` namer. */
export interface InterpreterContext {
  readonly namers: readonly MountedNamer[];
  readonly system: Namer;
  /** Where interpreters report what an operator should know (a malformed dtab file, a lost resolver). */
  readonly log?: Logger;
}

/** An interpreter with internal state worth showing (`/<router>/interpreter_state/…`). */
export interface StatefulInterpreter extends NameInterpreter {
  state(): unknown;
}

/** An interpreter holding watches, sockets or timers beyond its observed bindings. */
export interface ClosableInterpreter extends NameInterpreter {
  close(): void;
}

/** The state of `interpreter` (through any transformer wrapping), or undefined if it has none. */
export function interpreterState(interpreter: NameInterpreter): unknown {
  const inner = underlyingInterpreter(interpreter) as Partial<StatefulInterpreter>;
  return typeof inner.state === 'function' ? inner.state() : undefined;
}

/** Stops what `interpreter` (through any transformer wrapping) holds open, if anything. */
export function closeInterpreter(interpreter: NameInterpreter): void {
  const inner = underlyingInterpreter(interpreter) as Partial<ClosableInterpreter>;
  if (typeof inner.close === 'function') inner.close();
}
