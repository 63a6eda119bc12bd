/**
 * The backfills section's logic, pure (no DOM), so it is tested without a browser: the form's check and the
 * request it sends, the progress it shows, and the poller that refreshes the list while a backfill is active.
 */
import type { BackfillView } from '@sluice/api';
import { formatBytes, formatCount } from '@sluice/api/view-format';
import { isActiveBackfill, MAX_BACKFILL_RANGE_MS } from '@sluice/core/backfills';
import { EVENT_DATASETS } from '@sluice/core/datasets';
import type { FieldIssue } from './api.js';
import { formatTime } from './history.js';

/** How often the list is read again while a backfill is queued or running. */
export const BACKFILL_REFRESH_MS = 2_000;

const HOUR_MS = 3_600_000;

/** The datasets of an export a backfill can export (its event datasets, not subscribers), in the API's order. */
export function backfillableDatasets(datasets: readonly string[]): string[] {
  return EVENT_DATASETS.filter((dataset) => datasets.includes(dataset));
}

/**
 * A time typed in the form, 24-hour UTC as the page shows times (`2026-12-03 10:00`, or `2026-12-03T10:00`;
 * seconds optional): epoch ms, NaN when not one.
 */
export function utcInputMs(value: string): number {
  const trimmed = value.trim();
  if (!/^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d{1,3})?)?$/.test(trimmed)) return Number.NaN;
  return Date.parse(`${trimmed.replace(' ', 'T')}Z`);
}

/** The form's value showing epoch ms in 24-hour UTC, to the minute: `2026-12-03 10:00`. */
export function utcInputValue(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
}

/** The range the form starts with: the 24 hours before the current UTC hour. */
export function defaultRange(nowMs: number): { from: string; to: string } {
  const to = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
  return { from: utcInputValue(to - 24 * HOUR_MS), to: utcInputValue(to) };
}

/** What the form holds when it is sent. */
export interface BackfillFormInput {
  datasets: readonly string[];
  /** "Entire history": `"from": "earliest"`, no `to`. */
  entireHistory: boolean;
  /** The `datetime-local` values, in UTC. */
  from: string;
  to: string;
}

/** The body to send, or the issues that keep the form from sending (paths as the API names them). */
export type BackfillRequest =
  | { ok: true; body: { datasets: string[]; from: string; to?: string } }
  | { ok: false; issues: FieldIssue[] };

/**
 * Checks the form before it is sent and builds the `POST …/backfills` body: at least one dataset; for a range,
 * both ends, `to` after `from`, at most 7 days apart. What only the API knows (the earliest available data,
 * the clock, a full-history backfill in the last 30 days) it answers itself.
 */
export function backfillRequest(input: BackfillFormInput): BackfillRequest {
  const issues: FieldIssue[] = [];
  const datasets = [...input.datasets];
  if (datasets.length === 0) issues.push({ path: 'datasets', message: 'Choose at least one dataset.' });
  if (input.entireHistory) {
    return issues.length > 0 ? { ok: false, issues } : { ok: true, body: { datasets, from: 'earliest' } };
  }
  const fromMs = utcInputMs(input.from);
  const toMs = utcInputMs(input.to);
  for (const [path, value, ms] of [
    ['from', input.from, fromMs],
    ['to', input.to, toMs],
  ] as const) {
    if (value === '') issues.push({ path, message: `Enter the ${path === 'from' ? 'start' : 'end'} (UTC).` });
    else if (Number.isNaN(ms)) issues.push({ path, message: 'Not a date and time.' });
  }
  if (!Number.isNaN(fromMs) && !Number.isNaN(toMs)) {
    if (toMs <= fromMs) issues.push({ path: 'to', message: 'The end must be after the start.' });
    else if (toMs - fromMs > MAX_BACKFILL_RANGE_MS) {
      issues.push({
        path: 'to',
        message: 'A backfill covers at most 7 days: split a longer range, or choose the entire history.',
      });
    }
  }
  if (issues.length > 0) return { ok: false, issues };
  return {
    ok: true,
    body: { datasets, from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() },
  };
}

/** One dataset's line of a backfill: windows done of total (the bar), and what it wrote. */
export interface DatasetProgressLine {
  dataset: string;
  windowsDone: number;
  windowsTotal: number;
  /** `3 of 5 windows · 1,234 rows · 5 files · 1.2 MiB` */
  text: string;
}

/** The progress of each dataset of a backfill, in the backfill's order. */
export function progressLines(backfill: BackfillView): DatasetProgressLine[] {
  return backfill.datasets.map((dataset) => {
    const p = backfill.progress[dataset] ?? { windowsDone: 0, windowsTotal: 0, rows: 0, files: 0, bytes: 0 };
    const windows = `${formatCount(p.windowsDone)} of ${counted(p.windowsTotal, 'window')}`;
    return {
      dataset,
      windowsDone: p.windowsDone,
      windowsTotal: p.windowsTotal,
      text: [windows, counted(p.rows, 'row'), counted(p.files, 'file'), formatBytes(p.bytes)].join(' · '),
    };
  });
}

/** `1 file`, `1,234 files` */
function counted(count: number, noun: string): string {
  return `${formatCount(count)} ${noun}${count === 1 ? '' : 's'}`;
}

/** `2026-12-01 00:00 UTC → 2026-12-02 00:00 UTC`, or `Entire history, from 2024-12-03 00:00 UTC`. */
export function rangeText(backfill: BackfillView): string {
  if (backfill.fullHistory) return `Entire history, from ${formatTime(backfill.from)}`;
  return `${formatTime(backfill.from)} → ${formatTime(backfill.to)}`;
}

/** True while any backfill is queued or running: the list is worth reading again. */
export function anyActive(backfills: readonly BackfillView[]): boolean {
  return backfills.some((backfill) => isActiveBackfill(backfill.status));
}

/**
 * Reads something now, then again every `intervalMs` for as long as the read answers true (a backfill is
 * still active). `refresh()` reads at once and starts polling again (after a create or a cancel); a read that
 * a later `refresh()` overtook schedules nothing, so there is one timer at most. `stop()` ends it for good
 * (the view was left).
 */
export class Poller {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private latest = 0;
  private stopped = false;

  constructor(
    private readonly read: () => Promise<boolean>,
    private readonly intervalMs: number = BACKFILL_REFRESH_MS,
  ) {}

  async refresh(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped) return;
    const call = ++this.latest;
    const again = await this.read();
    if (again && !this.stopped && call === this.latest) {
      this.timer = setTimeout(() => void this.refresh(), this.intervalMs);
    }
  }

  /** True while a read is scheduled. */
  get polling(): boolean {
    return this.timer !== undefined;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
