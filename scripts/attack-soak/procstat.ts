// Descriptors and resident memory of a process, from /proc (Linux).
import { readFileSync, readdirSync } from 'node:fs';

export interface ProcSample {
  fds: number;
  rssMiB: number;
}

/** The process's open descriptors and VmRSS, or null when it is gone. */
export function sampleProc(pid: number): ProcSample | null {
  try {
    const fds = readdirSync(`/proc/${pid}/fd`).length;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    if (/^State:\s+Z/m.test(status)) return null;
    const kib = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
    return { fds, rssMiB: Math.round((kib / 1024) * 10) / 10 };
  } catch {
    return null;
  }
}

/** Tracks one process's samples: baseline, peak and latest. */
export class ProcTrack {
  baseline: ProcSample | null = null;
  peak: ProcSample = { fds: 0, rssMiB: 0 };
  last: ProcSample | null = null;

  readonly pid: number;

  constructor(pid: number) {
    this.pid = pid;
  }

  sample(): ProcSample | null {
    const s = sampleProc(this.pid);
    this.last = s;
    if (s) this.peak = { fds: Math.max(this.peak.fds, s.fds), rssMiB: Math.max(this.peak.rssMiB, s.rssMiB) };
    return s;
  }
}
