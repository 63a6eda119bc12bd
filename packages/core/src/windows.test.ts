import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FREQUENCIES } from './datasets.js';
import {
  commitEventSpans,
  DAY_MS,
  failureBackoffMs,
  gridExportLimit,
  gridPointAtOrBefore,
  gridStartOf,
  gridStepMs,
  HOUR_MS,
  isSnapshotDue,
  isWithinOneUtcDay,
  MAX_RUN_SPAN_MS,
  MAX_SPANS_PER_DATASET,
  planEventSpans,
  planSnapshot,
  type Span,
  spanWindows,
  splitAtBoundaries,
  splitAtMidnights,
  utcDate,
  type Window,
  windowDate,
  windowKey,
} from './windows.js';

const D = Date.parse('2026-09-30T00:00:00.000Z');

function inWindow(window: Window, recordedAtMs: number): boolean {
  return recordedAtMs > window.fromMs && recordedAtMs <= window.toMs;
}

describe('splitAtMidnights', () => {
  it('ends a day at 23:59:59.999 so a row recorded at exactly midnight belongs to the next day', () => {
    // Prepare
    const from = D - 10 * 60_000;
    const to = D + 8 * 60_000;
    // Act
    const windows = splitAtMidnights(from, to);
    // Assess
    expect(windows).toEqual([
      { fromMs: from, toMs: D - 1 },
      { fromMs: D - 1, toMs: to },
    ]);
    const [first, second] = windows as [Window, Window];
    expect(windowDate(first)).toBe('2026-09-29');
    expect(windowDate(second)).toBe('2026-09-30');
    expect(inWindow(first, D)).toBe(false);
    expect(inWindow(second, D)).toBe(true);
    expect(inWindow(first, D - 1)).toBe(true);
    expect(utcDate(D)).toBe(windowDate(second));
  });

  it('keeps a window that starts exactly at a midnight in one day', () => {
    const windows = splitAtMidnights(D, D + DAY_MS + 5);
    expect(windows).toEqual([
      { fromMs: D, toMs: D + DAY_MS - 1 },
      { fromMs: D + DAY_MS - 1, toMs: D + DAY_MS + 5 },
    ]);
    expect(windows.every(isWithinOneUtcDay)).toBe(true);
  });

  it('is empty for an empty span', () => {
    expect(splitAtMidnights(D, D)).toEqual([]);
    expect(splitAtMidnights(D, D - 5)).toEqual([]);
  });
});

describe('splitAtBoundaries', () => {
  it('ends an hour at hh:59:59.999 so a row recorded exactly on the hour belongs to the next window', () => {
    const from = D + 50 * 60_000;
    const to = D + 2 * HOUR_MS + 5;
    const windows = splitAtBoundaries(from, to, HOUR_MS);
    expect(windows).toEqual([
      { fromMs: from, toMs: D + HOUR_MS - 1 },
      { fromMs: D + HOUR_MS - 1, toMs: D + 2 * HOUR_MS - 1 },
      { fromMs: D + 2 * HOUR_MS - 1, toMs: to },
    ]);
    expect(inWindow(windows[0] as Window, D + HOUR_MS)).toBe(false);
    expect(inWindow(windows[1] as Window, D + HOUR_MS)).toBe(true);
  });

  it('cuts at the midnights too, and stops after the most windows asked for', () => {
    const windows = splitAtBoundaries(D - 90 * 60_000, D + 90 * 60_000, HOUR_MS);
    expect(windows.map((w) => w.toMs)).toEqual([D - HOUR_MS - 1, D - 1, D + HOUR_MS - 1, D + 90 * 60_000]);
    expect(windows.every(isWithinOneUtcDay)).toBe(true);
    expect(splitAtBoundaries(D, D + 10 * HOUR_MS, HOUR_MS, 3)).toEqual(
      splitAtBoundaries(D, D + 3 * HOUR_MS - 1, HOUR_MS),
    );
    expect(splitAtBoundaries(D, D + DAY_MS + 5, DAY_MS)).toEqual(splitAtMidnights(D, D + DAY_MS + 5));
  });
});

