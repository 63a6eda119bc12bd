import { describe, expect, it } from 'vitest';
import { checkExportForm, compressionsOf, healthLine, label, minimalPolicy } from './app/options.js';

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
});
