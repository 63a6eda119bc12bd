import { DATASETS } from '@sluice/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestMatchesSchema } from '../helpers/openapi.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  // Nothing invalid was ever saved.
  expect((await ws.client.get('/data-exports')).body.dataExports).toEqual([]);
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

const DAY_MS = 24 * 60 * 60 * 1000;

interface Case {
  name: string;
  /** Fields replaced in a valid body (`undefined` removes the field). */
  overrides: Record<string, unknown>;
  status: 400 | 422;
  path: string;
  message?: RegExp;
  allowedValues?: unknown[];
}

/** One case per rule. 422: the body does not match the OpenAPI schema; 400: it does, but a value is invalid. */
const createCases: Case[] = [
  { name: 'name missing', overrides: { name: undefined }, status: 422, path: 'name', message: /Required/ },
  { name: 'name not a string', overrides: { name: 42 }, status: 422, path: 'name', message: /string/ },
  { name: 'name over 255 characters', overrides: { name: 'n'.repeat(256) }, status: 422, path: 'name' },
  { name: 'name blank', overrides: { name: '   ' }, status: 400, path: 'name', message: /empty/ },
  ...[
    ['NUL', 'Ware\u0000house'],
    ['ESC (a terminal title)', 'Ware\u001b]0;pwned\u0007house'],
    ['CR LF (a forged table line)', 'Warehouse\r\nexp_forged  Fake'],
    ['DEL and C1', 'Ware\u007f\u009bhouse'],
    ['U+202E (right-to-left override)', 'Warehouse\u202Etxt.exe'],
    ['U+200F (right-to-left mark)', 'Ware\u200Fhouse'],
    ['U+2066 (left-to-right isolate)', 'Ware\u2066house'],
  ].map(
    ([what, name]): Case => ({
      name: `name with ${what}`,
      overrides: { name },
      status: 400,
      path: 'name',
      message: /control characters or bidirectional/,
    }),
  ),
  {
    name: 'accessKeyId with a character outside its set (non-Latin-1)',
    overrides: { accessKeyId: 'AKIA\u20acEXAMPLE' },
    status: 400,
    path: 'accessKeyId',
    message: /^Access key ID is letters, digits/,
  },
  {
    name: 'accessKeyId with a slash or a control character',
    overrides: { accessKeyId: 'AKIA/EXAMPLE\u0007' },
    status: 400,
    path: 'accessKeyId',
    message: /^Access key ID is letters, digits/,
  },
  {
    name: 'kmsKeyId with characters outside a key id, ARN or alias',
    overrides: { serverSideEncryption: 'aws:kms', kmsKeyId: 'alias/k\u00e9y\u0000' },
    status: 400,
    path: 'kmsKeyId',
    message: /^kmsKeyId is a key id, ARN or alias: letters, digits/,
  },
  {
    name: 'unknown provider',
    overrides: { provider: 'azure' },
    status: 422,
    path: 'provider',
    allowedValues: ['s3', 'gcs'],
  },
  { name: 'bucket missing', overrides: { bucket: undefined }, status: 422, path: 'bucket' },
  {
    name: 'bucket as an s3 URL',
    overrides: { bucket: 's3://acme-exports/sluice' },
    status: 400,
    path: 'bucket',
    message: /Bucket name, not a URL/,
  },
  {
    name: 'bucket as an https URL',
    overrides: { bucket: 'https://acme-exports.s3.amazonaws.com' },
    status: 400,
    path: 'bucket',
    message: /Bucket name, not a URL/,
  },
  { name: 'bucket with capitals', overrides: { bucket: 'Acme-Exports' }, status: 400, path: 'bucket' },
  { name: 'bucket too short', overrides: { bucket: 'ab' }, status: 400, path: 'bucket' },
  { name: 'bucket too long', overrides: { bucket: 'a'.repeat(64) }, status: 400, path: 'bucket' },
  { name: 'bucket ends with a hyphen', overrides: { bucket: 'acme-' }, status: 400, path: 'bucket' },
  { name: 'bucket as an IP address', overrides: { bucket: '192.168.10.20' }, status: 400, path: 'bucket' },
  {
    name: 'region missing for Amazon S3',
    overrides: { endpoint: undefined, region: undefined },
    status: 400,
    path: 'region',
    message: /^Region is required for Amazon S3 \(for example us-east-1\)\.$/,
  },
  {
    name: 'region null for Amazon S3',
    overrides: { endpoint: null, region: null },
    status: 400,
    path: 'region',
    message: /Region is required/,
  },
  {
    name: 'region not an AWS region',
    overrides: { endpoint: undefined, region: 'virginia' },
    status: 400,
    path: 'region',
  },
  { name: 'region not a string', overrides: { region: 1 }, status: 422, path: 'region' },
  {
    name: 'endpoint with gcs',
    overrides: { provider: 'gcs', endpoint: 'https://storage.example.com' },
    status: 400,
    path: 'endpoint',
    message: /not allowed with gcs/,
  },
  {
    name: 'endpoint plain http',
    overrides: { endpoint: 'http://s3.example.com' },
    status: 400,
    path: 'endpoint',
  },
  {
    name: 'endpoint with a path',
    overrides: { endpoint: 'https://s3.example.com/bucket' },
    status: 400,
    path: 'endpoint',
  },
  { name: 'endpoint not a URL', overrides: { endpoint: 's3.example.com' }, status: 400, path: 'endpoint' },
  {
    name: 'pathPrefix with ..',
    overrides: { pathPrefix: 'exports/../secrets' },
    status: 400,
    path: 'pathPrefix',
  },
  {
    name: 'pathPrefix with //',
    overrides: { pathPrefix: 'exports//daily' },
    status: 400,
    path: 'pathPrefix',
  },
  {
    name: 'pathPrefix with a space',
    overrides: { pathPrefix: 'my exports' },
    status: 400,
    path: 'pathPrefix',
  },
  { name: 'pathPrefix with a backslash', overrides: { pathPrefix: 'a\\b' }, status: 400, path: 'pathPrefix' },
  {
    name: 'pathPrefix too long',
    overrides: { pathPrefix: 'p'.repeat(513) },
    status: 400,
    path: 'pathPrefix',
  },
  {
    name: 'accessKeyId missing',
    overrides: { accessKeyId: undefined },
    status: 422,
    path: 'accessKeyId',
    message: /Required: send accessKeyId and secretAccessKey, or roleArn/,
  },
  { name: 'accessKeyId empty', overrides: { accessKeyId: '' }, status: 400, path: 'accessKeyId' },
  {
    name: 'secretAccessKey missing',
    overrides: { secretAccessKey: undefined },
    status: 422,
    path: 'secretAccessKey',
  },
  {
    name: 'no credentials at all',
    overrides: { accessKeyId: undefined, secretAccessKey: undefined },
    status: 422,
    path: 'accessKeyId',
    message: /accessKeyId and secretAccessKey, or roleArn/,
  },
  {
    name: 'both an access key and roleArn',
    overrides: { roleArn: 'arn:aws:iam::111122223333:role/sluice' },
    status: 400,
    path: 'roleArn',
    message: /either roleArn or accessKeyId and secretAccessKey, not both/,
  },
  {
    name: 'roleArn not an IAM role ARN',
    overrides: {
      accessKeyId: undefined,
      secretAccessKey: undefined,
      endpoint: undefined,
      region: 'us-east-1',
      roleArn: 'arn:aws:iam::1234:user/bob',
    },
    status: 400,
    path: 'roleArn',
    message: /arn:aws:iam::<12-digit account>:role/,
  },
  {
    name: 'roleArn with an S3-compatible endpoint',
    overrides: {
      accessKeyId: undefined,
      secretAccessKey: undefined,
      roleArn: 'arn:aws:iam::111122223333:role/sluice',
    },
    status: 400,
    path: 'roleArn',
    message: /Amazon S3 only/,
  },
  { name: 'roleArn a number', overrides: { roleArn: 7 }, status: 422, path: 'roleArn' },
  {
    name: 'secretAccessKey blank',
    overrides: { secretAccessKey: '  ' },
    status: 400,
    path: 'secretAccessKey',
  },
  {
    name: 'secretAccessKey a number',
    overrides: { secretAccessKey: 12345 },
    status: 422,
    path: 'secretAccessKey',
  },
  {
    name: 'unknown dataset',
    overrides: { datasets: ['email_events', 'page_views'] },
    status: 422,
    path: 'datasets[1]',
    allowedValues: [...DATASETS],
  },
  { name: 'no dataset', overrides: { datasets: [] }, status: 422, path: 'datasets' },
  { name: 'datasets not an array', overrides: { datasets: 'email_events' }, status: 422, path: 'datasets' },
  {
    name: 'duplicate dataset',
    overrides: { datasets: ['email_events', 'email_events'] },
    status: 400,
    path: 'datasets[1]',
  },
  {
    name: 'unknown frequency',
    overrides: { frequency: 'weekly' },
    status: 422,
    path: 'frequency',
    allowedValues: ['every_5_minutes', 'every_15_minutes', 'hourly', 'daily'],
  },
  {
    name: 'startFrom not a date-time',
    overrides: { startFrom: 'yesterday' },
    status: 422,
    path: 'startFrom',
  },
  {
    name: 'startFrom over 30 days ago',
    overrides: { startFrom: new Date(Date.now() - 31 * DAY_MS).toISOString() },
    status: 400,
    path: 'startFrom',
    message: /30 days/,
  },
  {
    name: 'startFrom in the future',
    overrides: { startFrom: new Date(Date.now() + DAY_MS).toISOString() },
    status: 400,
    path: 'startFrom',
    message: /future/,
  },
  {
    name: 'unknown field (a misspelling)',
    overrides: { pathprefix: 'exports' },
    status: 400,
    path: 'pathprefix',
    message: /Unknown field/,
  },
];

