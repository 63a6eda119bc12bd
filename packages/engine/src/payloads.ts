import type { EventDataset } from '@sluice/core';
import type { StepFunctionsError } from './errors.js';

/**
 * The payloads of the ExportRun and Dispatch state machines (docs: the workflow contract). Ids, windows
 * and counts only: never a row, never a secret.
 */

/** What started a run. */
export type RunTrigger = 'schedule' | 'manual';

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
}

/** One unit of work of the Map: an event window or the day's subscriber snapshot. */
export type WorkItem =
  | { dataset: EventDataset; kind: 'events'; fromMs: number; toMs: number }
  | { dataset: 'subscribers'; kind: 'snapshot'; date: string };

/** Why a run or a window was skipped or stopped. */
export type SkipReason = 'lease_held' | 'deleted' | 'paused' | 'lease_lost';
export type StopReason = 'paused' | 'deleted' | 'config_changed';

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

/** Output of {@link writeWindow}. */
export interface WindowResult {
  dataset: WorkItem['dataset'];
  kind: WorkItem['kind'];
  fromMs?: number;
  toMs?: number;
  date?: string;
  status: 'written' | 'stopped';
  stopReason?: StopReason;
  rows: number;
  files: number;
  bytes: number;
}

/** Input of {@link commitRun}. */
export interface CommitInput {
  action?: 'commit';
  run: RunRef;
  results: WindowResult[];
}

/** Output of {@link commitRun}. */
export interface CommitOutput {
  status: 'succeeded' | 'stopped';
  runAgain: boolean;
}

/** Input of {@link recordFailure}: the Catch's payload. */
export interface RecordFailureInput {
  action?: 'recordFailure';
  workspaceId: string;
  destinationId: string;
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
