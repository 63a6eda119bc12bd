import { InvalidInputError, InputShapeError, JSONL_GZIP } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import {
  assertCredentialsFit,
  assertCredentialsForMove,
  bucketNameProblem,
  formatPath,
  normalizePathPrefix,
  parseCreateRequest,
  parseRunsLimit,
  parseUpdateRequest,
  resolveUpdatedFileFormat,
  resolveUpdatedLocation,
  resolveUpdatedSchedule,
  summarizeIssues,
} from './validation.js';

const NOW = new Date('2026-09-30T12:00:00.000Z');

const valid = {
  name: 'Analytics lake',
  provider: 's3',
  bucket: 'acme-exports',
  region: 'us-east-1',
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('parseCreateRequest', () => {
  it('applies the defaults of the reference', () => {
    const request = parseCreateRequest(valid, NOW);
    expect(request).toEqual({
      name: 'Analytics lake',
      location: {
        provider: 's3',
        bucket: 'acme-exports',
        region: 'us-east-1',
        endpoint: null,
        pathPrefix: '',
      },
      credentials: { accessKeyId: valid.accessKeyId, secretAccessKey: valid.secretAccessKey },
      datasets: ['email_events', 'custom_events', 'subscribers'],
      frequency: 'every_15_minutes',
      startFrom: NOW.toISOString(),
      fileFormat: JSONL_GZIP,
      layout: 'date',
      schedule: null,
      childOrganizations: [],
    });
  });

  it('takes parquet with snappy by default, or zstd', () => {
    expect(parseCreateRequest({ ...valid, format: 'parquet' }, NOW).fileFormat).toEqual({
      format: 'parquet',
      compression: 'snappy',
    });
    expect(parseCreateRequest({ ...valid, format: 'parquet', compression: 'zstd' }, NOW).fileFormat).toEqual({
      format: 'parquet',
      compression: 'zstd',
    });
  });

  it.each([
    [{ compression: 'zstd' }, ['gzip']],
    [{ format: 'jsonl', compression: 'snappy' }, ['gzip']],
    [{ format: 'parquet', compression: 'gzip' }, ['snappy', 'zstd']],
  ])('refuses the format %j (400, naming compression)', (format, allowed) => {
    const error = thrown(() => parseCreateRequest({ ...valid, ...format }, NOW));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues?.[0]).toMatchObject({
      path: 'compression',
      allowedValues: allowed,
    });
  });

  it('refuses an unknown format as the wrong shape (422)', () => {
    expect(() => parseCreateRequest({ ...valid, format: 'csv' }, NOW)).toThrow(InputShapeError);
  });

  it('defaults the region to auto for gcs', () => {
    const request = parseCreateRequest({ ...valid, provider: 'gcs', region: null }, NOW);
    expect(request.location.region).toBe('auto');
  });

  it('accepts startFrom exactly 30 days ago and a minute of clock skew into the future, clamped to now', () => {
    const thirtyDays = new Date(NOW.getTime() - 30 * 86_400_000).toISOString();
    expect(parseCreateRequest({ ...valid, startFrom: thirtyDays }, NOW).startFrom).toBe(thirtyDays);
    const skewed = new Date(NOW.getTime() + 30_000).toISOString();
    expect(parseCreateRequest({ ...valid, startFrom: skewed }, NOW).startFrom).toBe(NOW.toISOString());
  });

  it('reports every invalid value at once, 400', () => {
    const error = thrown(() =>
      parseCreateRequest(
        { ...valid, name: '', bucket: 'Bad_Bucket', region: null, pathPrefix: 'a/../b' },
        NOW,
      ),
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues?.map((issue) => issue.path)).toEqual([
      'name',
      'bucket',
      'region',
      'pathPrefix',
    ]);
  });

  it('reports schema mismatches as 422 and does not check values then', () => {
    const error = thrown(() => parseCreateRequest({ ...valid, name: '', datasets: ['nope'] }, NOW));
    expect(error).toBeInstanceOf(InputShapeError);
    expect((error as InputShapeError).issues?.map((issue) => issue.path)).toEqual(['datasets[0]']);
  });

  it('never puts the secret in a message', () => {
    const secret = 'has spaces but is secret';
    const error = thrown(() =>
      parseCreateRequest({ ...valid, secretAccessKey: secret }, NOW),
    ) as InvalidInputError;
    expect(JSON.stringify({ message: error.message, issues: error.issues })).not.toContain(secret);
  });
});