describe('POST /data-exports validation', () => {
  it.each(createCases)('$name → $status at $path', async (testCase) => {
    // Prepare
    const body = harness.createBody(testCase.overrides);
    if (typeof body.secretAccessKey === 'string' && body.secretAccessKey.trim() !== '') {
      harness.secrets.add(body.secretAccessKey);
    }

    // Act
    const response = await ws.client.post('/data-exports', body);

    // Assess
    expect(response.status).toBe(testCase.status);
    expect(response.body.success).toBe(false);
    expect(response.body.code).toBe(testCase.status === 422 ? 'unprocessable_entity' : 'invalid_input');
    expect(response.body.retryable).toBe(false);
    const issue = response.body.issues?.find((candidate) => candidate.path === testCase.path);
    expect(issue, JSON.stringify(response.body)).toBeDefined();
    if (testCase.message) expect(issue!.message).toMatch(testCase.message);
    if (testCase.allowedValues) expect(issue!.allowedValues).toEqual(testCase.allowedValues);
    // The rule between the two statuses, checked with the published schema itself.
    expect(requestMatchesSchema('createDataExport', body)).toBe(testCase.status === 400);
  });

  it('refuses a body that is not a JSON object with 422 at the root', async () => {
    for (const raw of ['[]', 'null', '"export"', '42']) {
      const response = await ws.client.post('/data-exports', undefined, {
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).toBe(422);
      expect(response.body.issues![0]).toMatchObject({ path: '' });
    }
  });

  /** A valid body as JSON text with `member` spliced in raw: `JSON.stringify` cannot write an own `__proto__`. */
  function rawBodyWith(member: string): string {
    return `${JSON.stringify(harness.createBody()).slice(0, -1)},${member}}`;
  }

  it.each(['__proto__', 'constructor', 'prototype'])(
    'refuses a top-level "%s" like any unknown field, with 400 naming it',
    async (field) => {
      // Prepare: JSON.parse makes "__proto__" an own property; the body must not lose it on the way.
      const raw = rawBodyWith(`"${field}":{"isEnabled":false}`);

      // Act
      const response = await ws.client.post('/data-exports', undefined, {
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });

      // Assess
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('invalid_input');
      expect(response.body.issues).toEqual([
        expect.objectContaining({ path: field, message: `Unknown field "${field}".` }),
      ]);
      expect(requestMatchesSchema('createDataExport', JSON.parse(raw))).toBe(true);
    },
  );

  it.each(['__proto__', 'constructor', 'prototype'])(
    'refuses "%s" nested in a value, where no object is accepted at all',
    async (field) => {
      const raw = JSON.stringify(harness.createBody()).replace(
        '"datasets":["email_events"',
        `"datasets":[{"${field}":"email_events"}`,
      );
      expect(raw).toContain(field);
      const response = await ws.client.post('/data-exports', undefined, {
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(response.status).toBe(422);
      expect(response.body.issues?.[0]?.path).toBe('datasets[0]');
    },
  );

  it('reports at most ten issues and summarises the first three in error', async () => {
    // Prepare: twelve unknown fields and a blank name.
    const extra = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`extra${i}`, i]));
    const body = harness.createBody({ name: ' ', ...extra });

    // Act
    const response = await ws.client.post('/data-exports', body);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.issues).toHaveLength(10);
    const [first, second, third] = response.body.issues!;
    expect(response.body.error).toBe(
      `${first!.path}: ${first!.message}; ${second!.path}: ${second!.message}; ${third!.path}: ${third!.message} (and 7 more)`,
    );
  });

  it('puts the only issue message in error, as the reference example does', async () => {
    const response = await ws.client.post(
      '/data-exports',
      harness.createBody({ endpoint: undefined, region: undefined }),
    );
    expect(response.body.error).toBe('Region is required for Amazon S3 (for example us-east-1).');
  });

  it('normalises the path prefix and applies the defaults', async () => {
    // Prepare
    const prefix = `${harness.createBody().pathPrefix as string}/nested`;

    // Act
    const response = await ws.client.post(
      '/data-exports',
      harness.createBody({
        pathPrefix: `/${prefix}/`,
        datasets: undefined,
        frequency: undefined,
        region: '',
      }),
    );

    // Assess
    expect(response.status).toBe(201);
    const view = response.body.dataExport!;
    expect(view).toMatchObject({
      pathPrefix: prefix,
      region: 'auto',
      datasets: ['email_events', 'custom_events', 'subscribers'],
      frequency: 'every_15_minutes',
    });
    expect(view.startFrom).toBe(view.createdAt);
    expect(await harness.readObject('local-exports', `${prefix}/_sluice/connection-test.json`)).toBeDefined();
    expect((await ws.client.delete(`/data-exports/${view.id}`)).status).toBe(200);
  });
});