describe('the grid', () => {
  it('puts grid points on the last millisecond of each cell and starts an export at its cell', () => {
    const step = 15 * 60_000;
    expect(gridPointAtOrBefore(D - 1, step)).toBe(D - 1);
    expect(gridPointAtOrBefore(D, step)).toBe(D - 1);
    expect(gridPointAtOrBefore(D + step - 2, step)).toBe(D - 1);
    expect(gridPointAtOrBefore(D + step - 1, step)).toBe(D + step - 1);
    expect(gridStartOf(D, step)).toBe(D - 1); // a row at D is in the first window
    expect(gridStartOf(D + 7 * 60_000, step)).toBe(D - 1);
    expect(gridStepMs('every_5_minutes')).toBe(5 * 60_000);
    expect(gridStepMs('daily')).toBe(DAY_MS);
    // Whole cells older than the lag: at 10:17 with a 2-minute lag, through 10:14:59.999.
    expect(gridExportLimit(D + 17 * 60_000, 'every_5_minutes')).toBe(D + 15 * 60_000 - 1);
    expect(gridExportLimit(D + 17 * 60_000, 'hourly')).toBe(D - 1);
  });
});

describe('planEventSpans', () => {
  it('plans whole grid cells from the cursor to the grid limit', () => {
    const now = D + 40 * 60_000;
    const plan = planEventSpans({ cursorMs: D - 1, planned: [], nowMs: now, frequency: 'every_15_minutes' });
    expect(plan.spans.flatMap(spanWindows)).toEqual([
      { fromMs: D - 1, toMs: D + 15 * 60_000 - 1 },
      { fromMs: D + 15 * 60_000 - 1, toMs: D + 30 * 60_000 - 1 },
    ]);
    expect(plan.planned).toEqual(plan.spans);
    expect(plan.behind).toBe(false);
  });

  it('cuts windows at the frequency, a day for daily, never across a midnight', () => {
    const cursor = D - 3 * HOUR_MS - 1;
    const now = D + 30 * 60_000;
    const hourly = planEventSpans({ cursorMs: cursor, planned: [], nowMs: now, frequency: 'hourly' });
    expect(hourly.spans.flatMap(spanWindows).map((w) => w.toMs)).toEqual([
      D - 2 * HOUR_MS - 1,
      D - HOUR_MS - 1,
      D - 1,
    ]);
    const daily = planEventSpans({
      cursorMs: D - 2 * DAY_MS - 1,
      planned: [],
      nowMs: now,
      frequency: 'daily',
    });
    expect(daily.spans.flatMap(spanWindows).map((w) => w.toMs)).toEqual([D - DAY_MS - 1, D - 1]);
  });

  it('catches up at most seven days a run in at most MAX_SPANS_PER_DATASET spans and says it is behind', () => {
    const cursor = D - 20 * DAY_MS - 1;
    const plan = planEventSpans({ cursorMs: cursor, planned: [], nowMs: D, frequency: 'every_5_minutes' });
    expect(plan.spans).toHaveLength(MAX_SPANS_PER_DATASET);
    const windows = plan.spans.flatMap(spanWindows);
    expect(windows).toHaveLength(MAX_RUN_SPAN_MS / (5 * 60_000));
    expect(windows.at(-1)?.toMs).toBe(cursor + MAX_RUN_SPAN_MS);
    expect(plan.behind).toBe(true);
  });

  it('reuses planned spans exactly, a window planned by an older version included, before new ones', () => {
    const legacy = { fromMs: D - 1000, toMs: D - 1 };
    const span = { fromMs: D - 1, toMs: D + HOUR_MS - 1, stepMs: 15 * 60_000 };
    const now = D + 2 * HOUR_MS + 5 * 60_000;
    const plan = planEventSpans({
      cursorMs: D - 1000,
      planned: [legacy, span],
      nowMs: now,
      frequency: 'hourly',
    });
    expect(plan.spans).toEqual([
      legacy,
      span,
      { fromMs: D + HOUR_MS - 1, toMs: D + 2 * HOUR_MS - 1, stepMs: HOUR_MS },
    ]);
  });

  it('keeps planned spans past the limit for later when the clock went back', () => {
    const planned = [
      { fromMs: D - 1, toMs: D + 5 * 60_000 - 1, stepMs: 5 * 60_000 },
      { fromMs: D + 5 * 60_000 - 1, toMs: D + 10 * 60_000 - 1, stepMs: 5 * 60_000 },
    ];
    const plan = planEventSpans({
      cursorMs: D - 1,
      planned,
      nowMs: D + 8 * 60_000,
      frequency: 'every_5_minutes',
    });
    expect(plan.spans).toEqual([planned[0]]);
    expect(plan.planned).toEqual(planned);
  });

  it('plans nothing while no whole cell is older than the lag', () => {
    const plan = planEventSpans({
      cursorMs: D - 1,
      planned: [],
      nowMs: D + 16 * 60_000,
      frequency: 'every_15_minutes',
    });
    expect(plan.spans).toEqual([]);
    expect(plan.behind).toBe(false);
  });
});

