import type { DataExportView } from '@sluice/api';
import { describe, expect, it } from 'vitest';
import { dataExportBlock, firstFilesLines, formatBytes } from './format.js';

const view: DataExportView = {
  id: 'exp_1',
  name: 'Lake',
  provider: 's3',
  bucket: 'local-exports',
  region: 'us-east-1',
  endpoint: 'http://127.0.0.1:4569',
  pathPrefix: 'sluice',
  accessKeyId: 'S3RV…',
  serverSideEncryption: null,
  kmsKeyId: null,
  datasets: ['email_events', 'subscribers'],
  frequency: 'every_5_minutes',
  format: 'jsonl',
  compression: 'gzip',
  isEnabled: true,
  status: 'queued',
  startFrom: '2026-12-04T18:00:00.000Z',
  exportedThrough: { email_events: null, subscribers: null },
  nextRunAt: '2026-12-04T19:00:00.000Z',
  lastRunAt: null,
  lastSuccessAt: null,
  lastError: null,
  lastErrorAt: null,
  consecutiveFailures: 0,
  failing: null,
  totalRowsExported: 0,
  createdAt: '2026-12-04T19:00:00.000Z',
  updatedAt: '2026-12-04T19:00:00.000Z',
  layout: 'date',
  schedule: null,
};

describe('the data export block', () => {
  it('shows the next run of an active export, and none for a paused one', () => {
    // Act
    const active = dataExportBlock(view);
    const paused = dataExportBlock({ ...view, isEnabled: false });
    // Assess
    expect(active).toContain('next run       2026-12-04T19:00:00.000Z');
    expect(paused).toContain('next run       - (paused)');
  });
});

describe('firstFilesLines', () => {
  it('says when the first run is queued for, what it writes and where', () => {
    // Act
    const lines = firstFilesLines(view);
    // Assess
    expect(lines).toEqual([
      'First files: its first run is queued for 2026-12-04T19:00:00.000Z and starts within a minute; it writes ' +
        'every dataset (rows recorded from 2026-12-04T18:00:00.000Z up to a few minutes before it) to ' +
        's3://local-exports/sluice; later runs: every_5_minutes.',
    ]);
    expect(firstFilesLines({ ...view, isEnabled: false })).toEqual([]);
  });
});

describe('formatBytes', () => {
  it('names powers of 1024 KiB, MiB, GiB, as npm start does', () => {
    expect([512, 1536, 5 * 1024 ** 2, 1.25 * 1024 ** 3].map(formatBytes)).toEqual([
      '512 B',
      '1.5 KiB',
      '5.0 MiB',
      '1.3 GiB',
    ]);
  });
});
