import { spawn } from 'node:child_process';
import { type DataExportRun, OrganizationStore } from '@sluice/control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_S3_CREDENTIALS } from '@sluice/devstack';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
  uniqueId,
} from '../helpers/contract-harness.js';
import { putRunRecord } from '../helpers/seed-runs.js';
import { sluice } from './cli-context.js';
import { controlTable } from '../helpers/tables.js';

const organizations = new OrganizationStore(controlTable);

let harness: ContractHarness;
let ws: TestWorkspace;
let apiUrl: string;
const printed: string[] = [];

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
  apiUrl = `${harness.url}/api/v1`;
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
  // Nor did the CLI ever print the secret.
  expect(printed.join('\n')).not.toContain(LOCAL_S3_CREDENTIALS.secretAccessKey);
});

/** `sluice data-exports <args> --api-url … --api-key …`, recording what it printed. */
async function dataExports(args: readonly string[], stdin?: string) {
  const result = await sluice(
    ['data-exports', ...args, '--api-url', apiUrl, '--api-key', ws.client.apiKey!],
    {
      ...(stdin === undefined ? {} : { stdin }),
    },
  );
  printed.push(result.out, result.err);
  return result;
}

/** The create options for the local bucket, the secret left to stdin. */
function createArgs(overrides: Record<string, string> = {}): string[] {
  const options: Record<string, string> = {
    '--name': 'CLI lake',
    '--provider': 's3',
    '--bucket': 'local-exports',
    '--endpoint': harness.s3Endpoint,
    '--path-prefix': uniqueId('cli/'),
    '--access-key-id': LOCAL_S3_CREDENTIALS.accessKeyId,
    '--datasets': 'email_events,sms_events',
    '--frequency': 'every_5_minutes',
    ...overrides,
  };
  return ['create', ...Object.entries(options).flat(), '--secret-access-key-stdin'];
}

function putRun(id: string, runId: string, run: Partial<DataExportRun>): Promise<void> {
  return putRunRecord(ws.workspaceId, id, { ...run, id: runId });
}

