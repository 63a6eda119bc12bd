import { App, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type CloudFormationTemplate,
  definitionsFromTemplates,
  type Json,
  type LambdaHandler,
  LocalWorkflows,
  startScheduler,
  taskStates,
  type WorkflowDefinitions,
} from '@sluice/devstack';
import { DispatchWorkflow } from '../../infra/constructs/dispatch-workflow.js';
import { ExportRunWorkflow } from '../../infra/constructs/export-run-workflow.js';

/** The two constructs in a bare stack, synthesized: the same path as the app's template. */
function synthesizeWorkflows(): WorkflowDefinitions {
  const app = new App();
  const stack = new Stack(app, 'Workflows', { env: { account: '111111111111', region: 'us-east-1' } });
  const fn = (id: string) =>
    new lambda.Function(stack, id, {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => null'),
    });
  const exportRun = new ExportRunWorkflow(stack, 'ExportRun', {
    runControlFunction: fn('RunControl'),
    writerFunction: fn('Writer'),
    writerConcurrency: 3,
  });
  new DispatchWorkflow(stack, 'Dispatch', {
    dispatchFunction: fn('DispatchFn'),
    exportRun: exportRun.stateMachine,
  });
  const assembly = app.synth();
  return definitionsFromTemplates(assembly.stacks.map((s) => s.template as CloudFormationTemplate));
}

const RUN = {
  workspaceId: 'ws_1',
  destinationId: 'dst_1',
  runId: 'run_1',
  startedAt: '2026-01-01T00:00:00.000Z',
  leaseToken: 'tok',
  configVersion: 1,
};

/** A run-control stub recording its calls; `fail` makes one action throw. */
function runControlStub(calls: Json[], fail: { action?: string; error?: Error } = {}): LambdaHandler {
  return async (event) => {
    const payload = event as { action: string; items?: unknown };
    calls.push(event as Json);
    if (payload.action === fail.action) throw fail.error;
    if (payload.action === 'claimAndPlan') {
      return {
        outcome: 'planned',
        run: RUN,
        items: [
          { dataset: 'email_events', kind: 'events', fromMs: 0, toMs: 10 },
          { dataset: 'email_events', kind: 'events', fromMs: 10, toMs: 20 },
          { dataset: 'subscribers', kind: 'snapshot', date: '2026-01-01' },
        ],
      };
    }
    if (payload.action === 'commit') {
      const results = (event as { results?: { status?: string }[] }).results ?? [];
      return { status: results.some((r) => r.status === 'failed') ? 'failed' : 'succeeded', runAgain: false };
    }
    return { recorded: true };
  };
}

const writerStub: LambdaHandler = async (event) => {
  const { item } = event as { item: Record<string, unknown> };
  return { ...item, status: 'written', rows: 5, files: 1, bytes: 100 };
};