describe('field rules', () => {
  it.each([
    ['acme-exports', undefined],
    ['a.b-c', undefined],
    ['s3://acme', /not a URL/],
    ['acme/exports', /not a URL/],
    ['ac', /3 to 63/],
    ['-acme', /lowercase/],
    ['acme..exports', /two dots/],
    ['10.0.0.1', /IP/],
  ])('bucket %s', (bucket, problem) => {
    const found = bucketNameProblem(bucket, 's3');
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toMatch(problem);
  });

  it('allows underscores in gcs bucket names only', () => {
    expect(bucketNameProblem('acme_exports', 'gcs')).toBeUndefined();
    expect(bucketNameProblem('acme_exports', 's3')).toBeDefined();
  });

  it.each([
    ['/sluice/', 'sluice'],
    ['//a/b//', 'a/b'],
    ["a/b=c/!_.*'()-", "a/b=c/!_.*'()-"],
    [null, ''],
  ])('normalises prefix %s to %s', (raw, expected) => {
    const issues: never[] = [];
    expect(normalizePathPrefix(raw, issues)).toBe(expected);
    expect(issues).toEqual([]);
  });

  it.each(['a/./b', '..', 'a//b', 'a b', 'ü'])('refuses prefix %s', (raw) => {
    const issues: { path: string }[] = [];
    normalizePathPrefix(raw, issues as never);
    expect(issues.map((issue) => issue.path)).toEqual(['pathPrefix']);
  });

  it('formats dotted paths', () => {
    expect(formatPath(['datasets', 1])).toBe('datasets[1]');
    expect(formatPath(['audience', 'subscriberIds', 0])).toBe('audience.subscriberIds[0]');
    expect(formatPath([])).toBe('');
  });

  it('summarises the first three issues', () => {
    const issues = [1, 2, 3, 4].map((n) => ({ path: `f${n}`, message: `m${n}` }));
    expect(summarizeIssues(issues, 'x')).toBe('f1: m1; f2: m2; f3: m3 (and 1 more)');
    expect(summarizeIssues(issues.slice(0, 1), 'x')).toBe('m1');
  });

  it.each([
    [undefined, 20],
    ['1', 1],
    ['100', 100],
  ])('limit %s is %s', (raw, limit) => {
    expect(parseRunsLimit(raw)).toBe(limit);
  });
});

describe('PATCH', () => {
  const stored = {
    provider: 's3' as const,
    bucket: 'acme',
    region: 'auto',
    endpoint: 'https://r2.example.com',
    pathPrefix: 'p',
  };

  it('keeps stored location fields that are not sent', () => {
    expect(resolveUpdatedLocation(stored, parseUpdateRequest({ pathPrefix: '/q/' }))).toEqual({
      ...stored,
      pathPrefix: 'q',
    });
  });

  it('needs a region once the endpoint is cleared', () => {
    const error = thrown(() => resolveUpdatedLocation(stored, parseUpdateRequest({ endpoint: null })));
    expect((error as InvalidInputError).issues?.[0]?.path).toBe('region');
    expect(
      resolveUpdatedLocation(stored, parseUpdateRequest({ endpoint: '', region: 'eu-west-1' })),
    ).toMatchObject({
      endpoint: null,
      region: 'eu-west-1',
    });
  });

  it('changes the format, keeping the compression only while the format stays', () => {
    const zstd = { format: 'parquet', compression: 'zstd' } as const;
    expect(resolveUpdatedFileFormat(JSONL_GZIP, parseUpdateRequest({ format: 'parquet' }))).toEqual({
      format: 'parquet',
      compression: 'snappy',
    });
    expect(resolveUpdatedFileFormat(zstd, parseUpdateRequest({ format: 'parquet' }))).toEqual(zstd);
    expect(resolveUpdatedFileFormat(zstd, parseUpdateRequest({ format: 'jsonl' }))).toEqual(JSONL_GZIP);
    expect(resolveUpdatedFileFormat(zstd, parseUpdateRequest({ compression: 'snappy' }))).toEqual({
      format: 'parquet',
      compression: 'snappy',
    });
    expect(resolveUpdatedFileFormat(JSONL_GZIP, parseUpdateRequest({ name: 'x' }))).toEqual(JSONL_GZIP);
    expect(() => resolveUpdatedFileFormat(JSONL_GZIP, parseUpdateRequest({ compression: 'zstd' }))).toThrow(
      InvalidInputError,
    );
  });

  it('takes credentials only together', () => {
    expect(() => parseUpdateRequest({ accessKeyId: 'A' })).toThrow(InvalidInputError);
    expect(parseUpdateRequest({ accessKeyId: ' A ', secretAccessKey: 'B' }).credentials).toEqual({
      accessKeyId: 'A',
      secretAccessKey: 'B',
    });
  });

  it('takes a roleArn alone, of the right shape', () => {
    expect(parseUpdateRequest({ roleArn: ` ${ROLE} ` }).roleArn).toBe(ROLE);
    expect(() => parseUpdateRequest({ roleArn: ROLE, accessKeyId: 'A', secretAccessKey: 'B' })).toThrow(
      /not both/,
    );
    expect(() => parseUpdateRequest({ roleArn: 'arn:aws:iam::111122223333:user/u' })).toThrow(/IAM role ARN/);
  });
});

