import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildConsole, serveConsole } from '@sluice/console';
import { maskAccessKeyId } from '@sluice/core';
import { generateEvents } from '@sluice/eventlog';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_S3_CREDENTIALS } from '../../packages/local/src/s3-local.js';
import type { LocalWorkflows } from '../../packages/local/src/stepfunctions.js';
import { type E2eHarness, ingestAll, startE2eHarness, uniqueId } from '../e2e/harness.js';

/** Debian's chromium (`apt-get install chromium`; `.ci/run` installs it). */
const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
/** Where each step's screenshot goes, for a person to look at. */
const SCREENSHOTS = join(process.cwd(), '.cache', 'console-screenshots');
const MINUTE_MS = 60_000;

let h: E2eHarness;
let workflows: LocalWorkflows;
let browser: Browser;
let page: Page;
let consoleDir: string;
const cspViolations: string[] = [];

beforeAll(async () => {
  consoleDir = await mkdtemp(join(tmpdir(), 'sluice-console-'));
  const { outDir } = buildConsole(consoleDir);
  h = await startE2eHarness({ site: (req, res) => serveConsole(outDir, req, res) });
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
}, 120_000);

afterAll(async () => {
  await browser?.close();
  expect(await h.close()).toEqual([]);
  await rm(consoleDir, { recursive: true, force: true });
});

/** `expect.poll` with time for the console's refresh (every 2 s) and a click's round trip. */
function poll<T>(read: () => Promise<T> | T) {
  return expect.poll(read, { timeout: 10_000, interval: 100 });
}

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
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

    // Create: a URL as bucket gets the API's message beside the bucket field, nothing is created.
    await page.getByRole('link', { name: 'New export' }).click();
    await page.getByLabel('Name').fill('Console lake');
    await page.getByLabel('Bucket').fill('s3://local-exports');
    await page.getByLabel('Endpoint (S3-compatible storage only)').fill(h.api.s3Endpoint);
    await page.getByLabel('Path prefix').fill(uniqueId('console/'));
    await page.getByLabel('Access key id').fill(LOCAL_S3_CREDENTIALS.accessKeyId);
    await page.getByLabel('Secret access key').fill(LOCAL_S3_CREDENTIALS.secretAccessKey);
    await page.getByLabel('email_events').check();
    await page.getByLabel('Frequency').selectOption('every_5_minutes');
    await page.getByLabel('Start from').fill(new Date(Date.now() - 2 * 60 * MINUTE_MS).toISOString());
    await page.getByRole('button', { name: 'Create and test connection' }).click();
    await poll(() => page.locator('#e-bucket').textContent()).toMatch(/Bucket name, not a URL/);
    expect(await page.locator('.field.invalid').getAttribute('data-field')).toBe('bucket');
    expect((await h.ws.client.request('GET', '/data-exports')).body.dataExports).toEqual([]);
    await screenshot('03-field-error');

    // Fixed: created after the connection test, the detail page shows it, the access key masked.
    await page.getByLabel('Bucket').fill('local-exports');
    await page.getByRole('button', { name: 'Create and test connection' }).click();
    await page.getByRole('heading', { name: 'Console lake' }).waitFor();
    const id = decodeURIComponent(/#\/exports\/([^/]+)$/.exec(page.url())?.[1] ?? '');
    expect(id).toMatch(/^exp_/);
    await poll(() => page.locator('dd').allTextContents()).toContain(
      maskAccessKeyId(LOCAL_S3_CREDENTIALS.accessKeyId),
    );
    expect(await page.content()).not.toContain(LOCAL_S3_CREDENTIALS.secretAccessKey);
    await screenshot('04-created');

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
    const withWindow = api.filter((run) => run.stats.email_events !== undefined).length;
    expect(withWindow).toBeGreaterThan(0);
    expect(
      await page.locator('svg[aria-label="Lag per dataset"] g[data-dataset="email_events"] circle').count(),
    ).toBe(withWindow);

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
      /^email_events \d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
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
  });
});