describe('local Step Functions runner on the synthesized workflow definitions', () => {
  let definitions: WorkflowDefinitions;
  beforeAll(() => {
    definitions = synthesizeWorkflows();
  });

  it('keeps to what aws-local-stepfunctions runs: JSONPath, inline Map, direct Lambda ARNs', () => {
    const text = JSON.stringify(definitions);
    expect(text).not.toContain('JSONata');
    expect(text).not.toContain('"Assign"');
    expect(text).not.toContain('DISTRIBUTED');
    expect([...taskStates(definitions.exportRun).keys()].sort()).toEqual([
      'ClaimAndPlan',
      'Commit',
      'RecordClaimFailure',
      'RecordFailure',
      'WriteWindow',
    ]);
    expect(taskStates(definitions.exportRun).get('WriteWindow')).toMatch(
      /^arn:aws:lambda:.*:function:Writer/,
    );
    expect(taskStates(definitions.dispatch).get('StartExportRun')).toBe(
      'arn:aws:states:::states:startExecution',
    );
  });

  it('runs ClaimAndPlan, the Map of WriteWindow and Commit with ids and windows only', async () => {
    // Prepare
    const calls: Json[] = [];
    const writes: Json[] = [];
    const workflows = await LocalWorkflows.create({
      definitions,
      functions: {
        runControl: runControlStub(calls),
        writer: async (event, context) => {
          writes.push(event as Json);
          expect(context.getRemainingTimeInMillis()).toBeGreaterThan(0);
          return writerStub(event, context);
        },
        dispatch: async () => ({ destinations: [] }),
      },
    });
    // Act
    const outcome = await workflows.runExportRun({
      workspaceId: 'ws_1',
      destinationId: 'dst_1',
      trigger: 'manual',
    });
    // Assess
    expect(outcome).toMatchObject({
      status: 'succeeded',
      items: 3,
      rows: 15,
      files: 3,
      bytes: 300,
      runAgain: false,
    });
    expect(calls[0]).toEqual({
      action: 'claimAndPlan',
      workspaceId: 'ws_1',
      destinationId: 'dst_1',
      trigger: 'manual',
      executionId: outcome.executionArn,
    });
    expect(writes).toHaveLength(3);
    expect(writes).toContainEqual({
      run: RUN,
      item: { dataset: 'subscribers', kind: 'snapshot', date: '2026-01-01' },
    });
    const commit = calls.find((c) => (c as { action: string }).action === 'commit') as {
      run: Json;
      results: Json[];
    };
    expect(commit.run).toEqual(RUN);
    expect(commit.results).toHaveLength(3);
    expect(commit.results[0]).toMatchObject({
      dataset: 'email_events',
      fromMs: 0,
      toMs: 10,
      status: 'written',
    });
  });

  it('skips the run when ClaimAndPlan says skipped', async () => {
    const workflows = await LocalWorkflows.create({
      definitions,
      functions: {
        runControl: async () => ({ outcome: 'skipped', reason: 'lease_held' }),
        writer: writerStub,
        dispatch: async () => ({ destinations: [] }),
      },
    });
    const outcome = await workflows.runExportRun({
      workspaceId: 'w',
      destinationId: 'd',
      trigger: 'schedule',
    });
    expect(outcome).toMatchObject({ status: 'skipped', reason: 'lease_held', items: 0 });
  });

  it('retries a transient writer error; a permanent one becomes the result of its item, and Commit records it', async () => {
    // Prepare: the first write throttled once, the snapshot's bucket missing.
    const calls: Json[] = [];
    const attempts = new Map<string, number>();
    const logs: string[] = [];
    const workflows = await LocalWorkflows.create({
      definitions,
      retryIntervalOverrides: { WriteWindow: 0 },
      log: (line) => logs.push(line),
      functions: {
        runControl: runControlStub(calls),
        writer: async (event, context) => {
          const { item } = event as { item: { dataset: string; fromMs?: number } };
          const key = `${item.dataset}:${item.fromMs}`;
          const n = (attempts.get(key) ?? 0) + 1;
          attempts.set(key, n);
          if (key === 'email_events:0' && n === 1)
            throw Object.assign(new Error('slow down'), { name: 'BucketThrottled' });
          if (item.dataset === 'subscribers') {
            throw Object.assign(new Error('The bucket "b" does not exist.'), { name: 'BucketNotFound' });
          }
          return writerStub(event, context);
        },
        dispatch: async () => ({ destinations: [] }),
      },
    });
    // Act
    const outcome = await workflows.runExportRun({
      workspaceId: 'ws_1',
      destinationId: 'dst_1',
      trigger: 'schedule',
    });
    // Assess
    expect(attempts.get('email_events:0')).toBe(2);
    expect(attempts.get('subscribers:undefined')).toBe(1);
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.Error).toBe('BucketNotFound');
    // The other items were written; the failed one is a result; Commit gets them all, RecordFailure is not called.
    const commit = calls.find((c) => (c as { action: string }).action === 'commit') as {
      run: Json;
      results: { status: string; item?: Json; error?: { Error: string; Cause: string } }[];
    };
    expect(commit.run).toEqual(RUN);
    expect(commit.results.map((r) => r.status)).toEqual(['written', 'written', 'failed']);
    const failed = commit.results[2]!;
    expect(failed.item).toEqual({ dataset: 'subscribers', kind: 'snapshot', date: '2026-01-01' });
    expect(failed.error?.Error).toBe('BucketNotFound');
    expect(JSON.parse(failed.error!.Cause)).toEqual({
      errorType: 'BucketNotFound',
      errorMessage: 'The bucket "b" does not exist.',
    });
    expect(calls.some((c) => (c as { action: string }).action === 'recordFailure')).toBe(false);
    expect(logs.some((line) => line.includes('BucketNotFound') && line.includes('does not exist'))).toBe(
      true,
    );
  });

  it('records a failed claim without a run', async () => {
    const calls: Json[] = [];
    const workflows = await LocalWorkflows.create({
      definitions,
      functions: {
        runControl: runControlStub(calls, { action: 'claimAndPlan', error: new TypeError('boom') }),
        writer: writerStub,
        dispatch: async () => ({ destinations: [] }),
      },
    });
    const outcome = await workflows.runExportRun({
      workspaceId: 'ws_1',
      destinationId: 'dst_1',
      trigger: 'schedule',
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.Error).toBe('TypeError');
    expect(calls.at(-1)).toMatchObject({
      action: 'recordFailure',
      workspaceId: 'ws_1',
      destinationId: 'dst_1',
    });
    expect(calls.at(-1)).not.toHaveProperty('run');
  });

  it('Dispatch starts one ExportRun per due destination and waits for them', async () => {
    const claimed: string[] = [];
    const workflows = await LocalWorkflows.create({
      definitions,
      functions: {
        runControl: async (event, context) => {
          const payload = event as { action: string; destinationId: string };
          if (payload.action === 'claimAndPlan') claimed.push(payload.destinationId);
          return runControlStub([])(event, context);
        },
        writer: writerStub,
        dispatch: async (event) => {
          expect(event).toMatchObject({ action: 'findDue' });
          expect(Number.isNaN(Date.parse((event as { now: string }).now))).toBe(false);
          return {
            destinations: [
              { workspaceId: 'w', destinationId: 'a', trigger: 'schedule' },
              { workspaceId: 'w', destinationId: 'b', trigger: 'manual' },
            ],
          };
        },
      },
    });
    const outcome = await workflows.runDispatch();
    expect(outcome.started).toBe(2);
    expect(outcome.runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(claimed.sort()).toEqual(['a', 'b']);
  });

  it('Dispatch pages: FindMoreDueDestinations with each next token until none, the same now, every start counted', async () => {
    // Prepare: three pages, the last without next
    const calls: { now?: string; next?: string }[] = [];
    const pages: Record<string, { destinations: Json[]; next?: string }> = {
      first: { destinations: [{ workspaceId: 'w', destinationId: 'a', trigger: 'schedule' }], next: 't1' },
      t1: {
        destinations: [
          { workspaceId: 'w', destinationId: 'b', trigger: 'manual' },
          { workspaceId: 'w', destinationId: 'c', trigger: 'schedule' },
        ],
        next: 't2',
      },
      t2: { destinations: [] },
    };
    const startedIds: string[] = [];
    const workflows = await LocalWorkflows.create({
      definitions,
      functions: {
        runControl: runControlStub([]),
        writer: writerStub,
        dispatch: async (event) => {
          const { now, next } = event as { now?: string; next?: string };
          calls.push({ now, next });
          return pages[next ?? 'first'] as unknown as Json;
        },
      },
    });
    // Act
    const outcome = await workflows.runDispatch({
      onStart: (input) => {
        startedIds.push((input as { destinationId: string }).destinationId);
      },
    });
    // Assess
    expect(calls.map((c) => c.next)).toEqual([undefined, 't1', 't2']);
    expect(new Set(calls.map((c) => c.now)).size).toBe(1);
    expect(outcome.started).toBe(3);
    expect(outcome.runs).toEqual([]);
    expect(startedIds.sort()).toEqual(['a', 'b', 'c']);
    expect(outcome.largestStateBytes).toBeGreaterThan(0);
    expect(outcome.largestStateBytes).toBeLessThan(1024);
  });

  it('fails a Dispatch whose page is over 256 KiB, as Step Functions would', async () => {
    const big = Array.from({ length: 600 }, (_, i) => ({
      workspaceId: 'w'.repeat(200),
      destinationId: `${i}`.padStart(200, 'd'),
      trigger: 'schedule',
    }));
    const workflows = await LocalWorkflows.create({
      definitions,
      functions: {
        runControl: runControlStub([]),
        writer: writerStub,
        dispatch: async () => ({ destinations: big }),
      },
    });
    await expect(workflows.runDispatch({ onStart: () => undefined })).rejects.toThrow(/256 KiB/);
  });

  it('refuses a definition whose Task state has no local handler', async () => {
    const broken = structuredClone(definitions);
    const states = broken.exportRun.States as Record<string, { Resource?: string }>;
    states.ClaimAndPlan!.Resource = 'arn:aws:lambda:us-east-1:000000000000:function:Elsewhere';
    await expect(
      LocalWorkflows.create({
        definitions: broken,
        functions: { runControl: writerStub, writer: writerStub, dispatch: writerStub },
      }),
    ).rejects.toThrow(/no local handler for Task state (Commit|RecordFailure|RecordClaimFailure)/);
  });
});

describe('startScheduler', () => {
  it('ticks Dispatch one at a time and reports what the runs wrote', async () => {
    // Prepare: a dispatch that is slow, counting how many run at once.
    let active = 0;
    let most = 0;
    let ticks = 0;
    const lines: string[] = [];
    const workflows = await LocalWorkflows.create({
      definitions: synthesizeWorkflows(),
      functions: {
        runControl: runControlStub([]),
        writer: writerStub,
        dispatch: async () => {
          active += 1;
          most = Math.max(most, active);
          ticks += 1;
          await new Promise((resolve) => setTimeout(resolve, 50));
          active -= 1;
          return { destinations: [{ workspaceId: 'w', destinationId: 'd', trigger: 'schedule' }] };
        },
      },
    });
    const scheduler = startScheduler({
      intervalMs: 3_600_000,
      firstTickMs: 3_600_000,
      workflows,
      log: (l) => lines.push(l),
    });
    // Act
    const [a, b] = await Promise.all([scheduler.tick(), scheduler.tick()]);
    const c = await scheduler.tick();
    await scheduler.stop();
    // Assess
    expect(a).toBe(b);
    expect(c?.runs).toHaveLength(1);
    expect(ticks).toBe(2);
    expect(most).toBe(1);
    // One line per run: one run in each of the two ticks.
    const runLine = /^\[export\] w\/d email_events, subscribers: 15 rows, 3 files, 300 B in \d+ ms$/;
    expect(lines.filter((line) => line.startsWith('[export]'))).toEqual([
      expect.stringMatching(runLine),
      expect.stringMatching(runLine),
    ]);
  });
});
