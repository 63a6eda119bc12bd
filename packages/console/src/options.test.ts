import { describe, expect, it } from 'vitest';
import {
  checkExportForm,
  checkMove,
  childrenLabel,
  compressionsOf,
  healthLine,
  label,
  minimalPolicy,
  nextScheduledRun,
  readSchedule,
  sameChildren,
  sameSchedule,
  scheduleLabel,
} from './app/options.js';

describe('console options', () => {
  it('labels enum values for people, and leaves an unknown one as it is', () => {
    expect(label('frequency', 'every_5_minutes')).toBe('Every 5 minutes');
    expect(label('provider', 's3')).toBe('Amazon S3 or S3-compatible');
    expect(label('serverSideEncryption', null)).toBe("Bucket's default");
    expect(label('format', 'avro')).toBe('avro');
    expect(compressionsOf('parquet')).toEqual(['snappy', 'zstd']);
    expect(compressionsOf('jsonl')).toEqual(['gzip']);
  });

  it('gives the minimal policy for the prefix, with the KMS grant only for a KMS key', () => {
    // Act
    const plain = JSON.parse(
      minimalPolicy({ bucket: 'acme', pathPrefix: '/sluice/', serverSideEncryption: '', kmsKeyId: '' }),
    );
    const kms = JSON.parse(
      minimalPolicy({
        bucket: 'acme',
        pathPrefix: '',
        serverSideEncryption: 'aws:kms',
        kmsKeyId: 'arn:aws:kms:eu-west-1:111122223333:key/k',
      }),
    );
    // Assess
    expect(plain.Statement).toEqual([
      {
        Effect: 'Allow',
        Action: ['s3:PutObject', 's3:AbortMultipartUpload'],
        Resource: 'arn:aws:s3:::acme/sluice/*',
      },
      { Effect: 'Allow', Action: 's3:GetLifecycleConfiguration', Resource: 'arn:aws:s3:::acme' },
    ]);
    expect(kms.Statement[0].Resource).toBe('arn:aws:s3:::acme/*');
    expect(kms.Statement[2]).toEqual({
      Effect: 'Allow',
      Action: ['kms:GenerateDataKey', 'kms:Decrypt'],
      Resource: 'arn:aws:kms:eu-west-1:111122223333:key/k',
    });
  });

  it('finds every problem of a create at once, in its own words', () => {
    // Act
    const issues = checkExportForm(
      {
        name: '',
        bucket: 's3://acme-exports/sluice',
        roleArn: 'arn:aws:iam::111122223333:role/sluice',
        accessKeyId: 'AKIA',
        datasets: [],
        kmsKeyId: 'alias/k',
        serverSideEncryption: '',
        startFrom: 'yesterday',
      },
      true,
    );
    // Assess
    expect(issues).toEqual([
      { path: 'name', message: 'Give the export a name.' },
      {
        path: 'bucket',
        message: 'Enter the bucket name alone, such as acme-exports; put the folder in Path prefix.',
      },
      { path: 'roleArn', message: 'Use either a role or an access key, not both.' },
      { path: 'datasets', message: 'Choose at least one dataset.' },
      { path: 'kmsKeyId', message: 'A KMS key needs the encryption set to AWS KMS key.' },
      { path: 'startFrom', message: 'Enter an ISO 8601 UTC time such as 2026-12-01T00:00:00Z.' },
    ]);
    expect(
      checkExportForm(
        {
          name: 'Lake',
          bucket: 'acme',
          accessKeyId: 'AKIA',
          secretAccessKey: 's',
          datasets: ['subscribers'],
        },
        true,
      ),
    ).toEqual([]);
  });

  it('says how far behind the export is, from its oldest dataset', () => {
    const now = Date.parse('2026-12-04T19:00:00.000Z');
    const through = { email_events: '2026-12-04T18:57:00.000Z', subscribers: '2026-12-04T18:59:30.000Z' };
    expect(healthLine({ isEnabled: true, exportedThrough: through }, now)).toBe(
      'Exported through 3 minutes ago',
    );
    expect(healthLine({ isEnabled: false, exportedThrough: { ...through, sms_events: null } }, now)).toBe(
      'Paused. Not exported yet',
    );
  });

  it('checks the run-hour layout against the frequency and the datasets, in its own words', () => {
    // Act
    const issues = checkExportForm(
      { layout: 'run_hour', frequency: 'every_15_minutes', datasets: ['email_events', 'subscribers'] },
      false,
    );
    // Assess
    expect(issues).toEqual([
      {
        path: 'frequency',
        message: 'Run-hour folders are written hourly or daily: choose Hourly or Daily, or Date folders.',
      },
      {
        path: 'datasets',
        message:
          'Subscribers are a daily snapshot, written in date folders only: untick them, or choose Date folders.',
      },
    ]);
    expect(
      checkExportForm({ layout: 'run_hour', frequency: 'daily', datasets: ['sms_events'] }, false),
    ).toEqual([]);
    expect(
      checkExportForm({ layout: 'date', frequency: 'every_5_minutes', datasets: ['subscribers'] }, false),
    ).toEqual([]);
  });

  it('reads the schedule from the hour and minute fields, for the frequencies that take one', () => {
    expect(readSchedule('hourly', '', '5')).toEqual({ schedule: { minute: 5 }, issues: [] });
    expect(readSchedule('hourly', '08', '05')).toEqual({ schedule: { minute: 5 }, issues: [] }); // hour off
    expect(readSchedule('daily', '08', '00')).toEqual({ schedule: { hour: 8, minute: 0 }, issues: [] });
    expect(readSchedule('daily', '', '')).toEqual({ schedule: null, issues: [] });
    expect(readSchedule('every_5_minutes', '08', '61')).toEqual({ schedule: null, issues: [] }); // fields off
    expect(readSchedule('hourly', '', '60').issues).toEqual([
      { path: 'schedule', message: 'Enter the minute as a number from 0 to 59.' },
    ]);
    expect(readSchedule('daily', '24', 'x').issues).toEqual([
      { path: 'schedule', message: 'Enter the minute as a number from 0 to 59.' },
      { path: 'schedule', message: 'Enter the hour as a number from 0 to 23 (UTC).' },
    ]);
    expect(readSchedule('daily', '8', '').issues).toEqual([
      {
        path: 'schedule',
        message: 'Enter both the hour and the minute, or leave both empty for a time Sluice picks.',
      },
    ]);
  });

  it('says when a schedule runs and its next run, in 24-hour UTC', () => {
    const now = Date.parse('2026-12-04T22:10:00.000Z');
    expect(scheduleLabel('daily', { hour: 8, minute: 0 })).toBe('Every day at 08:00 UTC');
    expect(scheduleLabel('hourly', { minute: 5 })).toBe('Every hour at minute 05 (UTC)');
    expect(scheduleLabel('hourly', null)).toBe('Hourly, at a minute Sluice picks for this export');
    expect(scheduleLabel('every_5_minutes', null)).toBe('Every 5 minutes, at minutes Sluice picks');
    expect(new Date(nextScheduledRun('daily', { hour: 8, minute: 0 }, now)).toISOString()).toBe(
      '2026-12-05T08:00:00.000Z',
    );
    expect(new Date(nextScheduledRun('daily', { hour: 22, minute: 30 }, now)).toISOString()).toBe(
      '2026-12-04T22:30:00.000Z',
    );
    expect(new Date(nextScheduledRun('hourly', { minute: 5 }, now)).toISOString()).toBe(
      '2026-12-04T23:05:00.000Z',
    );
    expect(new Date(nextScheduledRun('hourly', { minute: 10 }, now)).toISOString()).toBe(
      '2026-12-04T23:10:00.000Z',
    );
    expect(sameSchedule({ minute: 5, hour: 8 }, { hour: 8, minute: 5 })).toBe(true);
    expect(sameSchedule(null, undefined)).toBe(true);
    expect(sameSchedule({ minute: 5 }, null)).toBe(false);
  });

  it('asks for the keys again when an edit moves an export with keys to another bucket, endpoint or region', () => {
    expect(checkMove({ bucket: 'other', endpoint: null }, false)).toEqual([
      {
        path: 'bucket',
        message:
          'A new bucket needs the access key id and secret again: the stored secret is only used where it was given.',
      },
      {
        path: 'endpoint',
        message:
          'A new endpoint needs the access key id and secret again: the stored secret is only used where it was given.',
      },
    ]);
    expect(checkMove({ bucket: 'other', accessKeyId: 'AKIA', secretAccessKey: 's' }, false)).toEqual([]);
    expect(checkMove({ region: 'eu-west-1' }, true)).toEqual([]); // a role signs for itself
    expect(checkMove({ name: 'Renamed', pathPrefix: 'elsewhere' }, false)).toEqual([]);
  });

  it('names the child organisations of an export for people, and compares two lists in any order', () => {
    expect(childrenLabel(['*'])).toBe('All current and future child organisations');
    expect(childrenLabel(['ws_a', 'ws_b'])).toBe('ws_a, ws_b');
    expect(childrenLabel([])).toBe("None: this workspace's own data only");
    expect(childrenLabel(undefined)).toBe("None: this workspace's own data only");
    expect(sameChildren(['ws_a', 'ws_b'], ['ws_b', 'ws_a'])).toBe(true);
    expect(sameChildren(['ws_a'], ['*'])).toBe(false);
    expect(sameChildren([], [])).toBe(true);
  });
});
