import { ControlStore, CursorStore, LeaseStore, RunStateStore, RunStore } from '@sluice/control';
import {
  claimAndPlan,
  commitRun,
  createBucketWriterFactory,
  type EngineDeps,
  type ItemResult,
  type RunRef,
  type WindowResult,
  type WorkItem,
  writeWindow,
} from '@sluice/engine';
import { EventLogReader, EventLogWriter, generateEvents } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putRunRecord } from '../helpers/seed-runs.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';
import { controlTable, eventTables, kmsKey, localBucketOrigins } from '../helpers/tables.js';

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

/** Creates an export and records `count` finished runs for it, one a minute, `run_0` the oldest. */
async function exportWithRuns(count: number): Promise<string> {
  const created = await ws.client.post('/data-exports', harness.createBody());
  const id = created.body.dataExport!.id as string;
  const base = Date.now() - count * 60_000;
  for (let i = 0; i < count; i++) {
    const startedAt = new Date(base + i * 60_000).toISOString();
    await putRunRecord(ws.workspaceId, id, { id: `run_${i}`, startedAt, rowCount: i });
  }
  return id;
}

describe('GET /data-exports/{id}/runs pages with nextToken', () => {
  it('reads every run once, newest first, page by page; a short page has no nextToken', async () => {
    // Prepare
    const id = await exportWithRuns(5);

    // Act
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const query = token === undefined ? '?limit=2' : `?limit=2&nextToken=${encodeURIComponent(token)}`;
      const page = await ws.client.get(`/data-exports/${id}/runs${query}`);
      expect(page.status).toBe(200);
      pages.push(page.body.runs!.map((run) => run.id as string));
      token = page.body.nextToken;
    } while (token !== undefined && pages.length < 10);

    // Assess
    expect(pages).toEqual([['run_4', 'run_3'], ['run_2', 'run_1'], ['run_0']]);
  });

  it('ends with an empty page when the last page was exactly full', async () => {
    // Prepare
    const id = await exportWithRuns(2);

    // Act
    const first = await ws.client.get(`/data-exports/${id}/runs?limit=2`);
    const second = await ws.client.get(
      `/data-exports/${id}/runs?limit=2&nextToken=${encodeURIComponent(first.body.nextToken!)}`,
    );

    // Assess
    expect(first.body.runs!.map((run) => run.id)).toEqual(['run_1', 'run_0']);
    expect(second.status).toBe(200);
    expect(second.body).toEqual({ success: true, runs: [] });
  });

  it.each([
    ['not base64 JSON', 'garbage!'],
    ['JSON of the wrong shape', Buffer.from('{"s":1,"i":"run_1"}').toString('base64url')],
    ['a run id with a #', Buffer.from('{"s":"2026-12-01T00:00:00.000Z","i":"a#b"}').toString('base64url')],
  ])('refuses a nextToken that is %s with 400 invalid_input on nextToken', async (_, token) => {
    // Prepare
    const id = await exportWithRuns(0);

    // Act
    const response = await ws.client.get(`/data-exports/${id}/runs?nextToken=${encodeURIComponent(token)}`);

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'invalid_input', issues: [{ path: 'nextToken' }] });
  });
});

/** The custom events of the running-run case, in the first two hours of its hourly export. */
const HOUR_MS = 3_600_000;
const PROGRESS_EVENTS = 900;

/** The engine's stores on the local tables, the local bucket allowed: what the run-control and writer functions build. */
const engineDeps: Partial<EngineDeps> = {
  controlStore: new ControlStore(controlTable),
  leases: new LeaseStore(controlTable),
  cursors: new CursorStore(controlTable),
  runs: new RunStore(controlTable),
  runState: new RunStateStore(controlTable),
  sealer: new SecretSealer(kmsKey),
  eventSource: new EventLogReader(eventTables),
  bucketWriterFactory: createBucketWriterFactory({ allowedEndpoints: localBucketOrigins }),
};

describe('GET /data-exports/{id}/runs while a run runs', () => {
  it('shows the running run with the rows its writers have saved so far, then the committed totals', async () => {
    // Prepare: an hourly export from three hours ago, 900 custom events in its first two hours
    const startFromMs = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 3 * HOUR_MS;
    const created = await ws.client.post(
      '/data-exports',
      harness.createBody({
        datasets: ['custom_events'],
        frequency: 'hourly',
        startFrom: new Date(startFromMs).toISOString(),
      }),
    );
    expect(created.status).toBe(201);
    const id = created.body.dataExport!.id as string;
    const events = generateEvents({
      count: PROGRESS_EVENTS,
      workspaceId: ws.workspaceId,
      seed: 3,
      from: startFromMs + 60_000,
      to: startFromMs + 2 * HOUR_MS - 60_000,
      mix: { custom_events: 1 },
    });
    const ingested = await new EventLogWriter({
      ...eventTables,
      explicitRecordedAt: 'unchecked',
    }).ingestEvents(ws.workspaceId, [...events]);
    expect(ingested.accepted).toBe(PROGRESS_EVENTS);
    const planned = await claimAndPlan(
      {
        workspaceId: ws.workspaceId,
        destinationId: id,
        trigger: 'manual',
        executionId: 'run-progress',
      },
      engineDeps,
    );
    if (planned.outcome !== 'planned') throw new Error(`skipped: ${planned.reason}`);
    const run = planned.run as RunRef;
    const items = planned.items as WorkItem[];

    // Act 1: one writer invocation, out of time after its first window
    const first = await writeWindow({ run, item: items[0]! }, engineDeps, { deadlineMs: 0 });
    const whileRunning = await ws.client.get(`/data-exports/${id}/runs`);

    // Assess 1
    expect(first.rows).toBeGreaterThan(0);
    expect(whileRunning.status).toBe(200);
    const running = whileRunning.body.runs!.find((entry) => entry.id === run.runId)!;
    expect(running).toMatchObject({ status: 'running', finishedAt: null });
    expect(running.rowCount).toBeGreaterThan(0);
    expect(running.rowCount).toBeLessThan(PROGRESS_EVENTS);
    expect(running.rowCount).toBe(first.rows);
    expect(running.fileCount).toBe(first.files);
    expect(running.byteCount).toBe(first.bytes);
    expect(running.stats).toEqual({
      custom_events: {
        status: 'running',
        rows: first.rows,
        files: first.files,
        bytes: first.bytes,
        durationMs: 0,
      },
    });

    // Act 2: the rest of the run, then Commit
    const results: ItemResult[] = [];
    for (const item of items) {
      let result: WindowResult;
      do result = await writeWindow({ run, item }, engineDeps);
      while (result.status === 'partial');
      results.push(result);
    }
    await commitRun({ run, results }, engineDeps);
    const afterCommit = await ws.client.get(`/data-exports/${id}/runs`);

    // Assess 2
    const finished = afterCommit.body.runs!.find((entry) => entry.id === run.runId)!;
    expect(finished).toMatchObject({ status: 'succeeded', rowCount: PROGRESS_EVENTS });
    expect(finished.stats.custom_events).toMatchObject({ rows: PROGRESS_EVENTS, files: finished.fileCount });
  }, 120_000);
});
