import { PrxError } from '../../core/errors.js';
import type { Counter } from './metrics.js';
import type { StatsReceiver } from './receiver.js';

/**
 * The name Finagle records for a response its classifier calls a failure without any exception
 * (`failures/…ResponseClassificationSyntheticException`); prx keeps the class name without the
 * Java package, like every other name it records.
 */
export const SYNTHETIC_FAILURE_NAME = 'ResponseClassificationSyntheticException';

// Finagle follows `getCause` to the end; wrappers nest shallowly, and a cap also stops cycles.
const MAX_CAUSE_DEPTH = 4;
// Codes (`ECONNREFUSED`, `UND_ERR_SOCKET`, `HPE_INVALID_CONSTANT`) and class names are constants
// of Node, undici and prx: checked anyway so that no odd value becomes a metric name.
const CODE_SHAPE = /^[A-Z][A-Z0-9_]{1,63}$/;
const CLASS_SHAPE = /^[A-Za-z_$][\w$]{0,63}$/;
const FALLBACK_NAME = 'Error';

/**
 * The stat segment naming one error: a prx error's class name (`ConnectionFailedError`); for other
 * errors with a code (Node's system errors, undici's) the code (`ECONNREFUSED`), because their
 * class is a bare `Error`; otherwise the class name. Never message text or request data.
 */
export function exceptionName(err: unknown): string {
  if (typeof err !== 'object' || err === null) return FALLBACK_NAME;
  if (!(err instanceof PrxError)) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && CODE_SHAPE.test(code)) return code;
  }
  const ctor = (err as { constructor?: { name?: unknown } }).constructor;
  const name = ctor?.name;
  return typeof name === 'string' && CLASS_SHAPE.test(name) ? name : FALLBACK_NAME;
}

/** One name of a recorded chain: its counter, and the counters of the causes seen below it. */
interface ChainNode {
  readonly counter: Counter;
  readonly path: readonly string[];
  readonly causes: Map<string, ChainNode>;
}

/**
 * Finagle's per-exception failure counters under one scope: `<label>/<outer>`, then one level
 * deeper per cause (`<label>/<outer>/<cause>`), every prefix of the chain counted once (Finagle's
 * rollup). Counters are made on first sight of a (chain prefix) and kept in a tree keyed by name
 * segment, so recording builds no strings beyond each error's name. The flat `<label>` counter
 * stays the caller's.
 */
export class ExceptionCounters {
  readonly #stats: StatsReceiver;
  readonly #label: readonly string[];
  readonly #roots = new Map<string, ChainNode>();

  constructor(stats: StatsReceiver, label = 'failures') {
    this.#stats = stats;
    this.#label = [label];
  }

  /** Counts `err` and each of its causes (`err.cause`, …) as deeper segments. */
  record(err: unknown): void {
    let level = this.#roots;
    let parent = this.#label;
    let e: unknown = err;
    for (let depth = 0; depth <= MAX_CAUSE_DEPTH; depth++) {
      const node = this.#count(level, parent, exceptionName(e));
      e = typeof e === 'object' && e !== null ? (e as { cause?: unknown }).cause : undefined;
      if (e === undefined || e === null) return;
      level = node.causes;
      parent = node.path;
    }
  }

  /** Counts only the outermost error (Finagle's transport `exn/<class>`, which ignores causes). */
  recordOuter(err: unknown): void {
    this.#count(this.#roots, this.#label, exceptionName(err));
  }

  /** A response classified as a failure, with no exception: {@link SYNTHETIC_FAILURE_NAME}. */
  recordSynthetic(): void {
    this.#count(this.#roots, this.#label, SYNTHETIC_FAILURE_NAME);
  }

  /** Increments the counter `name` under `parent`, made on first sight and kept in `level`. */
  #count(level: Map<string, ChainNode>, parent: readonly string[], name: string): ChainNode {
    let node = level.get(name);
    if (node === undefined) {
      const path = [...parent, name];
      node = { counter: this.#stats.counter(...path), path, causes: new Map() };
      level.set(name, node);
    }
    node.counter.incr();
    return node;
  }
}

/**
 * The socket-level error in `err`'s chain, if any: a Node system error raised on an established
 * connection (it carries a `syscall` such as `read` or `write`), the counterpart of what Finagle's
 * channel handler counts under `exn/`. Connect and DNS failures are not: Finagle's connector
 * reports those as request failures only.
 */
export function transportError(err: unknown): Error | undefined {
  let e: unknown = err;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && typeof e === 'object' && e !== null; depth++) {
    const syscall = (e as { syscall?: unknown }).syscall;
    if (typeof syscall === 'string' && syscall !== 'connect' && syscall !== 'getaddrinfo' && e instanceof Error) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
