import type { CursorState } from '@sluice/control';
import { type Destination, HOUR_MS, JSONL_GZIP, newDestination, startOfUtcDay } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { planDatasets } from './plan.js';

const DAY = startOfUtcDay(Date.parse('2026-12-02T00:00:00.000Z'));
const NOW = DAY + 5 * HOUR_MS + 10 * 60_000;
const RETENTION_MS = 30 * 24 * HOUR_MS;
const ZSTD = { format: 'parquet', compression: 'zstd' } as const;

function destination(overrides: Partial<Destination> = {}): Destination {
  return {
    ...newDestination({
      workspaceId: 'ws_plan',
      id: 'exp_plan',
      name: 'Plan',
      provider: 's3',
      bucket: 'acme',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: '',
      accessKeyId: 'AKIA',
      secret: { encryptedDataKey: '', iv: '', ciphertext: '', tag: '' },
      datasets: ['email_events', 'subscribers'],
      frequency: 'hourly',
      startFrom: new Date(DAY).toISOString(),
      now: new Date(DAY),
    }),
    ...overrides,
  };
}

describe('planDatasets and the file format', () => {
  it('plans new windows in the destination format', () => {
    // Act
    const plan = planDatasets(
      destination({ format: 'parquet', compression: 'zstd' }),
      new Map(),
      'run_1',
      NOW,
      RETENTION_MS,
    );
    // Assess
    expect(plan.items.length).toBeGreaterThan(1);
    expect(
      plan.items.every((item) => item.format?.format === 'parquet' && item.format.compression === 'zstd'),
    ).toBe(true);
    expect(
      plan.writes
        .flatMap((write) => write.plannedSpans ?? [])
        .every((span) => span.format?.format === 'parquet'),
    ).toBe(true);
    expect(plan.writes.find((write) => write.dataset === 'subscribers')?.plannedSnapshot?.format).toEqual(
      ZSTD,
    );
  });

  it('keeps the format a window was planned with after the destination changes it: the change applies from the next window', () => {
    // Prepare: a JSON lines run planned the first two hours and the snapshot, and committed nothing
    const first = planDatasets(
      destination(),
      new Map(),
      'run_1',
      DAY + 2 * HOUR_MS + 10 * 60_000,
      RETENTION_MS,
    );
    const cursors = new Map<CursorState['dataset'], CursorState>(
      first.writes.map((write) => [
        write.dataset,
        {
          dataset: write.dataset,
          plannedSpans: write.plannedSpans ?? [],
          ...(write.plannedSnapshot ? { plannedSnapshot: write.plannedSnapshot } : {}),
        },
      ]),
    );
    const replanned = first.items.filter((item) => item.kind === 'events');
    expect(replanned.length).toBeGreaterThan(0);
    // Act: the destination is now Parquet, and the next run plans later hours too
    const next = planDatasets(
      destination({ format: 'parquet', compression: 'zstd' }),
      cursors,
      'run_2',
      NOW,
      RETENTION_MS,
    );
    // Assess: the windows planned before stay JSON lines (same names on retry), the new ones are Parquet
    const events = next.items.filter((item) => item.kind === 'events');
    const old = events.filter((item) => item.toMs <= (replanned.at(-1)?.toMs ?? 0));
    const fresh = events.filter((item) => item.fromMs >= (replanned.at(-1)?.toMs ?? 0));
    expect(old.length).toBe(replanned.length);
    expect(old.map((item) => item.format)).toEqual(replanned.map(() => JSONL_GZIP));
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.every((item) => item.format?.format === 'parquet')).toBe(true);
    expect(next.items.find((item) => item.kind === 'snapshot')?.format).toEqual(JSONL_GZIP);
  });
});

describe('planDatasets and spans stored without a format', () => {
  it('reads a stored span without a format (one an older Commit stored) as the destination format, not JSON lines', () => {
    // Prepare: a span an older Commit kept after a partial run of a Parquet export, without its format
    const cursors = new Map<CursorState['dataset'], CursorState>([
      [
        'email_events',
        {
          dataset: 'email_events',
          exportedThroughMs: DAY - 1,
          plannedSpans: [{ fromMs: DAY - 1, toMs: DAY + 2 * HOUR_MS - 1, stepMs: HOUR_MS, runId: 'run_0' }],
        },
      ],
    ]);
    // Act
    const plan = planDatasets(
      destination({ format: 'parquet', compression: 'zstd', datasets: ['email_events'] }),
      cursors,
      'run_1',
      NOW,
      RETENTION_MS,
    );
    // Assess: the stored span and the new ones, all Parquet as the export was when they were planned
    expect(plan.items[0]).toMatchObject({ fromMs: DAY - 1, toMs: DAY + 2 * HOUR_MS - 1, format: ZSTD });
    expect(plan.items.every((item) => item.format?.format === 'parquet')).toBe(true);
  });
});

