import type { DataExportRunView } from '@sluice/api';
import { describe, expect, it } from 'vitest';
import { formatDuration, formatTime, HISTORY_DAYS, runHistory } from './app/history.js';

const NOW = new Date('2026-12-03T12:00:00Z');
const MINUTE = 60_000;

function run(id: string, startedAt: string, extra: Partial<DataExportRunView> = {}): DataExportRunView {
  return {
    id,
    destinationId: 'exp_1',
    status: 'succeeded',
    isManual: false,
    rowCount: 0,
    fileCount: 0,
    byteCount: 0,
    stats: {},
    error: null,
    startedAt,
    finishedAt: startedAt,
    ...extra,
  };
}

describe('runHistory', () => {
  it('keeps the runs of the last 14 days, oldest first, with their rows and bytes', () => {
    // Prepare: newest first, as the API lists them, and one run just too old
    const runs = [
      run('run_3', '2026-12-03T11:55:00Z', { rowCount: 30, byteCount: 3000 }),
      run('run_2', '2026-12-03T11:50:00Z', { rowCount: 20, byteCount: 2000, status: 'failed' }),
      run('run_1', '2026-11-19T12:00:00Z', { rowCount: 10, byteCount: 1000 }),
      run('run_0', '2026-11-19T11:59:59Z', { rowCount: 5 }),
    ];

    // Act
    const history = runHistory(runs, NOW);

    // Assess
    expect(history.runs.map((r) => [r.id, r.rows, r.bytes, r.status])).toEqual([
      ['run_1', 10, 1000, 'succeeded'],
      ['run_2', 20, 2000, 'failed'],
      ['run_3', 30, 3000, 'succeeded'],
    ]);
    expect(history.to).toBe(NOW.getTime());
    expect(history.from).toBe(NOW.getTime() - HISTORY_DAYS * 86_400_000);
  });

  it('starts the time axis just before the first run when the runs span less than the window', () => {
    // Act
    const history = runHistory([run('run_1', '2026-12-03T11:00:00Z')], NOW);
    const empty = runHistory([], NOW);

    // Assess: 5 % of the hour shown before the run; no run: the last hour
    expect(history.from).toBe(Date.parse('2026-12-03T11:00:00Z') - 3 * MINUTE);
    expect(empty.from).toBe(NOW.getTime() - 60 * MINUTE - 3 * MINUTE);
  });

  it("gives each dataset's lag after each finished run: finish time minus the end of the window it exported", () => {
    // Prepare
    const runs = [
      run('run_2', '2026-12-03T11:50:00Z', {
        finishedAt: '2026-12-03T11:52:00Z',
        stats: {
          email_events: { rows: 1, files: 1, bytes: 1, toMs: Date.parse('2026-12-03T11:45:00Z') },
          subscribers: { rows: 1, files: 1, bytes: 1, snapshotDate: '2026-12-02' },
        },
      }),
      run('run_1', '2026-12-03T11:00:00Z', {
        finishedAt: '2026-12-03T11:01:00Z',
        stats: { email_events: { rows: 1, files: 1, bytes: 1, toMs: Date.parse('2026-12-03T10:40:00Z') } },
      }),
      run('run_running', '2026-12-03T11:55:00Z', {
        status: 'running',
        finishedAt: null,
        stats: { email_events: { rows: 0, files: 0, bytes: 0, toMs: 0 } },
      }),
    ];

    // Act
    const { lag } = runHistory(runs, NOW);

    // Assess: datasets by name; the running run has no lag yet; the snapshot counts from its day's end
    expect(lag).toEqual([
      {
        dataset: 'email_events',
        points: [
          { at: Date.parse('2026-12-03T11:01:00Z'), lagMs: 21 * MINUTE },
          { at: Date.parse('2026-12-03T11:52:00Z'), lagMs: 7 * MINUTE },
        ],
      },
      {
        dataset: 'subscribers',
        points: [{ at: Date.parse('2026-12-03T11:52:00Z'), lagMs: (11 * 60 + 52) * MINUTE }],
      },
    ]);
  });
});

describe('formatting', () => {
  it('says durations and times the way the console shows them', () => {
    expect([45_000, 12 * MINUTE, 210 * MINUTE, 3 * 86_400_000].map(formatDuration)).toEqual([
      '45 s',
      '12 min',
      '3.5 h',
      '3.0 d',
    ]);
    expect(formatTime('2026-12-03T16:40:12.345Z')).toBe('2026-12-03 16:40 UTC');
    expect(formatTime(null)).toBe('not yet');
  });
});
