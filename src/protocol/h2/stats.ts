/** h2's own response stats: `grpc/<code>` next to HTTP's `status/<code>`, and `resets/<CODE>`. */
import type { Counter, StatsReceiver } from '../../service/stats/index.js';
import { h2CodeName } from './errors.js';

/** Counters made on first use, one per code, under `<scope>/<name>`. */
class CodeCounters {
  readonly #stats: StatsReceiver;
  readonly #scope: string;
  readonly #name: (code: number) => string;
  readonly #counters = new Map<number, Counter>();
  constructor(stats: StatsReceiver, scope: string, name: (code: number) => string) {
    this.#stats = stats;
    this.#scope = scope;
    this.#name = name;
  }

  record(code: number): void {
    let c = this.#counters.get(code);
    if (c === undefined) {
      // Codes are bounded (gRPC 0–16 and peers' own, h2's 0–13 and peers' own) but come off the wire: cap them.
      if (this.#counters.size >= 64) return;
      c = this.#stats.counter(this.#scope, this.#name(code));
      this.#counters.set(code, c);
    }
    c.incr();
  }
}

/** `grpc/<code>`: the gRPC statuses of responses (from trailers, or a trailers-only head). */
export class GrpcStatusCounters extends CodeCounters {
  constructor(stats: StatsReceiver) {
    super(stats, 'grpc', String);
  }
}

/** `resets/<CODE_NAME>`: streams reset, by error code. */
export class ResetCounters extends CodeCounters {
  constructor(stats: StatsReceiver) {
    super(stats, 'resets', h2CodeName);
  }
}
