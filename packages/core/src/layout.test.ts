import { describe, expect, it } from 'vitest';
import {
  eventFileKey,
  fileIndex,
  MAX_LINES_PER_FILE,
  snapshotFileKey,
  snapshotSuccessKey,
  withPrefix,
} from './layout.js';

const D = Date.parse('2026-09-30T00:00:00.000Z');

describe('file layout', () => {
  it('names event files by dataset, recorded date, window and index', () => {
    const window = { fromMs: D - 1, toMs: D + 60_000 };
    expect(eventFileKey('sluice/exports', 'email_events', window, 1)).toBe(
      `sluice/exports/email_events/date=2026-09-30/email_events-${D - 1}-${D + 60_000}-0001.jsonl.gz`,
    );
  });

  it('puts files at the bucket root for an empty prefix', () => {
    const window = { fromMs: D - 5000, toMs: D - 1 };
    expect(eventFileKey('', 'sms_events', window, 0)).toBe(
      `sms_events/date=2026-09-29/sms_events-${D - 5000}-${D - 1}-0000.jsonl.gz`,
    );
    expect(snapshotFileKey('', '2026-09-30', 12)).toBe(
      'subscribers/date=2026-09-30/subscribers-0012.jsonl.gz',
    );
    expect(snapshotSuccessKey('', '2026-09-30')).toBe('subscribers/date=2026-09-30/_SUCCESS');
    expect(withPrefix('/a/', 'x')).toBe('a/x');
  });

  it('names snapshot files and the marker under the prefix', () => {
    expect(snapshotFileKey('p', '2026-09-30', 0)).toBe(
      'p/subscribers/date=2026-09-30/subscribers-0000.jsonl.gz',
    );
    expect(snapshotSuccessKey('p', '2026-09-30')).toBe('p/subscribers/date=2026-09-30/_SUCCESS');
  });

  it('pads file indexes to four digits and refuses negative ones', () => {
    expect(fileIndex(0)).toBe('0000');
    expect(fileIndex(42)).toBe('0042');
    expect(() => fileIndex(-1)).toThrow(RangeError);
    expect(MAX_LINES_PER_FILE).toBe(50_000);
  });
});
