/** The run history's charts, drawn as inline SVG (no chart library): bars per run, a line per dataset. */
import { h, svg } from './dom.js';
import type { LagSeries, RunPoint } from './history.js';

const WIDTH = 640;
const HEIGHT = 180;
const PAD = { left: 64, right: 12, top: 12, bottom: 28 };
const PLOT_W = WIDTH - PAD.left - PAD.right;
const PLOT_H = HEIGHT - PAD.top - PAD.bottom;

interface Frame {
  from: number;
  to: number;
  max: number;
  format: (value: number) => string;
  label: string;
}

function xOf(frame: Frame, at: number): number {
  const span = Math.max(1, frame.to - frame.from);
  return PAD.left + ((at - frame.from) / span) * PLOT_W;
}

function yOf(frame: Frame, value: number): number {
  return PAD.top + PLOT_H - (frame.max === 0 ? 0 : (value / frame.max) * PLOT_H);
}

/** The axes: the maximum and zero on the left, the window's first and last day below. */
function axes(frame: Frame): SVGElement {
  // `12-03` over days, `12-03 16:40` (UTC) when the span is shorter.
  const long = frame.to - frame.from > 2 * 86_400_000;
  const day = (at: number) =>
    new Date(at)
      .toISOString()
      .slice(5, long ? 10 : 16)
      .replace('T', ' ');
  return svg(
    'g',
    { class: 'axes' },
    svg('line', { x1: PAD.left, y1: PAD.top + PLOT_H, x2: WIDTH - PAD.right, y2: PAD.top + PLOT_H }),
    svg('line', { x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: PAD.top + PLOT_H }),
    svg('text', { x: PAD.left - 6, y: PAD.top + 10, 'text-anchor': 'end' }, frame.format(frame.max)),
    svg('text', { x: PAD.left - 6, y: PAD.top + PLOT_H, 'text-anchor': 'end' }, frame.format(0)),
    svg('text', { x: PAD.left, y: HEIGHT - 8 }, day(frame.from)),
    svg('text', { x: WIDTH - PAD.right, y: HEIGHT - 8, 'text-anchor': 'end' }, day(frame.to)),
  );
}

function chart(frame: Frame, ...content: SVGElement[]): SVGElement {
  return svg(
    'svg',
    { class: 'chart', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': frame.label },
    axes(frame),
    ...content,
  );
}

/** One bar per run at its start time, `value` high; a failed run's bar is marked. */
export function barChart(options: {
  label: string;
  runs: readonly RunPoint[];
  value: (run: RunPoint) => number;
  format: (value: number) => string;
  from: number;
  to: number;
}): SVGElement {
  const max = Math.max(0, ...options.runs.map(options.value));
  const frame: Frame = { ...options, max };
  const barWidth = Math.max(2, Math.min(12, PLOT_W / Math.max(1, options.runs.length) - 1));
  const bars = options.runs.map((run) => {
    const value = options.value(run);
    const y = yOf(frame, value);
    return svg(
      'rect',
      {
        class: `bar ${run.status}`,
        x: (xOf(frame, run.at) - barWidth / 2).toFixed(1),
        y: y.toFixed(1),
        width: barWidth.toFixed(1),
        height: Math.max(1, PAD.top + PLOT_H - y).toFixed(1),
        'data-run': run.id,
      },
      svg('title', {}, `${run.id}: ${options.format(value)} (${run.status})`),
    );
  });
  return chart(frame, svg('g', { class: 'bars' }, ...bars));
}

/** One line per dataset through its lag after each run (its legend: {@link lagLegend}). */
export function lagChart(options: {
  label: string;
  series: readonly LagSeries[];
  format: (value: number) => string;
  from: number;
  to: number;
}): SVGElement {
  const max = Math.max(0, ...options.series.flatMap((s) => s.points.map((p) => p.lagMs)));
  const frame: Frame = { ...options, max };
  const lines = options.series.map((series, index) => {
    const points = series.points.map(
      (p) => `${xOf(frame, p.at).toFixed(1)},${yOf(frame, p.lagMs).toFixed(1)}`,
    );
    return svg(
      'g',
      { class: `series series-${index % 6}`, 'data-dataset': series.dataset },
      svg('polyline', { points: points.join(' ') }),
      ...series.points.map((p) =>
        svg('circle', { cx: xOf(frame, p.at).toFixed(1), cy: yOf(frame, p.lagMs).toFixed(1), r: 2.5 }),
      ),
    );
  });
  return chart(frame, ...lines);
}

/**
 * The legend of {@link lagChart}, below it rather than over the plot: per dataset a dot in its line's colour
 * (the same `series-N` class) and its name as `name` gives it.
 */
export function lagLegend(series: readonly LagSeries[], name: (dataset: string) => string): HTMLElement {
  return h(
    'ul',
    { class: 'legend', 'aria-label': 'Datasets' },
    ...series.map((one, index) =>
      h(
        'li',
        { 'data-dataset': one.dataset },
        svg(
          'svg',
          { class: 'swatch', width: 10, height: 10, viewBox: '0 0 10 10', 'aria-hidden': 'true' },
          svg('circle', { class: `series-${index % 6}`, cx: 5, cy: 5, r: 5 }),
        ),
        ` ${name(one.dataset)}`,
      ),
    ),
  );
}
