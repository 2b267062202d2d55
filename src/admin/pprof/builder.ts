import { fileURLToPath } from 'node:url';
import {
  encodeProfile,
  type Int64,
  type PprofFunction,
  type PprofLocation,
  type PprofProfile,
  type PprofSample,
} from './profile-proto.js';

/** A V8 call frame (inspector `Runtime.CallFrame`); line and column are 0-based, -1 when unknown. */
export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
  readonly scriptId?: string;
}

/** A `[type, unit]` pair such as `['cpu', 'nanoseconds']`. */
export type ValueType = readonly [type: string, unit: string];

export interface ProfileBuilderOptions {
  /** One per sample value; the last is the default shown by `go tool pprof`. */
  readonly sampleTypes: readonly ValueType[];
  readonly periodType: ValueType;
  readonly period: number;
  /** Wall-clock start, epoch milliseconds. */
  readonly startedAt: number;
  readonly durationNanos: number;
  readonly comments?: readonly string[];
}

/** `file:///a/b.js` → `/a/b.js`; `node:fs` and other URLs stay as they are. */
function fileName(url: string): string {
  if (!url.startsWith('file:')) return url;
  try {
    return fileURLToPath(url);
  } catch {
    return url;
  }
}

/** Epoch milliseconds as nanoseconds, exact (beyond 2^53, so a decimal string). */
function epochNanos(ms: number): string {
  return (BigInt(Math.round(ms * 1000)) * 1000n).toString();
}

/**
 * Accumulates stacks into a pprof profile: interns strings, functions and locations, and sums the
 * values of samples with identical stacks.
 */
export class ProfileBuilder {
  readonly #options: ProfileBuilderOptions;
  // pprof requires string_table[0] to be the empty string.
  readonly #strings = new Map<string, number>([['', 0]]);
  readonly #functions = new Map<string, PprofFunction>();
  readonly #locations = new Map<string, PprofLocation>();
  readonly #samples = new Map<string, { locationId: number[]; value: number[] }>();

  constructor(options: ProfileBuilderOptions) {
    this.#options = options;
  }

  /** The string table index of `s`. */
  string(s: string): number {
    let index = this.#strings.get(s);
    if (index === undefined) {
      index = this.#strings.size;
      this.#strings.set(s, index);
    }
    return index;
  }

  /** The location id of a frame (one location per function and position). */
  location(frame: CallFrame): number {
    const key = `${frame.functionName}\0${frame.url}\0${frame.lineNumber}\0${frame.columnNumber}`;
    let location = this.#locations.get(key);
    if (!location) {
      const line = Math.max(frame.lineNumber, 0) + 1;
      location = {
        id: this.#locations.size + 1,
        line: [{ functionId: this.#function(frame), line, column: Math.max(frame.columnNumber, 0) + 1 }],
      };
      this.#locations.set(key, location);
    }
    return location.id;
  }

  #function(frame: CallFrame): number {
    const name = frame.functionName || '(anonymous)';
    const file = fileName(frame.url);
    const key = `${name}\0${file}\0${frame.lineNumber}`;
    let fn = this.#functions.get(key);
    if (!fn) {
      const nameIndex = this.string(name);
      fn = {
        id: this.#functions.size + 1,
        name: nameIndex,
        systemName: nameIndex,
        filename: this.string(file),
        startLine: Math.max(frame.lineNumber, 0) + 1,
      };
      this.#functions.set(key, fn);
    }
    return fn.id;
  }

  /** Adds `values` (one per sample type) to the stack `locationIds` (leaf first). */
  addSample(locationIds: readonly number[], values: readonly number[]): void {
    const key = locationIds.join(',');
    const sample = this.#samples.get(key);
    if (sample) values.forEach((v, i) => (sample.value[i] = (sample.value[i] ?? 0) + v));
    else this.#samples.set(key, { locationId: [...locationIds], value: [...values] });
  }

  /** The number of distinct stacks added so far. */
  get sampleCount(): number {
    return this.#samples.size;
  }

  build(): PprofProfile {
    const { sampleTypes, periodType, period, startedAt, durationNanos, comments = [] } = this.#options;
    const valueType = ([type, unit]: ValueType): { type: number; unit: number } => ({
      type: this.string(type),
      unit: this.string(unit),
    });
    const sampleType = sampleTypes.map(valueType);
    const sample: PprofSample[] = [...this.#samples.values()].map(({ locationId, value }) => ({
      locationId,
      value: value.map((v): Int64 => Math.round(v)),
    }));
    return {
      sampleType,
      sample,
      location: [...this.#locations.values()],
      function: [...this.#functions.values()],
      periodType: valueType(periodType),
      period,
      timeNanos: epochNanos(startedAt),
      durationNanos: Math.round(durationNanos),
      comment: comments.map((c) => this.string(c)),
      defaultSampleType: sampleType[sampleType.length - 1]?.type ?? 0,
      // Last: every string above must be interned before the table is frozen.
      stringTable: [...this.#strings.keys()],
    };
  }

  /** The gzip-compressed profile, as `go tool pprof` reads it. */
  async encode(): Promise<Buffer> {
    // node:zlib is loaded when a profile is taken, not at start-up.
    const { gzip } = process.getBuiltinModule('node:zlib');
    const raw = encodeProfile(this.build());
    return new Promise((resolve, reject) => gzip(raw, (err, out) => (err ? reject(err) : resolve(out))));
  }
}
