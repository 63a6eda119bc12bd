/** The run history's numbers, as the console charts them: pure, so it is tested without a browser. */
import type { RunView } from './api.js';

/** How far back the API keeps runs, and the console charts them. */
export const HISTORY_DAYS = 14;

/** One run on the rows and bytes charts. */
export interface RunPoint {
  id: string;
  /** `startedAt`, epoch ms. */
  at: number;
  status: RunView['status'];
  rows: number;
  bytes: number;
}

/** One dataset's lag after each run that exported a window of it. */
export interface LagSeries {
  dataset: string;
  /** `at`: when the run finished; `lagMs`: how far the exported window's end was behind that moment. */
  points: { at: number; lagMs: number }[];
}

/** The history of `[now - 14 days, now]`, oldest first, and the span the charts show. */
export interface RunHistory {
  /** The charts' time axis: from just before the first run in the window (or an hour ago) to now. */
  from: number;
  to: number;
  runs: RunPoint[];
  lag: LagSeries[];
}

/**
 * Builds the chart data from the runs (any order) of the last {@link HISTORY_DAYS} days before `now`, the time
 * axis starting just before the first of them (so a day of runs is not squeezed into a fourteenth of the width):
 * - rows and bytes per run, by start time, runs older than the window left out;
 * - per dataset, the lag each finished run left: its finish time minus the end of the window it exported
 *   (`stats[dataset].toMs`); a snapshot dataset (subscribers) counts from its snapshot day's end.
 */
export function runHistory(runs: readonly RunView[], now: Date): RunHistory {
  const to = now.getTime();
  const from = to - HISTORY_DAYS * 86_400_000;
  const inWindow = runs
    .map((run) => ({ run, at: Date.parse(run.startedAt) }))
    .filter(({ at }) => Number.isFinite(at) && at >= from && at <= to)
    .sort((a, b) => a.at - b.at);
  const lag = new Map<string, LagSeries['points']>();
  for (const { run } of inWindow) {
    const finished = run.finishedAt === null ? Number.NaN : Date.parse(run.finishedAt);
    if (!Number.isFinite(finished)) continue;
    for (const [dataset, stats] of Object.entries(run.stats)) {
      const through = exportedEnd(stats);
      if (through === undefined) continue;
      const points = lag.get(dataset) ?? [];
      points.push({ at: finished, lagMs: Math.max(0, finished - through) });
      lag.set(dataset, points);
    }
  }
  const first = inWindow[0]?.at ?? to - 3_600_000;
  const shownFrom = Math.max(from, first - Math.max(60_000, (to - first) * 0.05));
  return {
    from: shownFrom,
    to,
    runs: inWindow.map(({ run, at }) => ({
      id: run.id,
      at,
      status: run.status,
      rows: run.rowCount,
      bytes: run.byteCount,
    })),
    lag: [...lag.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([dataset, points]) => ({ dataset, points })),
  };
}

function exportedEnd(stats: Record<string, unknown>): number | undefined {
  if (typeof stats.toMs === 'number' && Number.isFinite(stats.toMs)) return stats.toMs;
  if (typeof stats.snapshotDate === 'string') {
    const day = Date.parse(`${stats.snapshotDate}T00:00:00Z`);
    if (Number.isFinite(day)) return day + 86_400_000;
  }
  return undefined;
}

/** `45 s`, `12 min`, `3.5 h`, `2.0 d` */
export function formatDuration(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

/** `2026-12-03 16:40 UTC`, or `not yet` for null. */
export function formatTime(iso: string | null): string {
  if (iso === null) return 'not yet';
  const at = Date.parse(iso);
  if (!Number.isFinite(at)) return iso;
  return `${new Date(at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