const ROLE = 'arn:aws:iam::111122223333:role/sluice';

describe('role credentials', () => {
  const roleBody = { ...valid, accessKeyId: undefined, secretAccessKey: undefined, roleArn: ROLE };

  it('takes roleArn instead of a key for Amazon S3', () => {
    expect(parseCreateRequest(roleBody, NOW).credentials).toEqual({ roleArn: ROLE });
  });

  it('refuses roleArn for gcs and S3-compatible endpoints, both ways at once, and neither', () => {
    const issueAt = (body: unknown) => {
      try {
        parseCreateRequest(body, NOW);
      } catch (error) {
        return (error as InvalidInputError).issues?.map((issue) => `${issue.path}: ${issue.message}`);
      }
      return [];
    };
    expect(issueAt({ ...roleBody, provider: 'gcs', region: undefined })).toEqual([
      expect.stringMatching(/^roleArn: roleArn is for Amazon S3 only/),
    ]);
    expect(issueAt({ ...roleBody, endpoint: 'https://r2.example.com' })).toEqual([
      expect.stringMatching(/^roleArn: roleArn is for Amazon S3 only/),
    ]);
    expect(issueAt({ ...valid, roleArn: ROLE })).toEqual([expect.stringMatching(/not both/)]);
    // Neither way does not match the schema (both keys, or roleArn): a 422, as a missing required field.
    expect(() => parseCreateRequest({ ...roleBody, roleArn: undefined }, NOW)).toThrow(InputShapeError);
    expect(issueAt({ ...roleBody, roleArn: undefined })).toEqual([
      expect.stringMatching(/^accessKeyId: Required: send accessKeyId and secretAccessKey, or roleArn/),
      expect.stringMatching(/^secretAccessKey: Required/),
    ]);
  });

  it('lets a role destination move without credentials, and refuses switching ways', () => {
    const stored = {
      provider: 's3' as const,
      bucket: 'a',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: '',
    };
    const moved = { ...stored, bucket: 'b' };
    const role = { roleArn: ROLE, externalId: 'sluice-x' };
    expect(() => assertCredentialsForMove({ ...stored, role }, moved, {})).not.toThrow();
    expect(() => assertCredentialsForMove(stored, moved, {})).toThrow(InvalidInputError);
    expect(() =>
      assertCredentialsFit({ role }, stored, { credentials: { accessKeyId: 'A', secretAccessKey: 'B' } }),
    ).toThrow(/assumes an IAM role/);
    expect(() => assertCredentialsFit({}, stored, { roleArn: ROLE })).toThrow(/uses an access key/);
    expect(() =>
      assertCredentialsFit({ role }, { ...stored, endpoint: 'https://r2.example.com' }, {}),
    ).toThrow(/Amazon S3 only/);
  });
});

