import { randomUUID } from 'node:crypto';
import {
  BackfillStore,
  ControlStore,
  CursorStore,
  LeaseStore,
  OrganizationStore,
  RunStateStore,
  RunStore,
} from '@sluice/control';
import {
  DAY_MS,
  type Destination,
  type DestinationView,
  type NewDestinationInput,
  newDestination,
} from '@sluice/core';
import { EventLogReader } from '@sluice/eventlog';
import { SecretSealer } from '@sluice/secrets';
import { controlTable, eventTables, kmsKey, localBucketOrigins } from '../../../test/helpers/tables.js';
import { commitRun } from './commit.js';
import { type BucketWriterFactory, createBucketWriterFactory, type EngineDeps } from './deps.js';
import { LOCAL_BUCKET, LOCAL_S3_ENDPOINT } from './local-bucket.test-support.js';
import type { ItemResult, RunRef, RunTrigger, WorkItem } from './payloads.js';
import { claimAndPlan } from './plan.js';
import { writeWindow } from './write.js';

/**
 * The engine suites' one harness against the local services: the stores on DynamoDB Local, the production
 * writer on s3rver (the local bucket), the event log as it is at a given clock, and ExportRuns run in-process
 * (claim, every writer, commit) as the workflow would.
 */

/** What a suite fixes once: its workspace, the folder of its exports and its clock's default. */
export interface EngineHarnessOptions {
  workspaceId: string;
  /** Exports of the suite write under `<folder>/<exportId>` in the local bucket. */
  folder: string;
  /** The clock of {@link EngineHarness.deps} when none is given. @default the time of the call */
  nowMs?: number;
  /** @default 35 days */
  eventRetentionMs?: number;
  /** @default 180 s */
  runBudgetMs?: number;
}

/** A suite's destination: what differs from an access key destination on the local bucket. */
export type HarnessDestination = Partial<
  Omit<NewDestinationInput, 'workspaceId' | 'id' | 'secret' | 'accessKeyId' | 'role' | 'now'>
> & {
  /** When it was created (`now` of the create). @default `startFrom` */
  createdMs?: number;
  /** Stored fields set after the create (`nextRunAt`, `childOrganizationsAddedAt`, ...). */
  stored?: Partial<Destination>;
};

/** How {@link EngineHarness.runOnce} runs. */
export interface HarnessRun {
  nowMs?: number;
  overrides?: Partial<EngineDeps>;
  trigger?: RunTrigger;
  /**
   * A writer's error becomes the failed item the workflow's Map Catch records (with the error's name), so
   * Commit sees it. @default false: the error is thrown
   */
  catchWriterErrors?: boolean;
}

/** One ExportRun in-process. */
export interface HarnessRunResult {
  run: RunRef;
  items: WorkItem[];
  results: ItemResult[];
  committed: Awaited<ReturnType<typeof commitRun>>;
}

export interface EngineHarness {
  readonly workspaceId: string;
  readonly controlStore: ControlStore;
  readonly sealer: SecretSealer;
  readonly backfills: BackfillStore;
  /** The production writer, with the local s3rver allow-listed as the local runtime does. */
  readonly bucketWriterFactory: BucketWriterFactory;
  /** Every engine dependency on the local services at `nowMs`, then `overrides`. */
  deps(nowMs?: number, overrides?: Partial<EngineDeps>): Partial<EngineDeps>;
  /** A destination of the suite (an access key on the local bucket), not stored. */
  destinationOf(input?: HarnessDestination): Promise<Destination>;
  /** A destination of the suite, stored. */
  createDestination(input?: HarnessDestination): Promise<DestinationView>;
  /** One ExportRun (claim, every writer in turn, commit); undefined when the claim plans nothing. */
  runOnce(destination: Pick<Destination, 'id'>, run?: HarnessRun): Promise<HarnessRunResult | undefined>;
  /** Runs until the export (or the backfill) has nothing left to do now, as Dispatch would (at most `maxRuns`). */
  runUntilDone(
    destination: Pick<Destination, 'id'>,
    run?: HarnessRun & { maxRuns?: number },
  ): Promise<HarnessRunResult[]>;
}

