// The soak's verdict: the acceptance conditions of issue #15 checked, a table printed, a JSON
// document for bench/results/.
import type { Outcome } from './wire.js';
import type { Phase, PhaseSummary } from './legit-load.js';
import type { ProcSample } from './procstat.js';

export interface ProcessReport {
  name: string;
  pid: number;
  alive: boolean;
  /** Answered its admin's /admin/ping within 2 s at the end of the recovery window. */
  responsive: boolean;
  exit: { code: number | null; signal: string | null; atMs: number } | null;
  logTail: string[];
  baseline: ProcSample | null;
  peak: ProcSample;
  end: ProcSample | null;
  fdLimit: number | null;
  rssLimitMiB: number | null;
  /** Seconds after the attack phase at which the value was first within its limit; null: never. */
  fdsBackAfterS: number | null;
  rssBackAfterS: number | null;
}

export interface AttackReport {
  name: string;
  target: string;
  expect: string | null;
  counts: Record<Outcome, number>;
  unexpected: number;
}

export interface SoakReport {
  date: string;
  node: string;
  settings: Record<string, number | string>;
  processes: ProcessReport[];
  legit: Record<string, Partial<Record<Phase, PhaseSummary>>>;
  /** Routes whose attack-phase p99 is held to the threshold. */
  latencyRoutes: string[];
  attacks: AttackReport[];
  notSoaked: Record<string, string>;
  failures: string[];
  warnings: string[];
}

/** Fills `failures` and `warnings` from the rest. */
export function judge(r: SoakReport, p99LimitMs: number): void {
  for (const p of r.processes) {
    if (!p.alive) {
      const how = p.exit?.signal ? `signal ${p.exit.signal}` : `exit code ${p.exit?.code}`;
      r.failures.push(`${p.name} died ${((p.exit?.atMs ?? 0) / 1000).toFixed(1)} s after start (${how})`);
      continue;
    }
    if (!p.responsive) r.failures.push(`${p.name} is alive but its admin did not answer /admin/ping within 2 s at the end`);
    if (p.fdsBackAfterS === null) r.failures.push(`${p.name} descriptors did not return to ≤ ${p.fdLimit} within the recovery window (end ${p.end?.fds})`);
    if (p.rssBackAfterS === null) r.failures.push(`${p.name} RSS did not return to ≤ ${p.rssLimitMiB} MiB within the recovery window (end ${p.end?.rssMiB} MiB)`);
  }
  for (const [route, phases] of Object.entries(r.legit)) {
    const a = phases.attack;
    if (!a) {
      r.failures.push(`legit ${route}: no requests recorded in the attack phase`);
      continue;
    }
    if (r.latencyRoutes.includes(route) && a.p99 >= p99LimitMs) r.failures.push(`legit ${route}: p99 ${a.p99.toFixed(2)} ms ≥ ${p99LimitMs} ms`);
    for (const phase of ['attack', 'recovery'] as const) {
      const s = phases[phase];
      if (s && s.failed > 0) r.failures.push(`legit ${route}: ${s.failed} of ${s.sent} failed in the ${phase} phase (${fmtCounts(s.failures)})`);
    }
  }
  for (const a of r.attacks) {
    if (a.unexpected > 0) r.warnings.push(`${a.name}: ${a.unexpected} answer(s) other than ${a.expect}`);
  }
}

const fmtCounts = (c: Record<string, number>) =>
  Object.entries(c)
    .sort((x, y) => y[1] - x[1])
    .map(([k, v]) => `${k}×${v}`)
    .join(', ') || '-';
const ms = (n: number | undefined) => (n === undefined ? '-' : n < 10 ? n.toFixed(2) : n.toFixed(0));
const firstFailure = (s: PhaseSummary) => {
  const i = s.seconds.findIndex(([, failed]) => failed > 0);
  return i < 0 ? '-' : `in second ${i}`;
};
const back = (s: number | null, alive: boolean) => (!alive ? 'dead' : s === null ? 'NO' : `${s} s`);

export function print(r: SoakReport, out: (line: string) => void): void {
  out('');
  out(`attack soak, ${r.date}, Node ${r.node}: ${Object.entries(r.settings).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  out('');
  out('| process | alive | fds baseline / peak / end (limit) | fds back | RSS MiB baseline / peak / end (limit) | RSS back |');
  out('|---|---|---|---|---|---|');
  for (const p of r.processes) {
    const alive = p.alive ? (p.responsive ? 'yes' : 'yes, NOT answering') : `NO (${p.exit?.signal ?? `exit ${p.exit?.code}`} at ${((p.exit?.atMs ?? 0) / 1000).toFixed(1)} s)`;
    const fds = `${p.baseline?.fds ?? '-'} / ${p.peak.fds} / ${p.end?.fds ?? '-'} (≤ ${p.fdLimit ?? '-'})`;
    const rss = `${p.baseline?.rssMiB ?? '-'} / ${p.peak.rssMiB} / ${p.end?.rssMiB ?? '-'} (≤ ${p.rssLimitMiB ?? '-'})`;
    out(`| ${p.name} | ${alive} | ${fds} | ${back(p.fdsBackAfterS, p.alive)} | ${rss} | ${back(p.rssBackAfterS, p.alive)} |`);
  }
  for (const p of r.processes) if (!p.alive && p.logTail.length > 0) out(`  ${p.name}'s last log lines:\n    ${p.logTail.join('\n    ')}`);
  out('');
  out('| legit route, phase | sent | ok | failed | p50 ms | p99 ms | p99.9 ms | max ms | service p99 ms | failures | first failure |');
  out('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|');
  for (const [route, phases] of Object.entries(r.legit)) {
    for (const phase of ['attack', 'recovery'] as const) {
      const s = phases[phase];
      if (!s) continue;
      out(`| ${route}, ${phase} | ${s.sent} | ${s.ok} | ${s.failed} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.p999)} | ${ms(s.max)} | ${ms(s.serviceP99)} | ${fmtCounts(s.failures)} | ${firstFailure(s)} |`);
    }
  }
  out('');
  out('| attack | target | answers | expected | unexpected |');
  out('|---|---|---|---|---:|');
  for (const a of r.attacks) out(`| ${a.name} | ${a.target} | ${fmtCounts(a.counts)} | ${a.expect ?? '(not checked)'} | ${a.expect ? a.unexpected : '-'} |`);
  out(`not soaked: ${Object.entries(r.notSoaked).map(([k, v]) => `item ${k}: ${v}`).join('; ')}`);
  out('');
  for (const w of r.warnings) out(`warning: ${w}`);
  if (r.failures.length === 0) out('PASS: both processes up, legit p99 under the limit, no legit failure, descriptors and RSS back to baseline');
  for (const f of r.failures) out(`FAIL: ${f}`);
}