describe('layout and schedule', () => {
  const runHour = { ...valid, layout: 'run_hour', datasets: ['sms_events'], frequency: 'hourly' };

  it('takes run_hour hourly with {"minute": 5} and daily with {"hour": 8, "minute": 0}', () => {
    expect(parseCreateRequest({ ...runHour, schedule: { minute: 5 } }, NOW)).toMatchObject({
      layout: 'run_hour',
      schedule: { minute: 5 },
    });
    expect(
      parseCreateRequest({ ...runHour, frequency: 'daily', schedule: { hour: 8, minute: 0 } }, NOW),
    ).toMatchObject({ layout: 'run_hour', frequency: 'daily', schedule: { hour: 8, minute: 0 } });
  });

  it.each([
    [{ frequency: 'every_15_minutes' }, 'frequency'],
    [{ datasets: ['sms_events', 'subscribers'] }, 'datasets[1]'],
    [{ schedule: { minute: 60 } }, 'schedule.minute'],
    [{ schedule: { minute: -1 } }, 'schedule.minute'],
    [{ schedule: { minute: 0, hour: 8 } }, 'schedule.hour'],
    [{ frequency: 'daily', schedule: { minute: 0, hour: 24 } }, 'schedule.hour'],
  ])('refuses %j with 400 naming %s', (change, path) => {
    const error = thrown(() => parseCreateRequest({ ...runHour, ...change }, NOW));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).issues.map((issue) => issue.path)).toEqual([path]);
  });

  it('refuses a schedule on an every_5_minutes export (400) and a schedule of the wrong shape (422)', () => {
    const error = thrown(() =>
      parseCreateRequest({ ...valid, frequency: 'every_5_minutes', schedule: { minute: 5 } }, NOW),
    );
    expect((error as InvalidInputError).issues.map((issue) => issue.path)).toEqual(['schedule']);
    expect(() => parseCreateRequest({ ...runHour, schedule: { minute: '5' } }, NOW)).toThrow(InputShapeError);
    expect(() => parseCreateRequest({ ...runHour, schedule: { minute: 5, second: 0 } }, NOW)).toThrow(
      InputShapeError,
    );
    expect(() => parseCreateRequest({ ...runHour, layout: 'hive' }, NOW)).toThrow(InputShapeError);
  });

  it('checks a PATCH merged with the stored export: run_hour stays hourly or daily without subscribers', () => {
    const stored = {
      layout: 'run_hour' as const,
      frequency: 'hourly' as const,
      datasets: ['sms_events' as const],
      schedule: { minute: 5 },
    };
    expect(resolveUpdatedSchedule(stored, parseUpdateRequest({ frequency: 'daily' }))).toEqual({
      layout: 'run_hour',
      schedule: { minute: 5 },
    });
    const error = thrown(() =>
      resolveUpdatedSchedule(stored, parseUpdateRequest({ frequency: 'every_5_minutes' })),
    );
    expect((error as InvalidInputError).issues.map((issue) => issue.path)).toEqual(['frequency', 'schedule']);
    const date = { frequency: 'hourly' as const, datasets: ['subscribers' as const] };
    expect(() => resolveUpdatedSchedule(date, parseUpdateRequest({ layout: 'run_hour' }))).toThrow(
      InvalidInputError,
    );
    expect(resolveUpdatedSchedule(stored, parseUpdateRequest({ schedule: null }))).toEqual({
      layout: 'run_hour',
      schedule: null,
    });
  });
});

describe('childOrganizations', () => {
  it('takes workspace ids or exactly ["*"], on create and PATCH', () => {
    expect(
      parseCreateRequest({ ...valid, childOrganizations: ['ws-a', 'ws_b'] }, NOW).childOrganizations,
    ).toEqual(['ws-a', 'ws_b']);
    expect(parseCreateRequest({ ...valid, childOrganizations: ['*'] }, NOW).childOrganizations).toEqual([
      '*',
    ]);
    expect(parseUpdateRequest({ childOrganizations: [] })).toEqual({ childOrganizations: [] });
    expect(parseUpdateRequest({ name: 'x' })).not.toHaveProperty('childOrganizations');
  });

  it.each([
    [['*', 'ws-a'], 'childOrganizations[0]', '"*" (every child) cannot be listed with other organizations.'],
    [['ws-a', '*'], 'childOrganizations[1]', '"*" (every child) cannot be listed with other organizations.'],
    [['ws-a', 'ws-b', 'ws-a'], 'childOrganizations[2]', 'Organization "ws-a" is listed twice.'],
    [['ws-a', 'a#b'], 'childOrganizations[1]', '"a#b" is not a workspace id'],
    [['', 'ws-a'], 'childOrganizations[0]', '"" is not a workspace id'],
    [['ws\u001b[31m'], 'childOrganizations[0]', '"ws\\u001b[31m" is not a workspace id'],
  ])('refuses %j with 400 at the index', (childOrganizations, path, message) => {
    for (const parse of [
      () => parseCreateRequest({ ...valid, childOrganizations }, NOW),
      () => parseUpdateRequest({ childOrganizations }),
    ]) {
      const error = thrown(parse) as InvalidInputError;
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error.issues).toHaveLength(1);
      expect(error.issues[0]?.path).toBe(path);
      expect(error.issues[0]?.message).toContain(message);
    }
  });

  it('refuses a list of something else than strings as the wrong shape (422)', () => {
    expect(thrown(() => parseCreateRequest({ ...valid, childOrganizations: 'ws-a' }, NOW))).toBeInstanceOf(
      InputShapeError,
    );
    expect(thrown(() => parseUpdateRequest({ childOrganizations: [1] }))).toBeInstanceOf(InputShapeError);
  });
});
