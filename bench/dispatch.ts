import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { CONTROL_TABLE } from '@sluice/core';
import { printBenchResult, runBenchChild } from './child.js';

/**
 * Dispatch at scale: `destinations` queued destinations, all due, dispatched by ONE execution of the
 * synthesized Dispatch definition (aws-local-stepfunctions, the real dispatch handler, DynamoDB Local), the
 * starts counted instead of run. The reference, in the same child: the same pages examined by calling
 * `findDueDestinations` in a loop with no state machine, on a second table seeded alike. The child has its
 * own control table in `SLUICE_CONTROL_TABLE` (the dispatch function reads it at load).
 */

/** What the child measured. */
export interface DispatchFigures {
  destinations: number;
  /** StartExportRun calls of the one execution. */
  started: number;
  /** Destinations started more than once (expected: 0). */
  startedTwice: number;
  /** Destinations never started (expected: 0). */
  missed: number;
  /** FindDueDestinations + FindMoreDueDestinations calls. */
  pages: number;
  largestStateBytes: number;
  ms: number;
  destinationsPerSecond: number;
  /** The reference: the same examination without the state machine. */
  directMs: number;
  directDestinationsPerSecond: number;
}

/** What the child is told (as JSON in `SLUICE_BENCH_DISPATCH_CHILD`). */
interface ChildTask {
  /** Destinations seeded in each table (the Dispatch table holds nothing else). */
  destinations: number;
  /** The table the reference reads (the Dispatch one is `SLUICE_CONTROL_TABLE`). */
  directTable: string;
}

async function child(task: ChildTask): Promise<void> {
  const [{ localWorkflows }, control, engine, eventlog] = await Promise.all([
    import('@sluice/local'),
    import('@sluice/control'),
    import('@sluice/engine'),
    import('@sluice/eventlog'),
  ]);
  const counts = new Map<string, number>();
  let pages = 0;
  const workflows = await localWorkflows({
    intercept: async (state, input, invoke) => {
      if (state.startsWith('Find')) pages += 1;
      return invoke(input);
    },
  });
  // The reference first (so the warm-up of DynamoDB Local's JVM is not counted against the Dispatch):
  // the engine's pages in a loop, no Step Functions, the same page size and concurrency.
  const tableName = task.directTable;
  const deps = {
    controlStore: new control.ControlStore({ tableName }),
    leases: new control.LeaseStore({ tableName }),
    cursors: new control.CursorStore({ tableName }),
    runs: new control.RunStore({ tableName }),
    runState: new control.RunStateStore({ tableName }),
    dueIndex: new control.DueIndex({ tableName }),
    backfills: new control.BackfillStore({ tableName }),
    eventSource: new eventlog.EventLogReader({
      eventsTable: process.env.SLUICE_EVENTS_TABLE as string,
      subscribersTable: process.env.SLUICE_SUBSCRIBERS_TABLE as string,
    }),
  };
  const directStarted = Date.now();
  let next: string | undefined;
  const now = new Date().toISOString();
  do {
    const page = await engine.findDueDestinations({ now, next }, deps);
    next = page.next;
  } while (next !== undefined);
  const directMs = Date.now() - directStarted;

  const started = Date.now();
  const outcome = await workflows.runDispatch({
    onStart: (input) => {
      const id = String((input as { destinationId?: unknown }).destinationId);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    },
  });
  const ms = Date.now() - started;

  const figures: DispatchFigures = {
    destinations: task.destinations,
    started: outcome.started,
    startedTwice: [...counts.values()].filter((n) => n > 1).length,
    missed: task.destinations - counts.size,
    pages,
    largestStateBytes: outcome.largestStateBytes,
    ms,
    destinationsPerSecond: (task.destinations / ms) * 1000,
    directMs,
    directDestinationsPerSecond: (task.destinations / directMs) * 1000,
  };
  printBenchResult(figures);
}

function runChild(task: ChildTask, controlTable: string): Promise<DispatchFigures> {
  const script = fileURLToPath(import.meta.url);
  return runBenchChild<DispatchFigures>(
    'dispatch bench child',
    process.execPath,
    ['--openssl-legacy-provider', '--import', 'tsx', script],
    {
      SLUICE_CONTROL_TABLE: controlTable,
      SLUICE_BENCH_DISPATCH_CHILD: JSON.stringify(task),
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
  );
}

/** {@link DispatchFigures} and how long seeding took. */
export interface DispatchBenchResult extends DispatchFigures {
  seedMs: number;
}

/**
 * Seeds two control tables of `destinations` queued destinations each (BatchWriteItem into the in-memory
 * DynamoDB Local) and runs the child. Needs the local services' environment.
 */
export async function runDispatchBench(destinations: number): Promise<DispatchBenchResult> {
  const [{ createLocalTables, localDynamoDbClient }, { createDocumentClient }, seeding] = await Promise.all([
    import('@sluice/devstack'),
    import('@sluice/control'),
    import('../test/helpers/seed-destinations.js'),
  ]);
  const suffix = randomBytes(4).toString('hex');
  const dispatchTable = `sluice-control-bench-dispatch-${suffix}`;
  const directTable = `sluice-control-bench-direct-${suffix}`;
  const dynamo = localDynamoDbClient(process.env.AWS_ENDPOINT_URL_DYNAMODB as string);
  await createLocalTables(dynamo, [
    { name: dispatchTable, spec: CONTROL_TABLE },
    { name: directTable, spec: CONTROL_TABLE },
  ]);
  dynamo.destroy();
  const client = createDocumentClient();
  const dueAt = new Date(Date.now() - 60_000);
  const workspaceId = `ws_bench_${suffix}`;
  const directWorkspaceId = `ws_bench_direct_${suffix}`;
  const seedStarted = Date.now();
  await seeding.seedDestinations(
    client,
    dispatchTable,
    seeding.queuedDestinations(destinations, workspaceId, dueAt),
  );
  await seeding.seedDestinations(
    client,
    directTable,
    seeding.queuedDestinations(destinations, directWorkspaceId, dueAt),
  );
  const seedMs = Date.now() - seedStarted;
  client.destroy();
  const figures = await runChild({ destinations, directTable }, dispatchTable);
  return { ...figures, seedMs };
}

if (
  process.env.SLUICE_BENCH_DISPATCH_CHILD !== undefined &&
  process.argv[1] === fileURLToPath(import.meta.url)
) {
  child(JSON.parse(process.env.SLUICE_BENCH_DISPATCH_CHILD) as ChildTask).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
