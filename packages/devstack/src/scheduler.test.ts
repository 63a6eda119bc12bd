import { describe, expect, it } from 'vitest';
import { formatRunLine } from './scheduler.js';
import type { ExportRunOutcome } from './stepfunctions.js';

describe('formatRunLine', () => {
  const run: ExportRunOutcome = {
    executionArn: 'arn',
    input: { workspaceId: 'ws_local', destinationId: 'dst_1', trigger: 'schedule' },
    status: 'succeeded',
    runAgain: false,
    items: 4,
    datasets: ['email_events', 'sms_events'],
    durationMs: 1_234,
    rows: 12_345,
    files: 4,
    bytes: 3 * 1024 * 1024 + 300 * 1024,
  };

  it('says what a run wrote, where, and how long it took', () => {
    expect(formatRunLine(run)).toBe(
      '[export] ws_local/dst_1 email_events, sms_events: 12,345 rows, 4 files, 3.3 MiB in 1.2 s',
    );
    expect(
      formatRunLine({ ...run, items: 0, datasets: [], rows: 0, files: 0, bytes: 0, durationMs: 990 }),
    ).toBe('[export] ws_local/dst_1 nothing to write yet (990 ms)');
    expect(formatRunLine({ ...run, runAgain: true, rows: 1, files: 1, bytes: 900, durationMs: 75_400 })).toBe(
      '[export] ws_local/dst_1 email_events, sms_events: 1 row, 1 file, 900 B in 1 min 15 s (still behind: runs again now)',
    );
  });

  it('gives the error of a failed run, the reason of a skipped one', () => {
    const failed: ExportRunOutcome = {
      ...run,
      status: 'failed',
      datasets: [],
      rows: 0,
      files: 0,
      bytes: 0,
      durationMs: 80,
      error: {
        Error: 'BucketSignatureMismatch',
        Cause: JSON.stringify({ errorType: 'BucketSignatureMismatch', errorMessage: 'The secret is wrong.' }),
      },
    };
    expect(formatRunLine(failed)).toBe(
      '[export] ws_local/dst_1 failed in 80 ms: BucketSignatureMismatch: The secret is wrong.',
    );
    expect(formatRunLine({ ...run, status: 'skipped', reason: 'lease_held' })).toBe(
      '[export] ws_local/dst_1 skipped: lease_held',
    );
    expect(formatRunLine({ ...run, status: 'stopped', bytes: 2048, durationMs: 500 })).toBe(
      '[export] ws_local/dst_1 stopped (paused, deleted or changed) after 12,345 rows, 4 files, 2.0 KiB in 500 ms',
    );
  });
});