describe('commitEventSpans', () => {
  const step = 10;
  const planned = [
    { fromMs: -1, toMs: 29, stepMs: step },
    { fromMs: 29, toMs: 49, stepMs: step },
  ];

  it('advances over the contiguous written prefix and keeps the rest of a span planned from there', () => {
    const written = new Set([9, 19, 39, 49]);
    const commit = commitEventSpans(-1, planned, (w) => written.has(w.toMs));
    expect(commit.cursorMs).toBe(19);
    expect(commit.committed.map((w) => w.toMs)).toEqual([9, 19]);
    expect(commit.planned).toEqual([{ fromMs: 19, toMs: 29, stepMs: step }, planned[1]]);
  });

  it('does not move when the first window is missing, and ignores spans that do not continue the cursor', () => {
    expect(commitEventSpans(-1, planned, (w) => w.toMs !== 9).cursorMs).toBe(-1);
    expect(commitEventSpans(5, planned, () => true).committed).toEqual([]);
  });
});

describe('schedule', () => {
  it('backs off from the frequency, doubling, up to six hours', () => {
    expect(failureBackoffMs('every_15_minutes', 1)).toBe(15 * 60_000);
    expect(failureBackoffMs('every_15_minutes', 2)).toBe(30 * 60_000);
    expect(failureBackoffMs('every_15_minutes', 3)).toBe(60 * 60_000);
    expect(failureBackoffMs('every_15_minutes', 10)).toBe(6 * 3_600_000);
    expect(failureBackoffMs('every_15_minutes', 1000)).toBe(6 * 3_600_000);
    expect(failureBackoffMs('daily', 1)).toBe(6 * 3_600_000);
  });

  it('takes one subscriber snapshot per UTC day', () => {
    expect(isSnapshotDue(undefined, D)).toBe(true);
    expect(isSnapshotDue('2026-09-29', D)).toBe(true);
    expect(isSnapshotDue('2026-09-30', D + DAY_MS - 1)).toBe(false);
    expect(planSnapshot('2026-09-30', undefined, D + 5)).toBeUndefined();
    expect(planSnapshot('2026-09-28', '2026-09-30', D + 5)).toBe('2026-09-30');
    // A snapshot unfinished when its day ended is finished first, under its own date.
    expect(planSnapshot('2026-09-28', '2026-09-29', D + 5)).toBe('2026-09-29');
    expect(planSnapshot(undefined, '2026-09-29', D + 5)).toBe('2026-09-29');
    expect(planSnapshot('2026-09-29', '2026-09-29', D + 5)).toBe('2026-09-30');
  });
});

type Step =
  | { kind: 'clock'; deltaMs: number }
  | { kind: 'toMidnight'; offsetMs: number }
  | { kind: 'pause' }
  | { kind: 'run'; written: boolean[] };

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('clock' as const),
    deltaMs: fc.integer({ min: -6 * 3_600_000, max: 10 * DAY_MS }),
  }),
  fc.record({
    kind: fc.constant('toMidnight' as const),
    offsetMs: fc.integer({ min: -200_000, max: 200_000 }),
  }),
  fc.record({ kind: fc.constant('pause' as const) }),
  fc.record({ kind: fc.constant('run' as const), written: fc.array(fc.boolean(), { maxLength: 60 }) }),
);

