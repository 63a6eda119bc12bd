import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatCount } from '@sluice/api/view-format';
import { buildConsole, serveConsole } from '@sluice/console';
import { OrganizationStore } from '@sluice/control';
import { maskAccessKeyId } from '@sluice/core';
import { generateEvents } from '@sluice/eventlog';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_S3_CREDENTIALS, type LocalWorkflows, type Json as StateJson } from '@sluice/devstack';
import { startApiServer } from '@sluice/local';
import {
  createLocalExport,
  type E2eHarness,
  ingestAll,
  manualRunInput,
  startE2eHarness,
  uniqueId,
} from '../e2e/harness.js';

/** Debian's chromium (`apt-get install chromium`; `.ci/run` installs it). */
const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
/** Where each step's screenshot goes, for a person to look at. */
const SCREENSHOTS = join(process.cwd(), '.cache', 'console-screenshots');
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

let h: E2eHarness;
let workflows: LocalWorkflows;
let browser: Browser;
let page: Page;
let consoleDir: string;
const cspViolations: string[] = [];
/** Uncaught errors of the page: none is expected. */
const pageErrors: string[] = [];

beforeAll(async () => {
  consoleDir = await mkdtemp(join(tmpdir(), 'sluice-console-'));
  const { outDir } = buildConsole(consoleDir);
  // The console as `npm start` serves it: no lifecycle warning for the built-in bucket.
  h = await startE2eHarness({
    site: (req, res) => serveConsole(outDir, req, res),
    checkLocalLifecycle: false,
  });
  workflows = await h.workflows();
  // 600 email events in the 100 minutes before the last 15, for the export's runs to carry.
  const now = Date.now();
  const events = [
    ...generateEvents({
      count: 600,
      workspaceId: h.ws.workspaceId,
      seed: 11,
      from: now - 115 * MINUTE_MS,
      to: now - 15 * MINUTE_MS,
      mix: { email_events: 1 },
    }),
  ];
  expect(await ingestAll(h.events, h.ws.workspaceId, events as unknown as Record<string, unknown>[])).toBe(
    600,
  );
  await mkdir(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  expect(await h.close()).toEqual([]);
  await rm(consoleDir, { recursive: true, force: true });
});

/** An instant as the console shows it: ISO, 24-hour, UTC. */
const inUtc = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** `expect.poll` with time for the console's refresh (every 2 s) and a click's round trip. */
function poll<T>(read: () => Promise<T> | T) {
  return expect.poll(read, { timeout: 10_000, interval: 100 });
}

async function screenshot(name: string, on: Page = page): Promise<void> {
  await on.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** A new tab signed in to the console (of the API at `apiUrl`) with `apiKey`, on the exports page. */
async function signedInTab(apiKey: string, apiUrl = h.api.url): Promise<Page> {
  const tab = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  tab.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  tab.on('pageerror', (error) => pageErrors.push(error.message));
  await tab.goto(`${apiUrl}/console/`);
  await tab.getByLabel('API key').fill(apiKey);
  await tab.getByRole('button', { name: 'Sign in' }).click();
  await tab.getByRole('heading', { name: 'Data exports' }).waitFor();
  return tab;
}

describe('the web console in Chromium against the local API', () => {
  it('signs in, shows a field error, creates, runs (the history fills), pauses and deletes an export', async () => {
    const apiKey = h.ws.client.apiKey!;
    const consoleUrl = `${h.api.url}/console/`;

    // Sign in: a wrong key is refused, the right one is kept in sessionStorage only.
    const first = await page.goto(consoleUrl);
    expect(first?.headers()['content-security-policy']).toMatch(/script-src 'self';/);
    expect(first?.headers()['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
    await page.getByLabel('API key').fill('sk_not_a_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await poll(() => page.getByRole('alert').textContent()).toMatch(/not valid/);
    await screenshot('01-sign-in');
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Data exports' }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('sluice.apiKey')")).toBe(apiKey);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(page.url()).not.toContain(apiKey);
    expect(await page.getByTestId('key').textContent()).toBe(`Key ${maskAccessKeyId(apiKey)}`);
    await screenshot('02-exports-empty');

    // Create: a URL as bucket and a role beside the keys: the form's own words beside both fields at once,
    // nothing sent, nothing created.
    await page.getByRole('link', { name: 'New export' }).click();
    await page.getByLabel('Name').fill('Console lake');
    await page.getByLabel('Bucket').fill('s3://local-exports');
    await page.getByLabel('Endpoint (S3-compatible storage only)').fill(h.api.s3Endpoint);
    const prefix = uniqueId('console/');
    await page.getByLabel('Path prefix').fill(prefix);
    await page.getByLabel('Access key id').fill(LOCAL_S3_CREDENTIALS.accessKeyId);
    await page.getByLabel('Secret access key').fill(LOCAL_S3_CREDENTIALS.secretAccessKey);
    await page.getByLabel('Role ARN (instead of keys)').fill('arn:aws:iam::111122223333:role/sluice');
    await page.getByLabel('email_events').check();
    // A workspace without child organisations: nothing to choose, and the form says why.
    expect(await page.getByTestId('no-children').textContent()).toBe(
      'This workspace has no child organisations: the export holds its own data only.',
    );
    await page.getByLabel('Frequency').selectOption('every_5_minutes');
    // Every option of the API: Parquet offers its own compressions; a KMS key adds its grant to the policy.
    await page.getByLabel('Format').selectOption('parquet');
    expect(await page.getByLabel('Compression').locator('option').allTextContents()).toEqual([
      'Snappy',
      'Zstandard',
    ]);
    await page.getByLabel('Compression').selectOption('zstd');
    await page.getByLabel('Encryption').selectOption('aws:kms');
    await page.getByLabel('KMS key').fill('alias/sluice-exports');
    await page.getByLabel('Start from').fill(new Date(Date.now() - 2 * 60 * MINUTE_MS).toISOString());
    // Run-hour folders are written hourly or daily: the schedule's fields are off every 5 minutes.
    await page.getByLabel('Layout').selectOption('run_hour');
    expect(await page.getByLabel('Minute').isDisabled()).toBe(true);
    const policy = await page.getByTestId('policy').textContent();
    expect(policy).toContain(`"arn:aws:s3:::s3:/`); // the bucket as typed, until it is fixed
    expect(policy).toContain('kms:GenerateDataKey');
    await page.getByRole('button', { name: 'Create and test connection' }).click();
    await poll(() => page.locator('#e-bucket').textContent()).toMatch(
      /Enter the bucket name alone, such as local-exports/,
    );
    expect(await page.locator('#e-roleArn').textContent()).toBe(
      'Use either a role or an access key, not both.',
    );
    expect(
      await page.locator('.field.invalid').evaluateAll((all) => all.map((f) => f.getAttribute('data-field'))),
    ).toEqual(['bucket', 'roleArn', 'frequency']);
    expect(await page.locator('#e-frequency').textContent()).toBe(
      'Run-hour folders are written hourly or daily: choose Hourly or Daily, or Date folders.',
    );
    expect((await h.ws.client.request('GET', '/data-exports')).body.dataExports).toEqual([]);
    await screenshot('03-field-error');

    // Fixed: created after the connection test, the detail page shows it and every option, the key masked.
    await page.getByLabel('Bucket').fill('local-exports');
    await page.getByLabel('Role ARN (instead of keys)').fill('');
    await page.getByLabel('Layout').selectOption('date');
    expect(await page.getByTestId('policy').textContent()).toContain(
      `"Resource": "arn:aws:s3:::local-exports/${prefix}/*"`,
    );
    await page.getByRole('button', { name: 'Create and test connection' }).click();
    await page.getByRole('heading', { name: 'Console lake' }).waitFor();
    const id = decodeURIComponent(/#\/exports\/([^/]+)$/.exec(page.url())?.[1] ?? '');
    expect(id).toMatch(/^exp_/);
    await poll(() => page.locator('dd').allTextContents()).toContain(
      maskAccessKeyId(LOCAL_S3_CREDENTIALS.accessKeyId),
    );
    const shown = await page.locator('dd').allTextContents();
    expect(shown).toEqual(
      expect.arrayContaining([
        id,
        `s3://local-exports/${prefix}`,
        'Email events',
        'Parquet, Zstandard',
        'AWS KMS key alias/sluice-exports',
        'Every 5 minutes',
        'Date folders (date=YYYY-MM-DD)',
        'Every 5 minutes, at minutes Sluice picks',
        "None: this workspace's own data only",
      ]),
    );
    expect(await page.getByTestId('health').textContent()).toBe('Not exported yet');
    // The built-in bucket carries no lifecycle warning.
    expect(await page.getByTestId('warning').count()).toBe(0);
    expect(await page.content()).not.toContain(LOCAL_S3_CREDENTIALS.secretAccessKey);
    await screenshot('04-created');

    // Edit: back to JSON lines and the bucket's default encryption; the form shows the stored options.
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.getByRole('heading', { name: 'Edit Console lake' }).waitFor();
    expect(await page.getByLabel('Format').inputValue()).toBe('parquet');
    expect(await page.getByLabel('Compression').inputValue()).toBe('zstd');
    expect(await page.getByLabel('Encryption').inputValue()).toBe('aws:kms');
    await page.getByLabel('Format').selectOption('jsonl');
    await page.getByLabel('Encryption').selectOption('');
    await page.getByLabel('KMS key').fill('');
    await screenshot('04b-edit');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Console lake', exact: true }).waitFor();
    await poll(() => page.locator('dd').allTextContents()).toContain('JSON lines, gzip');
    expect(await page.locator('dd').allTextContents()).toContain("Bucket's default");
    expect((await h.ws.client.request('GET', `/data-exports/${id}`)).body.dataExport).toMatchObject({
      format: 'jsonl',
      compression: 'gzip',
      serverSideEncryption: null,
      kmsKeyId: null,
    });

    // Run now: the API queues the run; the engine (Dispatch, as the schedule would) runs it, with the catch-up
    // runs it needs, and the console's charts grow by one bar per run as it polls. Twice: the second run finds
    // nothing new and shows as a run of 0 rows.
    const bars = page.locator('svg[aria-label="Rows per run"] rect.bar');
    let runs = 0;
    for (const step of ['05-first-run', '06-second-run']) {
      await page.getByRole('button', { name: 'Run now' }).click();
      await poll(() => page.getByRole('status').textContent()).toMatch(/queued/i);
      for (let tick = 0; tick < 6; tick++) {
        const outcome = await workflows.runDispatch();
        const ours = outcome.runs.filter(
          (run) => (run.input as { destinationId?: string }).destinationId === id,
        );
        if (ours.length === 0) break;
        runs += ours.length;
      }
      const shown = runs;
      await poll(() => bars.count()).toBe(shown);
      await screenshot(step);
    }
    expect(runs).toBeGreaterThanOrEqual(2);
    // The runs table and the charts agree with the API: every row exported, one lag point per run that
    // exported an email_events window.
    const api = (await h.ws.client.request('GET', `/data-exports/${id}/runs?limit=100`)).body.runs as {
      rowCount: number;
      stats: Record<string, unknown>;
    }[];
    expect(api).toHaveLength(runs);
    expect(api.reduce((sum, run) => sum + run.rowCount, 0)).toBe(600);
    expect(await page.locator('table.runs tbody tr').count()).toBe(runs);
    // Each run with its datasets and duration; one that found nothing says so.
    expect(await page.locator('table.runs').textContent()).toContain('No rows');
    expect(await page.locator('table.runs tbody tr').first().textContent()).toMatch(/\d+ s/);
    // Every run lists each event dataset (no rows: no window); the chart plots the runs that exported one.
    const withWindow = api.filter(
      (run) => (run.stats.email_events as { toMs?: number } | undefined)?.toMs !== undefined,
    ).length;
    expect(withWindow).toBeGreaterThan(0);
    expect(
      await page.locator('svg[aria-label="Lag per dataset"] g[data-dataset="email_events"] circle').count(),
    ).toBe(withWindow);
    // The legend, below the plot, names the dataset beside a dot of its line's colour.
    const legend = page.locator('ul.legend li[data-dataset="email_events"]');
    expect(await legend.textContent()).toBe(' Email events');
    const lineColour = await page
      .locator('svg[aria-label="Lag per dataset"] g[data-dataset="email_events"] circle')
      .first()
      .evaluate(
        (circle) =>
          (globalThis as unknown as { getComputedStyle(e: unknown): { fill: string } }).getComputedStyle(
            circle,
          ).fill,
      );
    expect(
      await legend
        .locator('circle')
        .evaluate(
          (circle) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { fill: string } }).getComputedStyle(
              circle,
            ).fill,
        ),
    ).toBe(lineColour);
    expect(lineColour).not.toBe('rgb(0, 0, 0)');

    await page.locator('section.history').screenshot({ path: join(SCREENSHOTS, '06-history-charts.png') });

    // Pause, resume, pause again from the detail page; the list shows the state and exportedThrough.
    await page.getByRole('button', { name: 'Pause' }).click();
    await poll(() => page.getByTestId('state').textContent()).toBe('paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await poll(() => page.getByTestId('state').textContent()).not.toBe('paused');
    expect((await h.ws.client.request('GET', `/data-exports/${id}`)).body.dataExport?.isEnabled).toBe(true);
    await page.getByRole('button', { name: 'Pause' }).click();
    await poll(() => page.getByTestId('state').textContent()).toBe('paused');
    await page.getByRole('link', { name: 'Sluice console' }).click();
    const row = page.locator(`tr[data-export="${id}"]`);
    await poll(() => row.locator('.state').textContent()).toBe('paused');
    expect(await row.locator('ul.through li').textContent()).toMatch(
      /^Email events \d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
    );
    await screenshot('07-paused-in-list');

    // Delete, with confirmation: cancel keeps it, confirm deletes it.
    await row.getByRole('link', { name: 'Console lake' }).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await h.ws.client.request('GET', `/data-exports/${id}`)).status).toBe(200);
    await page.getByRole('button', { name: 'Delete' }).click();
    await screenshot('08-confirm-delete');
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No export yet.').waitFor();
    expect((await h.ws.client.request('GET', `/data-exports/${id}`)).status).toBe(404);
    await screenshot('09-deleted');

    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('starts backfills from the form, shows their progress as they run, and cancels them', async () => {
    // Prepare: an export of email and custom events, with rows in each of the last 3 whole hours.
    const hour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
    const events = generateEvents({
      count: 300,
      workspaceId: h.ws.workspaceId,
      seed: 21,
      from: hour - 3 * HOUR_MS,
      to: hour - 1,
      mix: { email_events: 2, custom_events: 1 },
    });
    expect(
      await ingestAll(h.events, h.ws.workspaceId, [...events] as unknown as Record<string, unknown>[]),
    ).toBe(300);
    const { id } = await createLocalExport(h, {
      prefixRoot: 'console-backfills/',
      startFromMs: Date.now() - HOUR_MS,
      datasets: ['email_events', 'custom_events', 'subscribers'],
      frequency: 'hourly',
    });
    const backfillsPath = `/data-exports/${id}/backfills`;
    const apiBackfills = async () =>
      (await h.ws.client.request('GET', backfillsPath)).body.backfills as {
        id: string;
        status: string;
        progress: Record<string, { windowsDone: number; windowsTotal: number; rows: number; files: number }>;
      }[];
    const tab = await signedInTab(h.ws.client.apiKey!);
    const requests: string[] = [];
    tab.on('request', (request) => {
      const url = new URL(request.url());
      requests.push(`${request.method()} ${url.pathname}${url.search}`);
    });
    await tab.goto(`${h.api.url}/console/#/exports/${id}`);
    const section = tab.locator('section.backfills');
    await section.getByText('No backfill yet.').waitFor();
    // The event datasets only, by their labels: subscribers are snapshots.
    expect(await section.getByRole('checkbox', { name: 'Email events', exact: true }).count()).toBe(1);
    expect(await section.getByRole('checkbox', { name: /subscribers/i }).count()).toBe(0);
    const row = (backfillId: string) => section.locator(`tr[data-backfill="${backfillId}"]`);
    // Times as the page shows them: 24-hour UTC.
    const inUtc = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
    expect(await section.getByLabel('From (UTC)').inputValue()).toMatch(/^\d{4}-\d\d-\d\d \d\d:00$/);

    // The form's own check: an end before the start is refused beside "To", and nothing is sent.
    await section.getByLabel('From (UTC)').fill(inUtc(hour - HOUR_MS));
    await section.getByLabel('To (UTC)').fill(inUtc(hour - 2 * HOUR_MS));
    await section.getByRole('button', { name: 'Start backfill' }).click();
    await poll(() => section.locator('#e-to').textContent()).toBe('The end must be after the start.');
    expect(requests.filter((line) => line.startsWith('POST '))).toEqual([]);

    // The API's 400: a start before the earliest available data, shown beside "From".
    await section.getByLabel('From (UTC)').fill(inUtc(hour - 90 * 24 * HOUR_MS));
    await section.getByLabel('To (UTC)').fill(inUtc(hour - 89 * 24 * HOUR_MS));
    await section.getByRole('button', { name: 'Start backfill' }).click();
    await poll(() => section.locator('#e-from').textContent()).toMatch(/before the earliest available data/);
    expect(await section.locator('#e-to').textContent()).toBe('');
    expect(requests.filter((line) => line.startsWith('POST '))).toEqual([`POST /v1${backfillsPath}`]);
    expect(await apiBackfills()).toEqual([]);
    await screenshot('10-backfill-field-error', tab);

    // A range of the last 3 hours: queued, one progress bar per dataset, nothing done yet.
    await section.getByLabel('From (UTC)').fill(inUtc(hour - 3 * HOUR_MS));
    await section.getByLabel('To (UTC)').fill(inUtc(hour));
    await section.getByRole('button', { name: 'Start backfill' }).click();
    await poll(async () => (await apiBackfills()).length).toBe(1);
    const [first] = await apiBackfills();
    await poll(() => section.getByTestId('backfills-status').textContent()).toBe(
      `Backfill ${first!.id} queued.`,
    );
    await poll(() => row(first!.id).getByTestId('status').textContent()).toBe('queued');
    expect(
      await row(first!.id)
        .locator('progress')
        .evaluateAll((bars) => bars.map((b) => b.getAttribute('value'))),
    ).toEqual(['0', '0']);

    // It runs (one writer at a time), held after its first window: the list, polling, shows it running with
    // the API's progress so far.
    let firstWritten!: () => void;
    const written = new Promise<void>((resolve) => {
      firstWritten = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let writers = 0;
    let queue = Promise.resolve();
    const gated = await h.workflows({
      intercept: (state, input, invoke) => {
        if (state !== 'WriteWindow') return invoke(input);
        const turn = queue.then(async () => {
          const output = await invoke(input);
          writers += 1;
          if (writers === 1) {
            firstWritten();
            await released;
          }
          return output as StateJson;
        });
        queue = turn.then(
          () => undefined,
          () => undefined,
        );
        return turn;
      },
    });
    const running = gated.runExportRun({
      workspaceId: h.ws.workspaceId,
      destinationId: id,
      trigger: 'backfill',
    });
    await written;
    await poll(() => row(first!.id).getByTestId('status').textContent()).toBe('running');
    const midway = (await apiBackfills())[0]!;
    const files = Object.values(midway.progress).reduce((sum, p) => sum + p.files, 0);
    expect(files).toBe(1);
    for (const [dataset, p] of Object.entries(midway.progress)) {
      const line = row(first!.id).locator(`li[data-dataset="${dataset}"]`);
      await poll(() => line.locator('small').textContent()).toMatch(
        new RegExp(
          `^${p.windowsDone} of ${p.windowsTotal} windows · ${formatCount(p.rows)} rows? · ${p.files} files? · `,
        ),
      );
      expect(p.windowsTotal).toBeGreaterThanOrEqual(2);
      expect(await line.locator('span.dataset').textContent()).not.toBe(dataset);
      expect(await line.locator('progress').getAttribute('max')).toBe(String(p.windowsTotal));
    }
    await screenshot('11-backfill-running', tab);

    // Cancel, with confirmation: "Keep it" keeps it running; "Cancel backfill" cancels it, and the run, let
    // go, stops before its next file.
    await row(first!.id).getByRole('button', { name: 'Cancel' }).click();
    await tab.getByRole('dialog').getByRole('button', { name: 'Keep it' }).click();
    expect((await apiBackfills())[0]?.status).toBe('running');
    await row(first!.id).getByRole('button', { name: 'Cancel' }).click();
    await screenshot('12-confirm-cancel-backfill', tab);
    await tab.getByRole('dialog').getByRole('button', { name: 'Cancel backfill' }).click();
    await poll(() => row(first!.id).getByTestId('status').textContent()).toBe('cancelled');
    expect(await section.getByTestId('backfills-status').textContent()).toBe(
      `Backfill ${first!.id} cancelled.`,
    );
    expect(await row(first!.id).getByRole('button', { name: 'Cancel' }).count()).toBe(0);
    release();
    expect((await running).status).toBe('stopped');
    const cancelled = (await apiBackfills())[0]!;
    expect(cancelled.status).toBe('cancelled');
    expect(Object.values(cancelled.progress).reduce((sum, p) => sum + p.files, 0)).toBe(1);

    // The entire history: "from": "earliest", the range inputs off; a second one within 30 days is the API's
    // 409, shown on the form. The queued one is cancelled.
    await section.getByLabel(/Entire history/).check();
    expect(await section.getByLabel('From (UTC)').isDisabled()).toBe(true);
    await section.getByRole('button', { name: 'Start backfill' }).click();
    await poll(async () => (await apiBackfills()).length).toBe(2);
    const whole = (await apiBackfills())[0]!;
    await poll(() => row(whole.id).locator('td').nth(2).textContent()).toMatch(/^Entire history, from /);
    await section.getByRole('button', { name: 'Start backfill' }).click();
    await poll(() => section.locator('.form-error').textContent()).toMatch(
      /A full-history backfill of this data export was started in the last 30 days/,
    );
    await screenshot('13-backfill-full-history-refused', tab);
    await row(whole.id).getByRole('button', { name: 'Cancel' }).click();
    await tab.getByRole('dialog').getByRole('button', { name: 'Cancel backfill' }).click();
    await poll(() => row(whole.id).getByTestId('status').textContent()).toBe('cancelled');

    // A range of one hour, run to its end: every bar full, the API's rows shown; newest first.
    await section.getByLabel(/Entire history/).uncheck();
    await section.getByLabel('From (UTC)').fill(inUtc(hour - 2 * HOUR_MS));
    await section.getByLabel('To (UTC)').fill(inUtc(hour - HOUR_MS));
    await section.getByRole('button', { name: 'Start backfill' }).click();
    await poll(async () => (await apiBackfills()).length).toBe(3);
    const last = (await apiBackfills())[0]!;
    await poll(() => row(last.id).getByTestId('status').textContent()).toBe('queued');
    const outcome = await workflows.runExportRun({
      workspaceId: h.ws.workspaceId,
      destinationId: id,
      trigger: 'backfill',
    });
    expect(outcome.status).toBe('succeeded');
    await poll(() => row(last.id).getByTestId('status').textContent()).toBe('succeeded');
    const done = (await apiBackfills())[0]!;
    expect(done.status).toBe('succeeded');
    for (const [dataset, p] of Object.entries(done.progress)) {
      const line = row(last.id).locator(`li[data-dataset="${dataset}"]`);
      expect(p.rows).toBeGreaterThan(0);
      expect(await line.locator('small').textContent()).toMatch(
        new RegExp(`^${p.windowsTotal} of ${p.windowsTotal} windows? · ${formatCount(p.rows)} rows? · `),
      );
      expect(await line.locator('progress').getAttribute('value')).toBe(String(p.windowsTotal));
    }
    expect(
      await section
        .locator('tbody tr')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-backfill'))),
    ).toEqual((await apiBackfills()).map((b) => b.id));
    await screenshot('14-backfills', tab);
    await section.screenshot({ path: join(SCREENSHOTS, '14-backfills-section.png') });

    // None is active: the list is not read again while the page itself refreshes three times (every 2 s).
    const reads = (path: string) => requests.filter((line) => line === `GET /v1${path}`).length;
    const listReads = requests.filter((line) => line.startsWith(`GET /v1${backfillsPath}?`)).length;
    const pageReads = reads(`/data-exports/${id}`);
    await poll(() => reads(`/data-exports/${id}`)).toBeGreaterThanOrEqual(pageReads + 3);
    expect(requests.filter((line) => line.startsWith(`GET /v1${backfillsPath}?`)).length).toBe(listReads);
    await tab.close();

    // A key without the write scope sees the backfills, and the form says why it cannot start one.
    const reader = await h.ws.clientWith({ scopes: ['data_exports:read'] });
    const readOnly = await signedInTab(reader.apiKey!);
    await readOnly.goto(`${h.api.url}/console/#/exports/${id}`);
    const readerSection = readOnly.locator('section.backfills');
    await poll(() => readerSection.locator('tbody tr').count()).toBe(3);
    await readerSection.getByRole('button', { name: 'Start backfill' }).click();
    await poll(() => readerSection.locator('.form-error').textContent()).toMatch(
      /missing required scopes: data_exports:write/,
    );
    expect(await readerSection.getByRole('button', { name: 'Start backfill' }).isDisabled()).toBe(true);
    expect(await apiBackfills()).toHaveLength(3);
    await screenshot('15-backfill-read-only-key', readOnly);
    await readOnly.close();

    expect(cspViolations).toEqual([]);
  });

  it('sets the layout and schedule on create and edit, shows a failing export and a save that warns', async () => {
    // Prepare: a bucket of its own (the local bucket is shared), emptied and deleted later for the failure.
    const bucket = uniqueId('warehouse-');
    await h.api.s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const tab = await signedInTab(h.ws.client.apiKey!);
    const dd = () => tab.locator('dd').allTextContents();
    /** The next `hh:mm` UTC after now, as the API plans a daily schedule. */
    const nextDaily = (hour: number, minute: number) => {
      const now = Date.now();
      const today = Math.floor(now / (24 * HOUR_MS)) * 24 * HOUR_MS + hour * HOUR_MS + minute * MINUTE_MS;
      return today > now ? today : today + 24 * HOUR_MS;
    };
    /** The next `:mm` after now, as the API plans an hourly schedule. */
    const nextHourly = (minute: number) => {
      const at = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + minute * MINUTE_MS;
      return at > Date.now() ? at : at + HOUR_MS;
    };

    // Create, run-hour folders, daily: subscribers and an hour without its minute are refused at once, in the
    // console's words, and nothing is sent.
    await tab.getByRole('link', { name: 'New export' }).click();
    await tab.getByLabel('Name').fill('Warehouse feed');
    await tab.getByLabel('Bucket').fill(bucket);
    await tab.getByLabel('Endpoint (S3-compatible storage only)').fill(h.api.s3Endpoint);
    await tab.getByLabel('Path prefix').fill('runs');
    await tab.getByLabel('Access key id').fill(LOCAL_S3_CREDENTIALS.accessKeyId);
    await tab.getByLabel('Secret access key').fill(LOCAL_S3_CREDENTIALS.secretAccessKey);
    await tab.getByLabel('email_events').check();
    await tab.getByLabel('subscribers').check();
    await tab.getByLabel('Layout').selectOption('run_hour');
    await tab.getByLabel('Frequency').selectOption('every_15_minutes');
    expect(await tab.getByLabel('Minute').isDisabled()).toBe(true);
    await tab.getByLabel('Frequency').selectOption('daily');
    expect(await tab.getByLabel('Hour (UTC)').isDisabled()).toBe(false);
    expect(await tab.getByTestId('next-run').textContent()).toBe(
      'Daily, at a minute Sluice picks for this export.',
    );
    await tab.getByLabel('Hour (UTC)').fill('8');
    await tab.getByRole('button', { name: 'Create and test connection' }).click();
    await poll(() => tab.locator('#e-datasets').textContent()).toBe(
      'Subscribers are a daily snapshot, written in date folders only: untick them, or choose Date folders.',
    );
    expect(await tab.locator('#e-schedule').textContent()).toBe(
      'Enter both the hour and the minute, or leave both empty for a time Sluice picks.',
    );
    expect(
      await tab.locator('.field.invalid').evaluateAll((all) => all.map((f) => f.getAttribute('data-field'))),
    ).toEqual(['datasets', 'schedule']);
    const names = async () =>
      ((await h.ws.client.request('GET', '/data-exports')).body.dataExports ?? []).map(
        (view: { name: string }) => view.name,
      );
    expect(await names()).not.toContain('Warehouse feed');
    await screenshot('16-layout-schedule-errors', tab);

    // Fixed: the form says when it runs and its next run (24-hour UTC); created, the page shows both.
    await tab.getByLabel('subscribers').uncheck();
    await tab.getByLabel('Minute').fill('30');
    expect(await tab.getByTestId('next-run').textContent()).toBe(
      `Every day at 08:30 UTC. Next run on this schedule: ${inUtc(nextDaily(8, 30))}.`,
    );
    await screenshot('17-layout-schedule', tab);
    await tab.getByRole('button', { name: 'Create and test connection' }).click();
    await tab.getByRole('heading', { name: 'Warehouse feed' }).waitFor();
    const id = decodeURIComponent(/#\/exports\/([^/]+)$/.exec(tab.url())?.[1] ?? '');
    await poll(dd).toEqual(
      expect.arrayContaining([
        'Email events',
        'Daily',
        'Run-hour folders (year/month/day/hour)',
        'Every day at 08:30 UTC',
      ]),
    );
    expect((await h.ws.client.request('GET', `/data-exports/${id}`)).body.dataExport).toMatchObject({
      layout: 'run_hour',
      frequency: 'daily',
      datasets: ['email_events'],
      schedule: { hour: 8, minute: 30 },
    });

    // Edit: the stored layout and schedule in the form; hourly at minute 05 (the hour off); the page and the
    // API show the change.
    await tab.getByRole('link', { name: 'Edit' }).click();
    await tab.getByRole('heading', { name: 'Edit Warehouse feed' }).waitFor();
    expect(await tab.getByLabel('Layout').inputValue()).toBe('run_hour');
    expect(await tab.getByLabel('Hour (UTC)').inputValue()).toBe('08');
    expect(await tab.getByLabel('Minute').inputValue()).toBe('30');
    await tab.getByLabel('Frequency').selectOption('hourly');
    expect(await tab.getByLabel('Hour (UTC)').isDisabled()).toBe(true);
    await tab.getByLabel('Minute').fill('05');
    expect(await tab.getByTestId('next-run').textContent()).toBe(
      `Every hour at minute 05 (UTC). Next run on this schedule: ${inUtc(nextHourly(5))}.`,
    );
    await screenshot('18-edit-schedule', tab);
    await tab.getByRole('button', { name: 'Save' }).click();
    await tab.getByRole('heading', { name: 'Warehouse feed', exact: true }).waitFor();
    await poll(dd).toContain('Every hour at minute 05 (UTC)');
    expect(await dd()).toContain('Hourly');
    await tab
      .locator('main > section.card')
      .first()
      .screenshot({ path: join(SCREENSHOTS, '18b-export-summary.png') });
    expect((await h.ws.client.request('GET', `/data-exports/${id}`)).body.dataExport).toMatchObject({
      layout: 'run_hour',
      frequency: 'hourly',
      schedule: { minute: 5 },
    });

    // The bucket is deleted: the run fails for real, and the page says the export is failing, and why.
    await h.api.s3.send(
      new DeleteObjectCommand({ Bucket: bucket, Key: 'runs/_sluice/connection-test.json' }),
    );
    await h.api.s3.send(new DeleteBucketCommand({ Bucket: bucket }));
    const outcome = await workflows.runExportRun(manualRunInput(h, id));
    expect(outcome.status).toBe('failed');
    await poll(() => tab.getByTestId('failing').count()).toBe(1);
    expect(await tab.getByTestId('failing').textContent()).toMatch(
      new RegExp(
        `^Failing since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC: the bucket does not exist\\. Bucket "${bucket}" does not exist`,
      ),
    );
    expect(await tab.getByTestId('state').textContent()).toMatch(/^failed/);
    await screenshot('19-failing', tab);
    // A run that failed before writing shows 0 rows, not "No rows" (which says it found nothing to export).
    expect(await tab.locator('table.runs tbody tr').first().locator('td').nth(5).textContent()).toBe('0');
    const retry = (await h.ws.client.request('GET', `/data-exports/${id}`)).body.dataExport!.nextRunAt!;
    expect(Date.parse(retry)).toBeGreaterThan(Date.now());

    // Moved back to the local bucket, from the console of an API that checks its lifecycle rules (as for a
    // customer's bucket): a new minute is said to apply after the retry already planned; the form asks for
    // the keys again; then the save's warning is shown on the page.
    const checking = await startApiServer({
      host: '127.0.0.1',
      port: 0,
      site: (req, res) => serveConsole(consoleDir, req, res),
      checkLocalLifecycle: true,
    });
    try {
      const other = await signedInTab(h.ws.client.apiKey!, checking.url);
      await other.goto(`${checking.url}/console/#/exports/${id}/edit`);
      await other.getByRole('heading', { name: 'Edit Warehouse feed' }).waitFor();
      await other.getByLabel('Minute').fill('10');
      expect(await other.getByTestId('next-run').textContent()).toBe(
        `Every hour at minute 10 (UTC). Next run on this schedule: ${inUtc(nextHourly(10))}. The run already planned, at ${inUtc(Date.parse(retry))}, keeps its time.`,
      );
      await other.getByLabel('Bucket').fill('local-exports');
      await other.getByRole('button', { name: 'Save' }).click();
      await poll(() => other.locator('#e-bucket').textContent()).toBe(
        'A new bucket needs the access key id and secret again: the stored secret is only used where it was given.',
      );
      await other.getByLabel('Access key id').fill(LOCAL_S3_CREDENTIALS.accessKeyId);
      await other.getByLabel('Secret access key').fill(LOCAL_S3_CREDENTIALS.secretAccessKey);
      await other.getByRole('button', { name: 'Save' }).click();
      await other.getByRole('heading', { name: 'Warehouse feed', exact: true }).waitFor();
      await poll(() => other.getByTestId('warning').count()).toBe(1);
      expect(await other.getByTestId('warning').textContent()).toMatch(
        /^Warning: An upload that is cut off .* lifecycle configuration/,
      );
      expect((await h.ws.client.request('GET', `/data-exports/${id}`)).body.dataExport).toMatchObject({
        bucket: 'local-exports',
        schedule: { minute: 10 },
      });
      await screenshot('20-saved-with-warning', other);
      await other.close();
    } finally {
      await checking.close();
    }
    await tab.close();
    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('chooses child organisations on create and edit, all current and future ones too', async () => {
    // Prepare: a parent workspace with two children linked (the operator's `orgs link`), nothing exported yet.
    const parent = await h.api.newWorkspace();
    const [first, second] = [uniqueId('ws_child_'), uniqueId('ws_child_')].sort();
    const organizations = new OrganizationStore({ tableName: process.env.SLUICE_CONTROL_TABLE! });
    for (const child of [first!, second!]) {
      await h.api.store.ensureWorkspace(child);
      await organizations.link(parent.workspaceId, child);
    }
    const links = (await parent.client.request('GET', '/organizations/children')).body.children as {
      workspaceId: string;
      linkedAt: string;
    }[];
    const tab = await signedInTab(parent.client.apiKey!);
    const dd = () => tab.locator('dd').allTextContents();
    const picker = tab.locator('#f-childOrganizations');

    // Create: a checkbox per child with when it was linked, and "all current and future" ones.
    await tab.getByRole('link', { name: 'New export' }).click();
    await tab.getByLabel('Name').fill('Agency lake');
    await tab.getByLabel('Bucket').fill('local-exports');
    await tab.getByLabel('Endpoint (S3-compatible storage only)').fill(h.api.s3Endpoint);
    await tab.getByLabel('Path prefix').fill(uniqueId('console-children/'));
    await tab.getByLabel('Access key id').fill(LOCAL_S3_CREDENTIALS.accessKeyId);
    await tab.getByLabel('Secret access key').fill(LOCAL_S3_CREDENTIALS.secretAccessKey);
    await tab.getByLabel('email_events').check();
    expect(await picker.locator('label').allTextContents()).toEqual([
      ' All current and future child organisations',
      ...links.map((link) => ` ${link.workspaceId} linked ${inUtc(Date.parse(link.linkedAt))}`),
    ]);
    expect(await tab.getByTestId('no-children').count()).toBe(0);
    await tab.getByLabel(first!).check();
    await screenshot('21-child-organisations', tab);
    await tab.getByRole('button', { name: 'Create and test connection' }).click();
    await tab.getByRole('heading', { name: 'Agency lake' }).waitFor();
    const id = decodeURIComponent(/#\/exports\/([^/]+)$/.exec(tab.url())?.[1] ?? '');
    await poll(dd).toContain(first);
    expect((await parent.client.request('GET', `/data-exports/${id}`)).body.dataExport).toMatchObject({
      childOrganizations: [first],
    });

    // Edit: all current and future children (each child's box off while it is ticked).
    await tab.getByRole('link', { name: 'Edit' }).click();
    await tab.getByRole('heading', { name: 'Edit Agency lake' }).waitFor();
    expect(await tab.getByLabel(first!).isChecked()).toBe(true);
    expect(await tab.getByLabel(second!).isChecked()).toBe(false);
    await tab.getByLabel('All current and future child organisations').check();
    expect(await tab.getByLabel(second!).isDisabled()).toBe(true);
    await tab.getByRole('button', { name: 'Save' }).click();
    await tab.getByRole('heading', { name: 'Agency lake', exact: true }).waitFor();
    await poll(dd).toContain('All current and future child organisations');
    expect((await parent.client.request('GET', `/data-exports/${id}`)).body.dataExport).toMatchObject({
      childOrganizations: ['*'],
    });

    // Back to the first child alone; then it is unlinked: the edit form keeps it listed, ticked, "no longer
    // linked", and adding the second child is refused by the form's own check until it is unticked.
    await tab.getByRole('link', { name: 'Edit' }).click();
    await tab.getByRole('heading', { name: 'Edit Agency lake' }).waitFor();
    await tab.getByLabel('All current and future child organisations').uncheck();
    await tab.getByLabel(first!).check();
    await tab.getByRole('button', { name: 'Save' }).click();
    await tab.getByRole('heading', { name: 'Agency lake', exact: true }).waitFor();
    await poll(dd).toContain(first);
    await organizations.unlink(parent.workspaceId, first!);
    await tab.getByRole('link', { name: 'Edit' }).click();
    await tab.getByRole('heading', { name: 'Edit Agency lake' }).waitFor();
    expect(await picker.locator('label', { hasText: first! }).textContent()).toBe(
      ` ${first} no longer linked`,
    );
    await tab.getByLabel(second!).check();
    await tab.getByRole('button', { name: 'Save' }).click();
    await poll(() => tab.locator('#e-childOrganizations').textContent()).toBe(
      `${first} is no longer a child of this workspace: untick it.`,
    );
    await tab.getByLabel(first!).uncheck();
    await tab.getByRole('button', { name: 'Save' }).click();
    await tab.getByRole('heading', { name: 'Agency lake', exact: true }).waitFor();
    await poll(dd).toContain(second);
    expect((await parent.client.request('GET', `/data-exports/${id}`)).body.dataExport).toMatchObject({
      childOrganizations: [second],
    });
    await tab.close();
    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
