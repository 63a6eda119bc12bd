import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FREQUENCIES } from './datasets.js';
import {
  commitEventWindows,
  DAY_MS,
  EXPORT_LAG_MS,
  failureBackoffMs,
  HOUR_MS,
  isSnapshotDue,
  isWithinOneUtcDay,
  MAX_RUN_SPAN_MS,
  MAX_WINDOWS_PER_RUN,
  maxWindowMs,
  nextScheduledRun,
  planEventWindows,
  planSnapshot,
  splitAtBoundaries,
  splitAtMidnights,
  utcDate,
  type Window,
  windowDate,
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

describe('planEventWindows', () => {
  it('plans from the cursor to now minus the lag', () => {
    const now = D + 3_600_000;
    const plan = planEventWindows({ cursorMs: D + 60_000, planned: [], nowMs: now, frequency: 'hourly' });
    expect(plan.windows).toEqual([{ fromMs: D + 60_000, toMs: now - EXPORT_LAG_MS }]);
    expect(plan.planned).toEqual(plan.windows);
    expect(plan.behind).toBe(false);
  });

  it('has windows of at most an hour, a day for daily', () => {
    expect(maxWindowMs('every_5_minutes')).toBe(HOUR_MS);
    expect(maxWindowMs('every_15_minutes')).toBe(HOUR_MS);
    expect(maxWindowMs('hourly')).toBe(HOUR_MS);
    expect(maxWindowMs('daily')).toBe(DAY_MS);
    const cursor = D - 3 * HOUR_MS - 1234;
    const now = D + 30 * 60_000;
    for (const frequency of ['every_5_minutes', 'every_15_minutes', 'hourly'] as const) {
      const plan = planEventWindows({ cursorMs: cursor, planned: [], nowMs: now, frequency });
      expect(plan.windows.map((w) => w.toMs)).toEqual([
        D - 3 * HOUR_MS - 1,
        D - 2 * HOUR_MS - 1,
        D - HOUR_MS - 1,
        D - 1,
        now - EXPORT_LAG_MS,
      ]);
      expect(plan.behind).toBe(false);
    }
    const daily = planEventWindows({ cursorMs: cursor, planned: [], nowMs: now, frequency: 'daily' });
    expect(daily.windows.map((w) => w.toMs)).toEqual([D - 1, now - EXPORT_LAG_MS]);
  });

  it('catches up at most seven days a run with daily windows and says it is behind', () => {
    const cursor = D - 20 * DAY_MS + 1234;
    const plan = planEventWindows({ cursorMs: cursor, planned: [], nowMs: D, frequency: 'daily' });
    expect(plan.windows.at(-1)?.toMs).toBe(cursor + MAX_RUN_SPAN_MS);
    expect(plan.windows).toHaveLength(8);
    expect(plan.behind).toBe(true);
  });

  it('catches up at most MAX_WINDOWS_PER_RUN hourly windows a run and says it is behind', () => {
    const cursor = D - 20 * DAY_MS + 1234;
    const plan = planEventWindows({ cursorMs: cursor, planned: [], nowMs: D, frequency: 'every_15_minutes' });
    expect(MAX_WINDOWS_PER_RUN).toBe(48);
    expect(plan.windows).toHaveLength(MAX_WINDOWS_PER_RUN);
    expect(plan.windows[0]).toEqual({ fromMs: cursor, toMs: D - 20 * DAY_MS + HOUR_MS - 1 });
    expect(plan.windows.at(-1)?.toMs).toBe(D - 18 * DAY_MS - 1);
    expect(plan.planned).toEqual(plan.windows);
    expect(plan.behind).toBe(true);
  });

  it('reuses planned windows exactly before planning new ones', () => {
    const planned = [
      { fromMs: D - 1000, toMs: D - 1 },
      { fromMs: D - 1, toMs: D + 500 },
    ];
    const now = D + 3_600_000;
    const plan = planEventWindows({ cursorMs: D - 1000, planned, nowMs: now, frequency: 'hourly' });
    expect(plan.windows).toEqual([...planned, { fromMs: D + 500, toMs: now - EXPORT_LAG_MS }]);
  });

  it('reuses day-long windows planned before windows were cut hourly as they are', () => {
    const planned = splitAtMidnights(D - 2 * DAY_MS + 77, D + 5 * HOUR_MS);
    expect(planned).toHaveLength(3);
    const now = D + 6 * HOUR_MS + 30 * 60_000;
    const plan = planEventWindows({
      cursorMs: D - 2 * DAY_MS + 77,
      planned,
      nowMs: now,
      frequency: 'hourly',
    });
    expect(plan.windows).toEqual([
      ...planned,
      { fromMs: D + 5 * HOUR_MS, toMs: D + 6 * HOUR_MS - 1 },
      { fromMs: D + 6 * HOUR_MS - 1, toMs: now - EXPORT_LAG_MS },
    ]);
    expect(plan.behind).toBe(false);
  });

  it('reuses at most MAX_WINDOWS_PER_RUN planned windows and keeps the rest planned', () => {
    const planned = splitAtBoundaries(D - 3 * DAY_MS, D - 1, HOUR_MS);
    expect(planned).toHaveLength(72);
    const plan = planEventWindows({
      cursorMs: D - 3 * DAY_MS,
      planned,
      nowMs: D + HOUR_MS,
      frequency: 'hourly',
    });
    expect(plan.windows).toEqual(planned.slice(0, MAX_WINDOWS_PER_RUN));
    expect(plan.planned).toEqual(planned);
    expect(plan.behind).toBe(true);
  });

  it('keeps planned windows past now minus the lag for later when the clock went back', () => {
    const planned = [
      { fromMs: D, toMs: D + 60_000 },
      { fromMs: D + 60_000, toMs: D + 600_000 },
    ];
    const plan = planEventWindows({ cursorMs: D, planned, nowMs: D + 300_000, frequency: 'hourly' });
    expect(plan.windows).toEqual([planned[0]]);
    expect(plan.planned).toEqual(planned);
  });

  it('plans nothing when the cursor is at or past now minus the lag', () => {
    const plan = planEventWindows({
      cursorMs: D,
      planned: [],
      nowMs: D + EXPORT_LAG_MS,
      frequency: 'hourly',
    });
    expect(plan.windows).toEqual([]);
    expect(plan.behind).toBe(false);
  });
});

describe('commitEventWindows', () => {
  const planned = [
    { fromMs: 0, toMs: 10 },
    { fromMs: 10, toMs: 20 },
    { fromMs: 20, toMs: 30 },
  ];

  it('advances over the contiguous written prefix only', () => {
    const written = new Set([10, 30]);
    const commit = commitEventWindows(0, planned, (w) => written.has(w.toMs));
    expect(commit.cursorMs).toBe(10);
    expect(commit.committed).toEqual([planned[0]]);
    expect(commit.planned).toEqual([planned[1], planned[2]]);
  });

  it('does not move when the first window is missing', () => {
    const commit = commitEventWindows(0, planned, (w) => w.toMs !== 10);
    expect(commit.cursorMs).toBe(0);
    expect(commit.planned).toEqual(planned);
  });

  it('ignores planned windows that do not continue the cursor', () => {
    const commit = commitEventWindows(5, planned, () => true);
    expect(commit.cursorMs).toBe(5);
    expect(commit.committed).toEqual([]);
  });
});

describe('schedule', () => {
  it('runs on the next aligned slot of the frequency', () => {
    expect(nextScheduledRun(D + 7 * 60_000, 'every_5_minutes')).toBe(D + 10 * 60_000);
    expect(nextScheduledRun(D + 15 * 60_000, 'every_15_minutes')).toBe(D + 30 * 60_000);
    expect(nextScheduledRun(D + 1, 'hourly')).toBe(D + 3_600_000);
    expect(nextScheduledRun(D + 1, 'daily')).toBe(D + DAY_MS);
  });

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
    expect(planSnapshot('2026-09-28', '2026-09-29', D + 5)).toBe('2026-09-30');
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
  it('keeps committed windows contiguous from the start, within one UTC day, no longer than maxWindowMs, at most MAX_WINDOWS_PER_RUN a run, behind now minus the lag, and replans identical windows on retry', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: D - 40 * DAY_MS, max: D }),
        fc.integer({ min: 0, max: 40 * DAY_MS }),
        fc.constantFrom(...FREQUENCIES),
        fc.integer({ min: 0, max: MAX_RUN_SPAN_MS }),
        fc.array(stepArbitrary, { maxLength: 40 }),
        (startMs, initialLeadMs, frequency, legacyMs, steps) => {
          let now = startMs + initialLeadMs;
          let cursor = startMs;
          // Day-long windows planned before windows were cut hourly, stored and not committed yet.
          let planned: Window[] = splitAtMidnights(
            startMs,
            Math.min(startMs + legacyMs, now - EXPORT_LAG_MS),
          );
          const legacy = new Set(planned.map((w) => `${w.fromMs}-${w.toMs}`));
          const committed: { window: Window; limit: number }[] = [];
          for (const step of steps) {
            if (step.kind === 'clock') now += step.deltaMs;
            else if (step.kind === 'toMidnight')
              now = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS + step.offsetMs;
            else if (step.kind === 'run') {
              const limit = now - EXPORT_LAG_MS;
              const plan = planEventWindows({ cursorMs: cursor, planned, nowMs: now, frequency });
              // A retry replans the earlier windows exactly, as far as they are due (and fit in the run).
              const due = planned
                .filter((_, i) => planned.slice(0, i + 1).every((w) => w.toMs <= limit))
                .slice(0, MAX_WINDOWS_PER_RUN);
              expect(plan.windows.slice(0, due.length)).toEqual(due);
              expect(plan.windows.length).toBeLessThanOrEqual(MAX_WINDOWS_PER_RUN);
              let end = cursor;
              for (const window of plan.windows) {
                expect(window.fromMs).toBe(end);
                expect(isWithinOneUtcDay(window)).toBe(true);
                expect(window.toMs).toBeLessThanOrEqual(limit);
                if (!legacy.has(`${window.fromMs}-${window.toMs}`))
                  expect(window.toMs - window.fromMs).toBeLessThanOrEqual(maxWindowMs(frequency));
                end = window.toMs;
              }
              expect(end - cursor).toBeLessThanOrEqual(MAX_RUN_SPAN_MS);
              if (plan.behind) expect(end).toBeLessThan(limit);
              else expect(end).toBe(Math.max(cursor, limit));
              const written = new Set(
                plan.windows.filter((_, i) => step.written[i] ?? true).map((w) => `${w.fromMs}-${w.toMs}`),
              );
              const commit = commitEventWindows(cursor, plan.planned, (w) =>
                written.has(`${w.fromMs}-${w.toMs}`),
              );
              for (const window of commit.committed) committed.push({ window, limit });
              expect(commit.cursorMs).toBeGreaterThanOrEqual(cursor);
              cursor = commit.cursorMs;
              planned = commit.planned;
              if (plan.windows.every((w) => written.has(`${w.fromMs}-${w.toMs}`)) && !plan.behind) {
                expect(cursor).toBe(Math.max(end, cursor));
              }
            }
          }
          let end = startMs;
          for (const { window, limit } of committed) {
            expect(window.fromMs).toBe(end);
            expect(window.toMs).toBeGreaterThan(window.fromMs);
            expect(isWithinOneUtcDay(window)).toBe(true);
            expect(window.toMs).toBeLessThanOrEqual(limit);
            end = window.toMs;
          }
          expect(end).toBe(cursor);
        },
      ),
      { numRuns: 500 },
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
          let cursor = startMs;
          const windows: Window[] = [];
          for (const stepMs of clockSteps) {
            now += stepMs;
            const plan = planEventWindows({ cursorMs: cursor, planned: [], nowMs: now, frequency });
            expect(plan.windows.length).toBeLessThanOrEqual(MAX_WINDOWS_PER_RUN);
            expect(plan.windows.every((w) => w.toMs - w.fromMs <= maxWindowMs(frequency))).toBe(true);
            const commit = commitEventWindows(cursor, plan.planned, () => true);
            windows.push(...commit.committed);
            cursor = commit.cursorMs;
          }
          for (const offset of offsets) {
            const recordedAt = startMs + 1 + (offset % Math.max(cursor - startMs, 1));
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
