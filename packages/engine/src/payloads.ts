import type { EventDataset, FileFormat, IncludedOrganization, Layout } from '@sluice/core';
import type { StepFunctionsError } from './errors.js';

/**
 * The payloads of the ExportRun and Dispatch state machines (docs: the workflow contract). Ids, windows
 * and counts only: never a row, never a secret.
 */

/** What started a run: the schedule, a manual run, or a backfill (which never moves the cursors). */
export type RunTrigger = 'schedule' | 'manual' | 'backfill';

/** Input of {@link claimAndPlan}: the ExportRun execution input plus the execution id. */
export interface ClaimAndPlanInput {
  action?: 'claimAndPlan';
  workspaceId: string;
  destinationId: string;
  trigger: RunTrigger;
  /** `$$.Execution.Id`: the run id is derived from it, so a retried task claims as the same run. */
  executionId: string;
}

/** The run a payload belongs to, with the lease token that fences its cursor writes. */
export interface RunRef {
  workspaceId: string;
  destinationId: string;
  runId: string;
  startedAt: string;
  leaseToken: string;
  /** The destination's `configVersion` at claim: writers stop when it changes. */
  configVersion: number;
  /**
   * Epoch ms after which writers start no further file (they finish the one in flight and return where
   * to continue): the run's time budget, well inside the 5 minutes of an Express execution.
   */
  deadlineMs: number;
  /**
   * Set on a backfill's run: its writers save progress on the backfill (fenced by its slot token, in
   * `leaseToken`) and count files into it, never into the regular cursors or runs.
   */
  backfillId?: string;
  /**
   * A backfill's run: the windows its plan skipped, per dataset, through `throughMs`: those that lost rows to
   * the event log's retention (never rewritten with fewer rows; reported). Commit moves the backfill over them.
   */
  backfillSkipped?: BackfillSkip[];
  /**
   * Set when the export's schema objects are out of date (`schemaKeyOf` differs from `schemaWritten`): the
   * first item of each dataset writes them, and a Commit with no failed item records this key.
   */
  schemaKey?: string;
}

/** See {@link RunRef.backfillSkipped}. */
export interface BackfillSkip {
  dataset: EventDataset;
  throughMs: number;
  /** `(fromMs, toMs]` of recorded time not exported because its windows lost rows. */
  expired?: { fromMs: number; toMs: number };
}

/**
 * One unit of work of the Map, one writer invocation: a span of consecutive event windows (`@sluice/core`
 * `Span`: cut at every `stepMs` of the UTC grid, or one window when `stepMs` is absent) or the day's
 * subscriber snapshot. `format` is the one the windows were planned with (JSON lines when absent: an item
 * planned before formats existed).
 */
export type WorkItem =
  | {
      dataset: EventDataset;
      kind: 'events';
      fromMs: number;
      toMs: number;
      stepMs?: number;
      /** The grid's shift (`Span.phaseMs`); absent: 0. */
      phaseMs?: number;
      format?: FileFormat;
      /** The layout the windows were planned with; absent: `date`. */
      layout?: Layout;
      /**
       * An export that includes child organisations: the windows' files are partitioned by organisation.
       * The payload never lists the organisations (an export may include hundreds of children, and a state
       * is at most 256 KB): the writer reads them from where the plan keeps them (`withPlannedOrganizations`:
       * the cursor's planned span, or a backfill's link history). Absent: the workspace's own rows,
       * unpartitioned.
       */
      partitioned?: true;
      /**
       * Never in a payload: set by the writer from `partitioned` (the organisations the windows read, the
       * export's own workspace among them, each with its exact start and stop inside the span, as planned:
       * `@sluice/core` `Span.organizations`).
       */
      organizations?: IncludedOrganization[];
      /** Write the dataset's schema objects (`_sluice/schema/<dataset>/`) before the windows. */
      schema?: true;
      /**
       * The export's (or the dataset's) exact start, or the instant through which rows expired (reported),
       * when it lies inside the span's first window: rows recorded at or before it are not exported, and that
       * window's files keep the grid window's name.
       */
      startMs?: number;
    }
  | { dataset: 'subscribers'; kind: 'snapshot'; date: string; format?: FileFormat; schema?: true };

/** Why a run or a window was skipped or stopped. */
export type SkipReason = 'lease_held' | 'deleted' | 'paused' | 'lease_lost' | 'nothing_due';
export type StopReason = 'paused' | 'deleted' | 'config_changed' | 'lease_lost' | 'cancelled';

/** Output of {@link claimAndPlan}. */
export interface ClaimAndPlanOutput {
  outcome: 'planned' | 'skipped';
  reason?: SkipReason;
  run?: RunRef;
  items?: WorkItem[];
}

/** Input of {@link writeWindow}: the Map's ItemSelector. */
export interface WriteWindowInput {
  run: RunRef;
  item: WorkItem;
}

/**
 * Output of {@link writeWindow}:
 * - `written`: every window of the span (or the snapshot) is complete;
 * - `partial`: the run's time ran out; the windows through `doneThroughMs` are complete and the one after
 *   it continues, from its next file, in the next invocation (its progress is stored);
 * - `stopped`: the destination was paused, deleted or moved, or another run took over.
 * `rows`, `files` and `bytes` count what this invocation wrote.
 */
export interface WindowResult {
  dataset: WorkItem['dataset'];
  kind: WorkItem['kind'];
  fromMs?: number;
  toMs?: number;
  date?: string;
  status: 'written' | 'partial' | 'stopped';
  stopReason?: StopReason;
  /** Events: every window of the span ending at or before this is complete. */
  doneThroughMs?: number;
  rows: number;
  files: number;
  bytes: number;
  /** How long this invocation took (ms); absent from results of writers before it was reported. */
  durationMs?: number;
}

/** A Map item whose writer failed after its retries: the ExportRun's per-item Catch makes this its result. */
export interface FailedItemResult {
  status: 'failed';
  item: WorkItem;
  error: StepFunctionsError;
}

/** One result of the Map. */
export type ItemResult = WindowResult | FailedItemResult;

/** Input of {@link commitRun}. */
export interface CommitInput {
  action?: 'commit';
  run: RunRef;
  results: ItemResult[];
}

/** Output of {@link commitRun}. */
export interface CommitOutput {
  status: 'succeeded' | 'stopped' | 'failed';
  runAgain: boolean;
}

/** Input of {@link recordFailure}: the Catch's payload. */
export interface RecordFailureInput {
  action?: 'recordFailure';
  workspaceId: string;
  destinationId: string;
  /** The execution's trigger: a backfill's claim failure is never recorded on the destination. */
  trigger?: RunTrigger;
  run?: RunRef;
  error?: StepFunctionsError;
}

/** Output of {@link recordFailure}. */
export interface RecordFailureOutput {
  message: string;
  consecutiveFailures: number;
  nextRunAt: string | null;
}

/** Input of {@link findDueDestinations}. */
export interface FindDueInput {
  action?: 'findDue';
  /** `$$.Execution.StartTime` (ISO): the same for every page of one execution. */
  now?: string;
  /** The `next` of the page before; absent for the first page. */
  next?: string;
}

/** One ExportRun to start. */
export interface DueDestination {
  workspaceId: string;
  destinationId: string;
  trigger: RunTrigger;
}

/** Output of {@link findDueDestinations}: one page. */
export interface FindDueOutput {
  destinations: DueDestination[];
  /** Where the next page starts (an opaque token, ids and a time); absent on the last page. */
  next?: string;
}