describe('planning and commits under any sequence of runs, failures, pauses and clock steps', () => {
  it('commits exactly the grid cells from the start, each once, within one UTC day, behind the limit, whatever the history', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: D - 40 * DAY_MS, max: D }),
        fc.integer({ min: 0, max: 10 * DAY_MS }),
        fc.constantFrom(...FREQUENCIES),
        fc.array(stepArbitrary, { maxLength: 40 }),
        (startFromMs, initialLeadMs, frequency, steps) => {
          const stepMs = gridStepMs(frequency);
          const start = gridStartOf(startFromMs, stepMs);
          let now = startFromMs + initialLeadMs;
          let cursor = start;
          let planned: Span[] = [];
          const committed: { window: Window; limit: number }[] = [];
          for (const step of steps) {
            if (step.kind === 'clock') now += step.deltaMs;
            else if (step.kind === 'toMidnight')
              now = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS + step.offsetMs;
            else if (step.kind === 'run') {
              const limit = gridExportLimit(now, frequency);
              const plan = planEventSpans({ cursorMs: cursor, planned, nowMs: now, frequency });
              // A retry walks the earlier spans exactly, as far as they are due.
              const due = planned.filter((_, i) => planned.slice(0, i + 1).every((w) => w.toMs <= limit));
              expect(plan.spans.slice(0, due.length)).toEqual(due);
              const windows = plan.spans.flatMap(spanWindows);
              let end = cursor;
              for (const window of windows) {
                expect(window.fromMs).toBe(end);
                expect(window.toMs).toBeLessThanOrEqual(limit);
                end = window.toMs;
              }
              expect(end - cursor).toBeLessThanOrEqual(MAX_RUN_SPAN_MS);
              if (plan.behind) expect(end).toBeLessThan(limit);
              const written = new Set(windows.filter((_, i) => step.written[i % 60] ?? true).map(windowKey));
              const commit = commitEventSpans(cursor, plan.planned, (w) => written.has(windowKey(w)));
              for (const window of commit.committed) committed.push({ window, limit });
              expect(commit.cursorMs).toBeGreaterThanOrEqual(cursor);
              cursor = commit.cursorMs;
              planned = commit.planned;
            }
          }
          // The committed windows are exactly the grid's cells from the start: the same names whoever wrote them.
          expect(committed.map(({ window }) => window)).toEqual(splitAtBoundaries(start, cursor, stepMs));
          for (const { window, limit } of committed) {
            expect(isWithinOneUtcDay(window)).toBe(true);
            expect(window.toMs).toBeLessThanOrEqual(limit);
            expect((window.toMs + 1) % stepMs).toBe(0);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('assigns every recorded instant to exactly one committed window, under the date it was recorded on', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: D - 10 * DAY_MS, max: D }),
        fc.array(fc.integer({ min: 1, max: 3 * DAY_MS }), { minLength: 1, maxLength: 10 }),
        fc.array(fc.integer({ min: 0, max: 10 * DAY_MS }), { maxLength: 30 }),
        fc.constantFrom(...FREQUENCIES),
        (startMs, clockSteps, offsets, frequency) => {
          let now = startMs;
          const start = gridStartOf(startMs, gridStepMs(frequency));
          let cursor = start;
          const windows: Window[] = [];
          for (const stepMs of clockSteps) {
            now += stepMs;
            const plan = planEventSpans({ cursorMs: cursor, planned: [], nowMs: now, frequency });
            expect(plan.spans.length).toBeLessThanOrEqual(MAX_SPANS_PER_DATASET);
            const commit = commitEventSpans(cursor, plan.planned, () => true);
            windows.push(...commit.committed);
            cursor = commit.cursorMs;
          }
          for (const offset of offsets) {
            const recordedAt = start + 1 + (offset % Math.max(cursor - start, 1));
            if (recordedAt > cursor) continue;
            const holders = windows.filter((w) => inWindow(w, recordedAt));
            expect(holders).toHaveLength(1);
            expect(windowDate(holders[0] as Window)).toBe(utcDate(recordedAt));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('planEventSpans after a frequency change', () => {
  it('continues a cursor off the new grid on the coarsest grid it lies on, up to a boundary of the new grid', () => {
    // Prepare: an every_5_minutes cursor at 10:05, the export now daily
    const cursorMs = D + 10 * HOUR_MS + 5 * 60_000 - 1;
    // Act
    const plan = planEventSpans({
      cursorMs,
      planned: [],
      nowMs: D + 2 * DAY_MS + HOUR_MS,
      frequency: 'daily',
    });
    // Assess: the coarsest grid 10:05 lies on is the 5-minute one: its cells to midnight, then whole days
    const windows = plan.spans.flatMap(spanWindows);
    expect(plan.spans[0]).toEqual({ fromMs: cursorMs, toMs: D + DAY_MS - 1, stepMs: 5 * 60_000 });
    expect(windows.filter((w) => w.toMs <= D + DAY_MS - 1)).toHaveLength((14 * 60 - 5) / 5);
    expect(windows.filter((w) => w.fromMs >= D + DAY_MS - 1)).toEqual([
      { fromMs: D + DAY_MS - 1, toMs: D + 2 * DAY_MS - 1 },
    ]);
    expect(windows.every((w) => (w.fromMs + 1) % (5 * 60_000) === 0)).toBe(true);
  });

  it('from hourly to daily: hourly cells to midnight, nothing off a grid', () => {
    const cursorMs = D + 10 * HOUR_MS - 1;
    const plan = planEventSpans({ cursorMs, planned: [], nowMs: D + DAY_MS + HOUR_MS, frequency: 'daily' });
    expect(plan.spans).toEqual([{ fromMs: cursorMs, toMs: D + DAY_MS - 1, stepMs: HOUR_MS }]);
  });

  it('waits for the boundary when the new grid has none yet older than the lag', () => {
    const cursorMs = D + 10 * HOUR_MS - 1;
    const plan = planEventSpans({ cursorMs, planned: [], nowMs: D + 20 * HOUR_MS, frequency: 'daily' });
    expect(plan.spans).toEqual([]);
  });
});
