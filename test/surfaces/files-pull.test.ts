import { existsSync } from 'node:fs';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { type CliContext, runSluice } from '@sluice/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localPathOf } from '@sluice/cli';
import { LOCAL_S3_CREDENTIALS } from '@sluice/devstack';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
  uniqueId,
} from '../helpers/contract-harness.js';

/**
 * `sluice files pull` (issue 25, item 6): an export's objects written into a folder under their own keys, read
 * from the local s3rver through the S3 API (on disk s3rver keeps `<key>._S3rver_object`), and the docs' DuckDB
 * query works on that folder. Also the CLI's `--layout` and `--schedule`.
 */

let harness: ContractHarness;
let ws: TestWorkspace;
let apiUrl: string;
let localJsonFile: string;

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
  apiUrl = `${harness.url}/api/v1`;
  const folder = await mkdtemp(join(tmpdir(), 'sluice-local-json-'));
  localJsonFile = join(folder, 'local.json');
  await writeFile(
    localJsonFile,
    JSON.stringify({
      s3: {
        endpoint: harness.s3Endpoint,
        region: 'us-east-1',
        bucket: 'local-exports',
        ...LOCAL_S3_CREDENTIALS,
      },
    }),
  );
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

async function sluice(argv: string[], stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const context: CliContext = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: {},
    stdin: Readable.from(stdin === undefined ? [] : [Buffer.from(stdin)]),
    localJsonFile,
  };
  const code = await runSluice(
    [...argv, '--api-url', apiUrl, '--api-key', ws.client.apiKey as string],
    context,
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('files pull', () => {
  it('writes the objects under their own keys, and the DuckDB query of the docs reads them', async () => {
    // Prepare: a run_hour export on the local bucket, and two JSON lines files where its run would put them
    const prefix = uniqueId('pull/');
    const created = await sluice(
      [
        'data-exports',
        'create',
        '--name',
        'Pull test',
        '--provider',
        's3',
        '--bucket',
        'local-exports',
        '--endpoint',
        harness.s3Endpoint,
        '--path-prefix',
        prefix,
        '--access-key-id',
        LOCAL_S3_CREDENTIALS.accessKeyId,
        '--datasets',
        'sms_events',
        '--frequency',
        'hourly',
        '--layout',
        'run_hour',
        '--schedule',
        ':05',
        '--secret-access-key-stdin',
        '--json',
      ],
      LOCAL_S3_CREDENTIALS.secretAccessKey,
    );
    expect(created.code, created.err).toBe(0);
    const view = JSON.parse(created.out).dataExport;
    expect(view).toMatchObject({ layout: 'run_hour', schedule: { minute: 5 } });
    const s3 = new S3Client({
      endpoint: harness.s3Endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: LOCAL_S3_CREDENTIALS,
    });
    const folder = `${prefix}/v1/schema_type=sms_events/year=2026/month=09/day=26/hour=08`;
    for (const [part, ids] of [
      ['000', ['a', 'b']],
      ['001', ['c']],
    ] as const) {
      await s3.send(
        new PutObjectCommand({
          Bucket: 'local-exports',
          Key: `${folder}/${ws.workspaceId}_sms_events_20260926T080500Z_0123456789ab.part-${part}.jsonl.gz`,
          Body: gzipSync(ids.map((id) => `${JSON.stringify({ id })}\n`).join('')),
        }),
      );
    }
    s3.destroy();
    const to = await mkdtemp(join(tmpdir(), 'sluice-pull-'));

    // Act
    const pulled = await sluice(['files', 'pull', '--export', view.id, '--to', to]);

    // Assess: every object of the prefix under its key (the connection test's too), none as s3rver stores it
    expect(pulled.code, pulled.err).toBe(0);
    expect(pulled.out).toContain(`v1/schema_type=sms_events/**/*.jsonl.gz`);
    const files = await readdir(join(to, folder));
    expect(files.sort()).toEqual([
      `${ws.workspaceId}_sms_events_20260926T080500Z_0123456789ab.part-000.jsonl.gz`,
      `${ws.workspaceId}_sms_events_20260926T080500Z_0123456789ab.part-001.jsonl.gz`,
    ]);
    expect(existsSync(join(to, prefix, '_sluice/connection-test.json'))).toBe(true);
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll(
      `SELECT count(*)::INTEGER AS n FROM read_json_auto('${to}/${prefix}/v1/schema_type=sms_events/**/*.jsonl.gz')`,
    );
    expect(reader.getRowObjectsJson()).toEqual([{ n: 3 }]);
    connection.closeSync();
    instance.closeSync();
  }, 120_000);

  it('refuses a key that would leave the folder, and an unknown --schedule (usage, exit 2)', async () => {
    expect(() => localPathOf('/tmp/x', '../etc/passwd')).toThrow(/not a path inside/);
    expect(localPathOf('/tmp/x', '/etc/passwd')).toBe('/tmp/x/etc/passwd');
    expect(localPathOf('/tmp/x', 'a/b.parquet')).toBe('/tmp/x/a/b.parquet');
    const result = await sluice([
      'data-exports',
      'update',
      'exp_0123456789abcdef01234567',
      '--schedule',
      '8am',
    ]);
    expect(result.code).toBe(2);
    expect(result.err).toContain('--schedule takes');
  });
});
