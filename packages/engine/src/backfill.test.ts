import type { CursorState } from '@sluice/control';
import { type Backfill, type Destination, newDestination } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { backfillDoneAfter, planBackfillItems, reachedBeyond } from './backfill.js';
import { idleAdvanceWrites } from './dispatch.js';
import { exportLimitOf } from './positions.js';
import type { ItemResult, WindowResult } from './payloads.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const FROM = Date.parse('2026-11-01T00:00:00.000Z') - 1;

function backfill(overrides: Partial<Backfill> = {}): Backfill {
  return {
    id: 'bf_000000000000000000000001',
    workspaceId: 'ws',
    destinationId: 'exp_1',
    status: 'running',
    fullHistory: false,
    datasets: ['email_events'],
    from: new Date(FROM + 1).toISOString(),
    to: new Date(FROM + 1 + 10 * DAY_MS).toISOString(),
    range: { fromMs: FROM, toMs: FROM + 10 * DAY_MS, stepMs: HOUR_MS },
    doneThroughMs: {},
    reached: {},
    progress: {},
    attempts: 0,
    error: null,
    createdAt: '2026-12-03T00:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    updatedAt: '2026-12-03T00:00:00.000Z',
    ...overrides,
  };
}

function destination(overrides: Partial<Destination> = {}): Destination {
  return {
    ...newDestination({
      workspaceId: 'ws',
      id: 'exp_1',
      name: 'Backfill',
      provider: 's3',
      bucket: 'acme',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: '',
      accessKeyId: 'AKIA',
      secret: { encryptedDataKey: '', iv: '', ciphertext: '', tag: '' },
      datasets: ['email_events', 'custom_events'],
      frequency: 'hourly',
      startFrom: new Date(FROM - DAY_MS).toISOString(),
      now: new Date(FROM - DAY_MS),
    }),
    ...overrides,
  };
}
const NO_CURSORS = new Map<CursorState['dataset'], CursorState>();
const ALL_AVAILABLE = () => Number.NEGATIVE_INFINITY;

describe('planBackfillItems', () => {
  it('plans the current 7-day chunk of each dataset as spans of grid windows, from where it is done', () => {
    // Prepare
    const b = backfill({
      datasets: ['email_events', 'custom_events'],
      doneThroughMs: { custom_events: FROM + 7 * DAY_MS },
    });

    // Act
    const { items } = planBackfillItems(b, destination(), NO_CURSORS, ALL_AVAILABLE);

    // Assess: email_events the first chunk in 8 spans; custom_events the rest, 3 days, in 8 spans
    const email = items.filter((item) => item.dataset === 'email_events');
    const custom = items.filter((item) => item.dataset === 'custom_events');
    expect(email).toHaveLength(8);
    expect(email[0]).toMatchObject({ kind: 'events', fromMs: FROM, stepMs: HOUR_MS });
    expect(email.at(-1)).toMatchObject({ toMs: FROM + 7 * DAY_MS });
    expect(custom[0]).toMatchObject({ fromMs: FROM + 7 * DAY_MS });
    expect(custom.at(-1)).toMatchObject({ toMs: FROM + 10 * DAY_MS });
  });

  it('plans nothing for a dataset already done', () => {
    const b = backfill({ doneThroughMs: { email_events: FROM + 10 * DAY_MS } });
    expect(planBackfillItems(b, destination(), NO_CURSORS, ALL_AVAILABLE)).toEqual({
      items: [],
      skipped: [],
    });
  });

  it('cuts time the regular export passed with nothing new on the grid it passed it on, not the era before (seed 10002)', () => {
    // Prepare: a daily export delivered through day 2, then switched to every 5 minutes; at 14:52 on day 2
    // Dispatch finds nothing new and moves the cursor to the export limit (no window planned)
    const FIVE_MIN_MS = 300_000;
    const switched = destination({ frequency: 'every_5_minutes' });
    const format = { format: switched.format, compression: switched.compression };
    const before: CursorState = {
      dataset: 'email_events',
      exportedThroughMs: FROM + 2 * DAY_MS,
      plannedSpans: [],
      eras: [{ fromMs: FROM, stepMs: DAY_MS, format } as NonNullable<CursorState['eras']>[number]],
    };
    const nowMs = FROM + 2 * DAY_MS + 14 * HOUR_MS + 52 * 60_000;
    const limit = exportLimitOf(switched, nowMs);
    const [write] = idleAdvanceWrites(switched, new Map([['email_events', before]]), nowMs).filter(
      (w) => w.dataset === 'email_events',
    );
    const after: CursorState = {
      ...before,
      exportedThroughMs: write?.next?.exportedThroughMs ?? 0,
      eras: write?.eras ?? before.eras ?? [],
    };
    // Act: a backfill of 13:00 to the export limit
    const { items } = planBackfillItems(
      backfill({ range: { fromMs: FROM + 2 * DAY_MS + 13 * HOUR_MS, toMs: limit, stepMs: FIVE_MIN_MS } }),
      switched,
      new Map([['email_events', after]]),
      ALL_AVAILABLE,
    );
    // Assess: 5-minute windows from 13:00 to the limit; no part of the day in the daily grid (its file
    // would be written before the day ended and hold rows of 5-minute files)
    expect(after.exportedThroughMs).toBe(limit);
    expect(items.length).toBeGreaterThan(0);
    expect(items.every((item) => item.kind === 'events' && item.stepMs === FIVE_MIN_MS)).toBe(true);
    expect(items[0]).toMatchObject({ fromMs: FROM + 2 * DAY_MS + 13 * HOUR_MS });
    expect(items.at(-1)).toMatchObject({ toMs: limit });
  });

  it('plans each window in the format and on the grid it was delivered with, from the eras the cursor keeps', () => {
    // Prepare: JSON lines, daily for the first 3 days; Parquet, hourly from then on; now the export is
    // Parquet zstd hourly and its cursor is through day 5
    const parquet = { format: 'parquet', compression: 'snappy' } as const;
    const cursors = new Map<CursorState['dataset'], CursorState>([
      [
        'email_events',
        {
          dataset: 'email_events',
          exportedThroughMs: FROM + 5 * DAY_MS,
          plannedSpans: [],
          eras: [
            { fromMs: FROM, stepMs: DAY_MS, format: { format: 'jsonl', compression: 'gzip' } },
            { fromMs: FROM + 3 * DAY_MS, stepMs: HOUR_MS, format: parquet },
          ],
        },
      ],
    ]);
    const b = backfill({
      range: { fromMs: FROM + 2 * DAY_MS + 5 * HOUR_MS, toMs: FROM + 6 * DAY_MS, stepMs: HOUR_MS },
    });
    // Act
    const { items } = planBackfillItems(
      b,
      destination({ format: 'parquet', compression: 'zstd' }),
      cursors,
      ALL_AVAILABLE,
    );
    // Assess: day 2 whole (daily, JSON lines), days 3-4 hourly Parquet snappy, day 5 the current format
    expect(items[0]).toMatchObject({
      fromMs: FROM + 2 * DAY_MS,
      toMs: FROM + 3 * DAY_MS,
      stepMs: DAY_MS,
      format: { format: 'jsonl' },
    });
    expect(
      items
        .filter(
          (item) =>
            item.kind === 'events' && item.toMs <= FROM + 5 * DAY_MS && item.fromMs >= FROM + 3 * DAY_MS,
        )
        .every(
          (item) =>
            item.format?.compression === 'snappy' && item.kind === 'events' && item.stepMs === HOUR_MS,
        ),
    ).toBe(true);
    expect(items.at(-1)).toMatchObject({
      toMs: FROM + 6 * DAY_MS,
      stepMs: HOUR_MS,
      format: { compression: 'zstd' },
    });
  });

  it('skips the windows that lost rows, and reports them', () => {
    // Prepare: rows are available from hour 40 and a half
    const b = backfill();
    // Act
    const plan = planBackfillItems(
      b,
      destination({ datasets: ['email_events'] }),
      NO_CURSORS,
      () => FROM + 40 * HOUR_MS + 30 * 60_000,
    );
    // Assess: the backfill goes on after hour 41; hours 0 to 41 reported
    expect(plan.skipped).toEqual([
      {
        dataset: 'email_events',
        throughMs: FROM + 41 * HOUR_MS,
        expired: { fromMs: FROM, toMs: FROM + 41 * HOUR_MS },
      },
    ]);
    expect(plan.items[0]).toMatchObject({ fromMs: FROM + 41 * HOUR_MS });
  });
});