describe('sluice data-exports against the local API', () => {
  it('creates (secret from stdin), gets, lists, updates, runs, lists runs and deletes an export', async () => {
    // Act: create, the secret piped in.
    const created = await dataExports(
      [...createArgs(), '--json'],
      `${LOCAL_S3_CREDENTIALS.secretAccessKey}\n`,
    );

    // Assess: the API's JSON, as it answered.
    expect(created.err).toBe('');
    expect(created.code).toBe(0);
    const body = JSON.parse(created.out);
    expect(body).toMatchObject({
      success: true,
      dataExport: {
        name: 'CLI lake',
        datasets: ['email_events', 'sms_events'],
        frequency: 'every_5_minutes',
      },
    });
    const id: string = body.dataExport.id;

    // get, readable
    const got = await dataExports(['get', id]);
    expect(got.code).toBe(0);
    expect(got.out).toMatch(new RegExp(`^id +${id}$`, 'm'));
    expect(got.out).toMatch(/^state +(active|queued)$/m);
    expect(got.out).toMatch(/^email_events +not yet$/m);
    expect(got.out).toMatch(/^access key id +S3…/m);

    // list, readable: a header and the export's row
    const listed = await dataExports(['list']);
    expect(listed.code).toBe(0);
    expect(listed.out.split('\n')[0]).toMatch(/^ID +NAME +STATE +FREQUENCY +BUCKET +DATASETS/);
    expect(listed.out).toMatch(
      new RegExp(`^${id} +CLI lake +\\S+ +every_5_minutes +s3://local-exports/cli/`, 'm'),
    );

    // get, readable: the format
    expect(got.out).toMatch(/^format +jsonl \(gzip\)$/m);

    // update: the format, from the next window
    const parquet = await dataExports([
      'update',
      id,
      '--format',
      'parquet',
      '--compression',
      'zstd',
      '--json',
    ]);
    expect(parquet.code).toBe(0);
    expect(JSON.parse(parquet.out).dataExport).toMatchObject({ format: 'parquet', compression: 'zstd' });

    // update: frequency and pause
    const paused = await dataExports(['update', id, '--frequency', 'hourly', '--pause', '--json']);
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.out).dataExport).toMatchObject({ frequency: 'hourly', isEnabled: false });

    // run while paused: the API's 409, exit 1
    const refused = await dataExports(['run', id]);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^Error: .*paused/im);

    // resume, then run
    expect((await dataExports(['update', id, '--resume'])).out).toMatch(/^state +(active|queued)$/m);
    const run = await dataExports(['run', id]);
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/queued/);

    // runs: three recorded runs, newest first; a scheduled run with nothing to export reads "No rows"
    await putRun(id, 'run_idle', {
      status: 'succeeded',
      isManual: false,
      startedAt: new Date(Date.now() - 180_000).toISOString(),
      finishedAt: new Date(Date.now() - 179_000).toISOString(),
      stats: { email_events: { status: 'succeeded', rows: 0, files: 0, bytes: 0, durationMs: 0 } },
    });
    await putRun(id, 'run_old', {
      status: 'succeeded',
      startedAt: new Date(Date.now() - 120_000).toISOString(),
      finishedAt: new Date(Date.now() - 110_000).toISOString(),
      rowCount: 1500,
      fileCount: 2,
      byteCount: 2048,
      stats: { email_events: { rows: 1500, files: 2, bytes: 2048 } },
    });
    await putRun(id, 'run_new', {
      status: 'failed',
      startedAt: new Date(Date.now() - 60_000).toISOString(),
      finishedAt: new Date(Date.now() - 50_000).toISOString(),
      rowCount: 0,
      fileCount: 0,
      byteCount: 0,
      stats: {},
      error: 'Access denied to bucket local-exports',
    });
    const runs = await dataExports(['runs', id]);
    expect(runs.code).toBe(0);
    const lines = runs.out.split('\n');
    expect(lines[0]).toMatch(/^RUN +STARTED +STATUS +TRIGGER +ROWS +FILES +BYTES +ERROR$/);
    expect(lines[1]).toMatch(/^run_new .* failed +manual +0 +0 +0 B +Access denied to bucket local-exports$/);
    expect(lines[2]).toMatch(/^run_old .* succeeded +manual +1,500 +2 +2\.0 KiB$/);
    expect(lines[3]).toMatch(/^run_idle .* succeeded +schedule +No rows +0 +0 B$/);
    const limited = await dataExports(['runs', id, '--limit', '1', '--json']);
    expect(JSON.parse(limited.out).runs.map((r: { id: string }) => r.id)).toEqual(['run_new']);
    const firstPage = await dataExports(['runs', id, '--limit', '1']);
    const token = /^More: sluice data-exports runs \S+ --limit 1 --next-token (\S+)$/m.exec(
      firstPage.out,
    )?.[1];
    expect(token).toBeDefined();
    const secondPage = await dataExports(['runs', id, '--limit', '1', '--next-token', token!]);
    expect(secondPage.out.split('\n')[1]).toMatch(/^run_old /);

    // test
    const tested = await dataExports(['test', id]);
    expect(tested.code).toBe(0);
    expect(tested.out).toMatch(/^Test file written at \d{4}-/);

    // delete needs --yes; then the export is gone
    const unconfirmed = await dataExports(['delete', id]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.err).toMatch(/--yes/);
    const deleted = await dataExports(['delete', id, '--yes']);
    expect(deleted.code).toBe(0);
    expect(deleted.out).toBe(`Deleted ${id}.`);
    const gone = await dataExports(['get', id]);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/^Error: .*not found/im);
  });

  it("prints the API's message and each field issue with its option, and exits 1", async () => {
    // Act: a URL as bucket (400 invalid_input) and an unknown dataset (422)
    const invalid = await dataExports(
      createArgs({ '--bucket': 's3://acme-exports', '--path-prefix': 'a//b' }),
      LOCAL_S3_CREDENTIALS.secretAccessKey,
    );
    const unknownDataset = await dataExports(
      createArgs({ '--datasets': 'email_events,page_views' }),
      LOCAL_S3_CREDENTIALS.secretAccessKey,
    );
    const asJson = await dataExports(
      [...createArgs({ '--bucket': 's3://acme-exports' }), '--json'],
      LOCAL_S3_CREDENTIALS.secretAccessKey,
    );

    // Assess
    expect(invalid.code).toBe(1);
    expect(invalid.out).toBe('');
    expect(invalid.err).toMatch(/^Error: 2 values were refused:$/m);
    expect(invalid.err).toMatch(/^ {2}--bucket: Bucket name, not a URL/m);
    expect(invalid.err).toMatch(/^ {2}--path-prefix: Path prefix cannot contain empty segments/m);
    // Each issue once: the API's summary of them is not printed beside them.
    expect(invalid.err.split('Bucket name, not a URL')).toHaveLength(2);
    expect(invalid.err.split('\n')).toHaveLength(3);
    expect(unknownDataset.code).toBe(1);
    expect(unknownDataset.err).toMatch(/^ {2}--datasets: Unknown value "page_views"\. Allowed: /m);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.out)).toMatchObject({
      success: false,
      code: 'invalid_input',
      issues: [{ path: 'bucket' }],
    });
  });

  it('creates with --role-arn without asking for a secret (the local runtime then says role exports need AWS)', async () => {
    // Act: no --access-key-id, no stdin
    const args = createArgs({
      '--region': 'us-east-1',
      '--role-arn': 'arn:aws:iam::111122223333:role/sluice',
    })
      .filter((arg) => arg !== '--secret-access-key-stdin')
      .filter((arg, index, all) => arg !== '--access-key-id' && all[index - 1] !== '--access-key-id')
      .filter((arg, index, all) => arg !== '--endpoint' && all[index - 1] !== '--endpoint');
    const result = await dataExports([...args, '--json']);
    // Assess: the request was sent with the role (the connection test's answer), no secret asked for
    expect(result.code).toBe(1);
    expect(JSON.parse(result.out)).toMatchObject({
      code: 'connection_failed',
      error: expect.stringContaining('IAM role destinations need Sluice deployed on AWS'),
    });
  });

  it('never takes the secret from the command line: without --secret-access-key-stdin and no terminal, it stops before any request', async () => {
    // Act
    const name = uniqueId('No secret ');
    const args = createArgs({ '--name': name }).filter((arg) => arg !== '--secret-access-key-stdin');
    const result = await dataExports(args);
    const onArgv = await dataExports([...args, '--secret-access-key', 'x']);

    // Assess
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/--secret-access-key-stdin/);
    expect(onArgv.code).toBe(2);
    expect(onArgv.err).toMatch(/unknown option '--secret-access-key'/);
    const list = await dataExports(['list', '--json']);
    expect(JSON.parse(list.out).dataExports.filter((view: { name: string }) => view.name === name)).toEqual(
      [],
    );
  });

  it('follows a running run with --watch, a line per dataset, until it finishes', async () => {
    // Prepare: an export with a run in progress
    const created = await dataExports([...createArgs(), '--json'], LOCAL_S3_CREDENTIALS.secretAccessKey);
    const id: string = JSON.parse(created.out).dataExport.id;
    const startedAt = new Date().toISOString();
    const progress = (rows: number, status: DataExportRun['status']) => ({
      status,
      startedAt,
      rowCount: rows * 2,
      fileCount: rows > 0 ? 2 : 0,
      byteCount: rows * 100,
      stats: {
        email_events: { rows, files: rows > 0 ? 1 : 0, bytes: rows * 50 },
        sms_events: { rows, files: rows > 0 ? 1 : 0, bytes: rows * 50 },
      },
      finishedAt: status === 'running' ? null : new Date().toISOString(),
    });
    await putRun(id, 'run_live', progress(0, 'running'));

    // Act: watch; between polls (the CLI's sleep) the run moves on: rows after the 3rd poll, done after the 6th
    let polls = 0;
    const sleep = async () => {
      polls++;
      if (polls === 3) await putRun(id, 'run_live', progress(1200, 'running'));
      if (polls === 6) await putRun(id, 'run_live', progress(2500, 'succeeded'));
    };
    const args = ['data-exports', 'runs', id, '--watch', '--api-url', apiUrl, '--api-key', ws.client.apiKey!];
    const watched = await sluice(args, { sleep });

    // Assess
    expect(watched.code).toBe(0);
    // the history first (the runs table), then a blank line, then the live blocks
    const historyEnd = watched.out.indexOf('\n\n');
    const history = watched.out.slice(0, historyEnd).split('\n');
    expect(history[0]).toMatch(/^RUN +STARTED +STATUS/);
    expect(history[1]).toMatch(/^run_live +\S+ +running /);
    const blocks = watched.out.slice(historyEnd + 2).split(/\n(?=run_live )/);
    // a block per change, not per poll
    expect(polls).toBe(6);
    expect(blocks.map((block) => block.split('\n')[0])).toEqual([
      'run_live running',
      'run_live running',
      expect.stringMatching(/^run_live succeeded at \d{4}-/),
    ]);
    expect(blocks[1]).toMatch(/^ {2}email_events +1,200 rows +1 files +58\.6 KiB$/m);
    expect(blocks[2]).toMatch(/^ {2}sms_events +2,500 rows +1 files +122\.1 KiB$/m);
    expect(blocks[2]).toMatch(/^ {2}total +5,000 rows +2 files +244\.1 KiB$/m);
  });

  it('reads the connection from SLUICE_API_URL and SLUICE_API_KEY through `npm run sluice`, and exits 1 on a refused key', async () => {
    // Act
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn('npm', ['run', '-s', 'sluice', '--', 'data-exports', 'list', '--json'], {
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk) => (out += chunk));
        child.stderr.on('data', (chunk) => (err += chunk));
        child.on('close', (code) => resolve({ code, out, err }));
      });
    const ok = await run({ SLUICE_API_URL: apiUrl, SLUICE_API_KEY: ws.client.apiKey! });
    const refused = await run({ SLUICE_API_URL: apiUrl, SLUICE_API_KEY: 'sk_live_wrong' });

    // Assess
    expect(ok.err).toBe('');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ success: true, dataExports: expect.any(Array) });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.out)).toMatchObject({ success: false, code: 'unauthorized' });
  });

  it('backfill create | list | get | cancel | retry, with a progress line, and the API field issues with their options', async () => {
    // Prepare
    const created = await dataExports(
      [...createArgs({ '--frequency': 'hourly' }), '--json'],
      LOCAL_S3_CREDENTIALS.secretAccessKey,
    );
    expect(created.code).toBe(0);
    const id = JSON.parse(created.out).dataExport.id as string;
    const now = Date.now();
    const from = new Date(now - 3 * 3_600_000).toISOString();
    const to = new Date(now - 3_600_000).toISOString();

    // Act
    const queued = await dataExports([
      'backfill',
      'create',
      id,
      '--from',
      from,
      '--to',
      to,
      '--datasets',
      'email_events',
    ]);
    const backfillId = /Backfill (bf_[0-9a-f]{24}) queued/.exec(queued.out)?.[1] as string;
    const listed = await dataExports(['backfill', 'list', id]);
    const got = await dataExports(['backfill', 'get', id, backfillId]);
    const cancelled = await dataExports(['backfill', 'cancel', id, backfillId]);
    const notFailed = await dataExports(['backfill', 'retry', id, backfillId]);
    const tooLong = await dataExports([
      'backfill',
      'create',
      id,
      '--from',
      new Date(now - 9 * 86_400_000).toISOString(),
      '--to',
      to,
    ]);

    // Assess
    expect(queued.code).toBe(0);
    expect(queued.out).toContain('queued  [--------------------]   0%');
    expect(queued.out).toMatch(/email_events: 0\/[23] windows, 0 rows, 0 files/);
    expect(listed.out).toContain(backfillId);
    expect(got.out).toContain(`${backfillId}  queued`);
    expect(cancelled.out).toContain(`Backfill ${backfillId} cancelled.`);
    expect(notFailed.code).toBe(1);
    expect(notFailed.err).toMatch(
      /^Error: This backfill is cancelled; only a failed backfill can be retried\.$/m,
    );
    expect(tooLong.code).toBe(1);
    expect(tooLong.err).toMatch(
      /^ {2}--to: A backfill covers at most 7 days; split a longer range, or send --from earliest\.$/m,
    );
  });

  it('refuses a malformed id with a usage error (exit 2) before any request: backfill cancel <id> .. leaves the export', async () => {
    // Prepare
    const created = await dataExports([...createArgs(), '--json'], LOCAL_S3_CREDENTIALS.secretAccessKey);
    const id = JSON.parse(created.out).dataExport.id as string;

    // Act
    const dots = await dataExports(['backfill', 'cancel', id, '..']);
    const encoded = await dataExports(['backfill', 'get', id, '%2e%2e']);
    const slash = await dataExports(['delete', `${id}/`, '--yes']);
    const traversal = await dataExports(['get', '..']);

    // Assess
    for (const result of [dots, encoded, slash, traversal]) {
      expect(result.code).toBe(2);
    }
    expect(dots.err).toContain('".." is not a backfill id');
    expect(slash.err).toContain(`"${id}/" is not a data export id`);
    expect((await dataExports(['get', id])).code).toBe(0);
  });

  it('sets, shows and clears --child-organizations (ids, "*" or ""), naming the option when one is not a child', async () => {
    // Prepare: two children of the workspace
    const [a, b] = [uniqueId('ws_'), uniqueId('ws_')];
    await Promise.all([a, b].map((child) => harness.store.ensureWorkspace(child)));
    await organizations.link(ws.workspaceId, a);
    await organizations.link(ws.workspaceId, b);

    // Act
    const created = await dataExports(
      [...createArgs({ '--child-organizations': `${a}, ${b}` }), '--json'],
      LOCAL_S3_CREDENTIALS.secretAccessKey,
    );
    const id = JSON.parse(created.out).dataExport.id as string;
    const got = await dataExports(['get', id]);
    const every = await dataExports(['update', id, '--child-organizations', '*', '--json']);
    const everyShown = await dataExports(['get', id]);
    const cleared = await dataExports(['update', id, '--child-organizations', '', '--json']);
    const clearedShown = await dataExports(['get', id]);
    const refused = await dataExports(['update', id, '--child-organizations', `${a},ws_not_a_child`]);

    // Assess
    expect(JSON.parse(created.out).dataExport.childOrganizations).toEqual([a, b]);
    expect(got.out).toMatch(new RegExp(`^child orgs +${a}, ${b}$`, 'm'));
    expect(JSON.parse(every.out).dataExport.childOrganizations).toEqual(['*']);
    expect(everyShown.out).toMatch(/^child orgs +\* \(every child\)$/m);
    expect(JSON.parse(cleared.out).dataExport.childOrganizations).toEqual([]);
    expect(clearedShown.out).toMatch(/^child orgs +-$/m);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /^ {2}--child-organizations: Workspace "ws_not_a_child" is not a child organization of this workspace\.$/m,
    );
  });
});
