/**
 * The dashboard's live chart: requests/s (left axis, from zero) and success % (right axis) over a
 * window that grows with the history and then slides. One uPlot instance per chart.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** Times (epoch seconds), requests/s, success % (null: no requests in that interval). */
export type RateHistory = [number[], (number | null)[], (number | null)[]];

const clock = (v: number): string => new Date(v * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

export function rateChart(into: HTMLElement, history: RateHistory, width: number, height: number, windowSeconds: number): uPlot {
  return new uPlot(
    {
      width,
      height,
      legend: { live: false },
      cursor: { show: false },
      scales: {
        x: { time: true, range: (_u, min, max) => [Math.min(Math.max(min, max - windowSeconds), max - 10), max] },
        y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
        sr: { range: [0, 100] },
      },
      series: [
        {},
        { label: 'requests/s', stroke: '#2f6fde', width: 1.5, fill: 'rgba(47,111,222,0.08)', scale: 'y' },
        { label: 'success %', stroke: '#1f9d55', width: 1.5, scale: 'sr' },
      ],
      axes: [
        { space: 90, values: (_u, splits) => splits.map(clock) },
        { scale: 'y', size: 50 },
        { scale: 'sr', side: 1, size: 40, grid: { show: false } },
      ],
    },
    history,
    into,
  );
}

/** Appends a point, keeping at most `max`. */
export function pushPoint(h: RateHistory, t: number, rps: number | null, successPercent: number | null, max: number): void {
  h[0].push(t);
  h[1].push(rps);
  h[2].push(successPercent);
  if (h[0].length > max) {
    h[0].shift();
    h[1].shift();
    h[2].shift();
  }
}
