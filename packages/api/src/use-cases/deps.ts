import { randomBytes } from 'node:crypto';
import {
  type ArchivedSpan,
  DESTINATION_ID_RE,
  type DestinationView,
  type EventDataset,
  NotFoundError,
} from '@sluice/core';
import type { EndpointPolicyOptions } from '@sluice/sinks';
import type {
  ApiBackfillStore,
  ApiSealer,
  ApiStore,
  ConnectionTester,
  ConnectionTestOutcome,
  ConnectionWarning,
} from '../ports.js';

/** What every use case runs with. Built once per handler by `createApiHandler`. */
export interface UseCaseDeps {
  store: ApiStore;
  sealer: ApiSealer;
  /** Writes the connection-test file, under {@link UseCaseDeps.endpointPolicy}. */
  testConnection: ConnectionTester;
  /** The endpoint rules' options: no allow-list in Lambda, the local bucket's origin in the local runtime. */
  endpointPolicy: EndpointPolicyOptions;
  /** The external ID of a new role destination of a workspace (`externalIdSource`). */
  externalIdOf: (workspaceId: string) => Promise<string>;
  /** Sluice's own AWS account: a `roleArn` there is refused. Absent: none refused (unit tests). */
  ownAccountId?: string;
  /** The most data exports a workspace may have (setting `maxExportsPerWorkspace`). Absent: no limit. */
  maxExportsPerWorkspace?: number;
  /** The clock; injected so tests can pin it. */
  now: () => Date;
  /** New destination ids, `exp_` and 24 hex digits by default. */
  newId: () => string;
  /** Backfills; absent in API set-ups that do not serve them (their routes then fail). */
  backfills?: ApiBackfillStore;
  /** How long the event log keeps rows: a backfill cannot start before `now` minus this, unless archived. */
  eventRetentionMs: number;
  /** What the event archive holds of a workspace's dataset (absent: no archive, the hot log only). */
  archiveCoverage?: { get(workspaceId: string, dataset: EventDataset): Promise<ArchivedSpan | undefined> };
}

/** A new destination id: `exp_` followed by 96 random bits in hex. */
export function newDestinationId(): string {
  return `exp_${randomBytes(12).toString('hex')}`;
}

/** Reads the caller's destination, or throws `NotFoundError` (also for another workspace's id). */
export async function loadDestination(
  deps: UseCaseDeps,
  workspaceId: string,
  id: string,
): Promise<DestinationView> {
  if (!DESTINATION_ID_RE.test(id)) throw new NotFoundError();
  const destination = await deps.store.getDestination(workspaceId, id);
  if (destination === undefined) throw new NotFoundError();
  return destination;
}

/** Checks an id's shape before any read; see {@link loadDestination}. */
export function assertDestinationId(id: string): void {
  if (!DESTINATION_ID_RE.test(id)) throw new NotFoundError();
}

/**
 * The `warnings` a response carries after a connection test: `{ warnings }` when the test found any, `{}`
 * otherwise (the reference's response shape, unchanged).
 */
export function warningsOf(outcome: ConnectionTestOutcome | undefined): { warnings?: ConnectionWarning[] } {
  const warnings = outcome?.warnings ?? [];
  return warnings.length > 0 ? { warnings: warnings.map(({ code, message }) => ({ code, message })) } : {};
}