describe('planDatasets and a cursor moved past expired rows', () => {
  const DAY_MS = 24 * HOUR_MS;
  /** 05:10 of DAY's day, 30 days later: rows recorded through DAY + 05:10 have left the event log. */
  const LATER = DAY + RETENTION_MS + 5 * HOUR_MS + 10 * 60_000;
  const cursorsOf = (plannedSpans: CursorState['plannedSpans']) =>
    new Map<CursorState['dataset'], CursorState>([
      ['email_events', { dataset: 'email_events', exportedThroughMs: DAY - 1, plannedSpans }],
    ]);
  const parquet = destination({ format: 'parquet', compression: 'zstd', datasets: ['email_events'] });

  it('keeps the windows planned before that end after the horizon, with their format; drops those before it', () => {
    // Prepare: ten hours planned in JSON lines (two spans, the first straddling the horizon), then Parquet
    const cursors = cursorsOf([
      { fromMs: DAY - 1, toMs: DAY + 8 * HOUR_MS - 1, stepMs: HOUR_MS, format: JSONL_GZIP, runId: 'run_0' },
      {
        fromMs: DAY + 8 * HOUR_MS - 1,
        toMs: DAY + 10 * HOUR_MS - 1,
        stepMs: HOUR_MS,
        format: JSONL_GZIP,
        runId: 'run_0',
      },
    ]);

    // Act
    const plan = planDatasets(parquet, cursors, 'run_1', LATER, RETENTION_MS);

    // Assess: the cursor moves to 05:00; hours 5-9 stay JSON lines, planned by run_0; the lost rows reported
    const horizon = DAY + 5 * HOUR_MS - 1;
    expect(plan.items.slice(0, 2)).toMatchObject([
      { fromMs: horizon, toMs: DAY + 8 * HOUR_MS - 1, stepMs: HOUR_MS, format: JSONL_GZIP },
      { fromMs: DAY + 8 * HOUR_MS - 1, toMs: DAY + 10 * HOUR_MS - 1, stepMs: HOUR_MS, format: JSONL_GZIP },
    ]);
    expect(plan.items.slice(2).every((item) => item.format?.format === 'parquet')).toBe(true);
    const [write] = plan.writes;
    expect(write?.next).toEqual({ exportedThroughMs: horizon });
    expect(write?.plannedSpans?.slice(0, 2).map((span) => span.runId)).toEqual(['run_0', 'run_0']);
    expect(plan.passed).toEqual([{ dataset: 'email_events', fromMs: DAY - 1, toMs: horizon }]);
    expect(plan.expired).toEqual([
      { dataset: 'email_events', fromMs: DAY - 1, toMs: DAY + 5 * HOUR_MS + 10 * 60_000 - 1 },
    ]);
  });

  it('keeps a window of another grid holding the horizon whole, on its grid, with the rows left', () => {
    // Prepare: the previous day and this one planned daily in JSON lines; the export is now hourly Parquet
    const cursors = new Map<CursorState['dataset'], CursorState>([
      [
        'email_events',
        {
          dataset: 'email_events',
          exportedThroughMs: DAY - DAY_MS - 1,
          plannedSpans: [
            {
              fromMs: DAY - DAY_MS - 1,
              toMs: DAY + DAY_MS - 1,
              stepMs: DAY_MS,
              format: JSONL_GZIP,
              runId: 'run_0',
            },
          ],
        },
      ],
    ]);

    // Act
    const plan = planDatasets(parquet, cursors, 'run_1', LATER, RETENTION_MS);

    // Assess: the cursor moves to the daily window's start, not into it; that window stays daily JSON lines
    expect(plan.items[0]).toMatchObject({
      fromMs: DAY - 1,
      toMs: DAY + DAY_MS - 1,
      stepMs: DAY_MS,
      format: JSONL_GZIP,
    });
    expect(plan.writes[0]?.next).toEqual({ exportedThroughMs: DAY - 1 });
    expect(plan.passed).toEqual([{ dataset: 'email_events', fromMs: DAY - DAY_MS - 1, toMs: DAY - 1 }]);
  });
});
