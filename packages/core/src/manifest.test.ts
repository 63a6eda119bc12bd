import { describe, expect, it } from 'vitest';
import { buildManifest, manifestFormat, manifestKey, serializeManifest } from './manifest.js';

const window = { fromMs: Date.UTC(2026, 11, 2, 23) - 1, toMs: Date.UTC(2026, 11, 3) - 1 };
const files = [
  { key: 'p/email_events/date=2026-12-02/a-0000.jsonl.gz', rows: 50_000, bytes: 1_000, sha256: 'aa' },
  { key: 'p/email_events/date=2026-12-02/a-0001.jsonl.gz', rows: 7, bytes: 20, sha256: 'bb' },
];

describe('run manifests', () => {
  it('names an event window manifest by dataset, day and window bounds, under the prefix', () => {
    expect(manifestKey('exports/acme', 'email_events', window)).toBe(
      `exports/acme/_sluice/manifests/email_events/date=2026-12-02/${window.fromMs}-${window.toMs}.json`,
    );
    expect(manifestKey('', 'sms_events', window)).toBe(
      `_sluice/manifests/sms_events/date=2026-12-02/${window.fromMs}-${window.toMs}.json`,
    );
  });

  it('lists the files in order with totals, the window, the schema version and the format', () => {
    const manifest = buildManifest({ dataset: 'email_events', window, format: 'jsonl.gz', files });
    expect(manifest).toEqual({
      manifest_version: 1,
      dataset: 'email_events',
      window: { date: '2026-12-02', from_ms: window.fromMs, to_ms: window.toMs },
      schema_version: 1,
      format: 'jsonl',
      rows: 50_007,
      bytes: 1_020,
      files,
    });
    expect(
      buildManifest({ dataset: 'subscribers', date: '2026-12-03', format: undefined, files: [] }),
    ).toMatchObject({
      window: { date: '2026-12-03' },
      format: 'jsonl',
      rows: 0,
      files: [],
    });
  });

  it('is deterministic: the same files give the same bytes (a retry rewrites the same manifest)', () => {
    const once = serializeManifest(
      buildManifest({ dataset: 'email_events', window, format: 'jsonl.gz', files }),
    );
    const again = serializeManifest(
      buildManifest({
        dataset: 'email_events',
        window,
        format: 'jsonl.gz',
        files: files.map((f) => ({ ...f })),
      }),
    );
    expect(again).toBe(once);
    expect(once.endsWith('}\n')).toBe(true);
  });

  it('names formats: jsonl.gz is jsonl, none is jsonl, others as stored', () => {
    expect(manifestFormat('jsonl.gz')).toBe('jsonl');
    expect(manifestFormat(undefined)).toBe('jsonl');
    expect(manifestFormat('parquet')).toBe('parquet');
  });
});
