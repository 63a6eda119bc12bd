import { describe, expect, it } from 'vitest';
import {
  backfillChunks,
  backfillId,
  backfillRange,
  backfillRetryDelayMs,
  chunkEndAfter,
  MAX_BACKFILL_RANGE_MS,
  windowCount,
  windowsDoneOf,
} from './backfills.js';
import { DAY_MS, gridExportLimit, HOUR_MS } from './windows.js';

const NOW = Date.parse('2026-12-03T16:30:00.000Z');

describe('backfillRange', () => {
  it('covers the grid cells holding [from, to): a to on a cell boundary ends the range there', () => {
    // Prepare
    const from = Date.parse('2026-12-03T10:20:00.000Z');
    const to = Date.parse('2026-12-03T13:00:00.000Z');

    // Act
    const range = backfillRange(from, to, 'hourly', NOW);

    // Assess: (09:59:59.999, 12:59:59.999], three hourly windows
    expect(range).toEqual({
      fromMs: Date.parse('2026-12-03T10:00:00.000Z') - 1,
      toMs: Date.parse('2026-12-03T13:00:00.000Z') - 1,
      stepMs: HOUR_MS,
    });
    expect(windowCount(range.fromMs, range.toMs, range.stepMs)).toBe(3);
  });

  it('takes the whole cell holding a to inside it, and never passes the export limit', () => {
    const inside = backfillRange(NOW - 3 * HOUR_MS, NOW - 2 * HOUR_MS + 1, 'hourly', NOW);
    expect(inside.toMs).toBe(Date.parse('2026-12-03T14:59:59.999Z'));
    const recent = backfillRange(NOW - 2 * HOUR_MS, NOW, 'every_5_minutes', NOW);
    expect(recent.toMs).toBe(gridExportLimit(NOW, 'every_5_minutes'));
  });

  it('is empty (to = from) when nothing of it is older than the export lag', () => {
    const range = backfillRange(NOW - 60_000, NOW, 'daily', NOW);
    expect(range.toMs).toBe(range.fromMs);
    expect(backfillChunks(range)).toEqual([]);
  });
});

describe('chunks', () => {
  it('cuts a range into consecutive chunks of at most 7 days, each ending on the grid', () => {
    // Prepare: 16 days and 2 hours of hourly windows
    const fromMs = Date.parse('2026-11-01T00:00:00.000Z') - 1;
    const range = { fromMs, toMs: fromMs + 16 * DAY_MS + 2 * HOUR_MS, stepMs: HOUR_MS };

    // Act
    const chunks = backfillChunks(range);

    // Assess
    expect(chunks).toEqual([
      { fromMs, toMs: fromMs + MAX_BACKFILL_RANGE_MS },
      { fromMs: fromMs + MAX_BACKFILL_RANGE_MS, toMs: fromMs + 2 * MAX_BACKFILL_RANGE_MS },
      { fromMs: fromMs + 2 * MAX_BACKFILL_RANGE_MS, toMs: range.toMs },
    ]);
    expect(chunkEndAfter(range, fromMs)).toBe(chunks[0]?.toMs);
    expect(chunkEndAfter(range, fromMs + 3 * DAY_MS)).toBe(chunks[0]?.toMs);
    expect(chunkEndAfter(range, chunks[0]!.toMs)).toBe(chunks[1]?.toMs);
    expect(chunkEndAfter(range, chunks[2]!.fromMs + HOUR_MS)).toBe(range.toMs);
  });
});

describe('windowsDoneOf', () => {
  const fromMs = Date.parse('2026-11-01T00:00:00.000Z') - 1;
  const range = { fromMs, toMs: fromMs + 10 * DAY_MS, stepMs: DAY_MS };
  const at = (days: number) => fromMs + days * DAY_MS;

  it('counts the windows through the committed position, then those writers reached beyond it, overlaps once', () => {
    expect(windowsDoneOf(range, at(0))).toBe(0);
    expect(windowsDoneOf(range, at(3))).toBe(3);
    // Spans (3, 5] reached 5, (5, 7] reached 6, and (2, 4] reached 4 (an older span, partly committed).
    const reached = { [String(at(3))]: at(5), [String(at(5))]: at(6), [String(at(2))]: at(4) };
    expect(windowsDoneOf(range, at(3), reached)).toBe(6);
  });

  it('leaves gaps uncounted, never passes the range, and a span that reached nothing adds nothing', () => {
    const reached = { [String(at(6))]: at(8), [String(at(9))]: at(12), [String(at(4))]: at(4) };
    expect(windowsDoneOf(range, at(2), reached)).toBe(2 + 2 + 1);
    expect(windowsDoneOf(range, range.toMs, reached)).toBe(10);
  });
});

describe('ids and retries', () => {
  it('makes ids that sort by creation time', () => {
    const a = backfillId(NOW, 'ffffffffffff');
    const b = backfillId(NOW + 1, '000000000000');
    expect(a).toMatch(/^bf_[0-9a-f]{24}$/);
    expect([b, a].sort()).toEqual([a, b]);
  });

  it('backs off from 30 s, doubling, to at most 30 minutes', () => {
    expect([1, 2, 3, 10].map(backfillRetryDelayMs)).toEqual([30_000, 60_000, 120_000, 1_800_000]);
  });
});