export function engineHarness(options: EngineHarnessOptions): EngineHarness {
  const { workspaceId, folder } = options;
  const controlStore = new ControlStore(controlTable);
  const sealer = new SecretSealer(kmsKey);
  const backfills = new BackfillStore(controlTable);
  const organizations = new OrganizationStore(controlTable);
  const bucketWriterFactory = createBucketWriterFactory({ allowedEndpoints: localBucketOrigins });

  const deps = (
    nowMs = options.nowMs ?? Date.now(),
    overrides: Partial<EngineDeps> = {},
  ): Partial<EngineDeps> => ({
    controlStore,
    cursors: new CursorStore(controlTable),
    leases: new LeaseStore(controlTable),
    runs: new RunStore(controlTable),
    runState: new RunStateStore(controlTable),
    backfills,
    sealer,
    organizations,
    // The event log as it is at `nowMs`: rows older than their retention are gone.
    eventSource: new EventLogReader({ ...eventTables, now: () => nowMs }),
    bucketWriterFactory,
    metrics: { recordRun: () => undefined, recordExpiredRows: () => undefined },
    settings: {
      runBudgetMs: options.runBudgetMs ?? 180_000,
      eventRetentionMs: options.eventRetentionMs ?? 35 * DAY_MS,
    },
    now: () => new Date(nowMs),
    ...overrides,
  });

  const destinationOf = async (input: HarnessDestination = {}): Promise<Destination> => {
    const { createdMs, stored, ...rest } = input;
    // A field given as undefined keeps its default.
    const given = Object.fromEntries(
      Object.entries(rest).filter(([, value]) => value !== undefined),
    ) as typeof rest;
    const id = `exp_${randomUUID().replaceAll('-', '')}`;
    const startFrom = given.startFrom ?? new Date(createdMs ?? options.nowMs ?? Date.now()).toISOString();
    return {
      ...newDestination({
        name: 'Engine test',
        provider: 's3',
        bucket: LOCAL_BUCKET,
        region: 'us-east-1',
        endpoint: LOCAL_S3_ENDPOINT,
        pathPrefix: `${folder}/${id}`,
        datasets: ['email_events'],
        frequency: 'hourly',
        ...given,
        workspaceId,
        id,
        accessKeyId: 'S3RVER',
        secret: await sealer.seal('S3RVER', { workspaceId, destinationId: id }),
        startFrom,
        now: new Date(createdMs ?? Date.parse(startFrom)),
      }),
      status: 'idle',
      manualRunQueued: false,
      ...stored,
    };
  };

  const runOnce = async (
    destination: Pick<Destination, 'id'>,
    run: HarnessRun = {},
  ): Promise<HarnessRunResult | undefined> => {
    const { nowMs, overrides, trigger = 'schedule', catchWriterErrors = false } = run;
    const planned = await claimAndPlan(
      { workspaceId, destinationId: destination.id, trigger, executionId: randomUUID() },
      deps(nowMs, overrides),
    );
    if (planned.outcome !== 'planned' || planned.run === undefined) return undefined;
    const items = planned.items ?? [];
    const results: ItemResult[] = [];
    for (const item of items) {
      const written = writeWindow({ run: planned.run, item }, deps(nowMs, overrides));
      results.push(
        await (catchWriterErrors
          ? written.catch((error: Error) => ({
              status: 'failed' as const,
              item,
              error: {
                Error: error.name,
                Cause: JSON.stringify({ errorType: error.name, errorMessage: error.message }),
              },
            }))
          : written),
      );
    }
    const committed = await commitRun({ run: planned.run, results }, deps(nowMs, overrides));
    return { run: planned.run, items, results, committed };
  };

  return {
    workspaceId,
    controlStore,
    sealer,
    backfills,
    bucketWriterFactory,
    deps,
    destinationOf,
    createDestination: async (input) => controlStore.createDestination(await destinationOf(input)),
    runOnce,
    runUntilDone: async (destination, run = {}) => {
      const runs: HarnessRunResult[] = [];
      for (let i = 0; i < (run.maxRuns ?? 40); i++) {
        const once = await runOnce(destination, run);
        if (once === undefined) break;
        runs.push(once);
        if (!once.committed.runAgain) break;
      }
      return runs;
    },
  };
}
