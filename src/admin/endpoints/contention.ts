import type { BlockedPeriod, DelayStats, EventLoopMonitor } from '../event-loop.js';
import { negotiate, type AdminEndpoint } from '../handler.js';

const LONGEST = 10;

interface ContentionReport {
  readonly since: string;
  readonly delayMs: DelayStats;
  readonly longestBlocks: readonly { readonly startedAt: string; readonly durationMs: number }[];
}

function report(monitor: EventLoopMonitor): ContentionReport {
  const block = (p: BlockedPeriod): ContentionReport['longestBlocks'][number] => ({
    startedAt: new Date(p.startedAt).toISOString(),
    durationMs: Math.round((p.endUs - p.startUs) / 100) / 10,
  });
  return {
    since: new Date(monitor.since).toISOString(),
    delayMs: monitor.delay(),
    longestBlocks: monitor.longestBlocks(LONGEST).map(block),
  };
}

function renderText(r: ContentionReport): string {
  const ms = (v: number): string => `${v.toFixed(2)} ms`;
  const d = r.delayMs;
  const lines = [
    `event-loop delay since ${r.since} (${d.count} samples)`,
    `  min ${ms(d.min)}  mean ${ms(d.mean)}  stddev ${ms(d.stddev)}  max ${ms(d.max)}`,
    `  ${Object.entries(d.percentiles)
      .map(([p, v]) => `${p} ${ms(v)}`)
      .join('  ')}`,
    '',
    r.longestBlocks.length === 0 ? 'no blocked periods recorded' : 'longest recent blocked periods:',
    ...r.longestBlocks.map((b) => `  ${b.startedAt}  ${ms(b.durationMs)}`),
  ];
  return lines.join('\n');
}

/**
 * `/admin/contention`: in Node the counterpart of blocked threads is a blocked event loop, so
 * this shows the event-loop delay distribution and the longest recent periods the loop was
 * blocked. `/admin/pprof/contention` shows which code ran during such periods.
 */
export function contentionEndpoint(monitor: EventLoopMonitor): AdminEndpoint {
  return {
    path: '/admin/contention',
    description: 'Event-loop delay statistics and the longest recent blocked periods.',
    handler: (req) => {
      const r = report(monitor);
      return negotiate(req, { text: () => renderText(r), json: () => r });
    },
  };
}