describe('backfillDoneAfter', () => {
  const span = (fromH: number, toH: number) => ({
    fromMs: FROM + fromH * HOUR_MS,
    toMs: FROM + toH * HOUR_MS,
  });
  const written = (fromH: number, toH: number): WindowResult => ({
    dataset: 'email_events',
    kind: 'events',
    ...span(fromH, toH),
    status: 'written',
    rows: 1,
    files: 1,
    bytes: 1,
  });

  it('moves over the written spans in order, through the last complete window of a partial one', () => {
    const results: ItemResult[] = [
      written(4, 8),
      written(0, 4),
      { ...written(8, 12), status: 'partial', doneThroughMs: FROM + 10 * HOUR_MS },
      written(12, 16),
    ];
    expect(backfillDoneAfter(backfill(), results)).toEqual({ email_events: FROM + 10 * HOUR_MS });
  });

  it('stops at a span that failed: later written spans count next time', () => {
    const results: ItemResult[] = [
      written(0, 4),
      {
        status: 'failed',
        item: { dataset: 'email_events', kind: 'events', ...span(4, 8) },
        error: { Error: 'X', Cause: 'y' },
      },
      written(8, 12),
    ];
    expect(backfillDoneAfter(backfill(), results)).toEqual({ email_events: FROM + 4 * HOUR_MS });
  });
});

describe('reachedBeyond', () => {
  it('keeps the spans finished beyond the new position, and an empty entry for every dataset', () => {
    // Prepare: spans of email reached 4 h, 10 h and 14 h; custom has none stored.
    const b = backfill({
      datasets: ['email_events', 'custom_events'],
      reached: {
        email_events: {
          [String(FROM)]: FROM + 4 * HOUR_MS,
          [String(FROM + 8 * HOUR_MS)]: FROM + 10 * HOUR_MS,
          [String(FROM + 12 * HOUR_MS)]: FROM + 14 * HOUR_MS,
        },
      },
    });

    // Act: email is done through 10 h
    const kept = reachedBeyond(b, { email_events: FROM + 10 * HOUR_MS });

    // Assess
    expect(kept).toEqual({
      email_events: { [String(FROM + 12 * HOUR_MS)]: FROM + 14 * HOUR_MS },
      custom_events: {},
    });
  });
});
