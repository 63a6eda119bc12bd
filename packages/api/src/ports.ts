import type {
  BucketLocation,
  ChildLink,
  Dataset,
  Destination,
  DestinationView,
  SealedSecret,
} from '@sluice/core';
import type { BackfillStore } from '@sluice/control';

/** The caller, as the authorizer established it. Every use case is keyed by `workspaceId`. */
export interface Caller {
  workspaceId: string;
  role: string;
  scopes: readonly string[];
}

/** One request's use of its API key (`ApiKeyMeter` of `@sluice/control` gives it). */
export type KeyUse =
  | { outcome: 'allowed'; record: { workspaceId: string; role: string; scopes: readonly string[] } }
  /** Malformed, never issued, revoked or deleted. */
  | { outcome: 'unknown' }
  | { outcome: 'limited'; retryAfterSeconds: number };

/** Counts each request against its key's rate limit and reads the key as it is stored now. */
export interface KeyMeter {
  use(apiKey: string): Promise<KeyUse>;
}

/**
 * Fields of a destination that an update may change (the store bumps `configVersion` when asked, and deletes
 * the cursors of `clearCursorsOf` in the same write).
 */
export type DestinationChanges = Partial<
  Pick<
    Destination,
    | 'name'
    | 'bucket'
    | 'region'
    | 'endpoint'
    | 'pathPrefix'
    | 'encryption'
    | 'accessKeyId'
    | 'secret'
    | 'role'
    | 'datasets'
    | 'frequency'
    | 'format'
    | 'compression'
    | 'layout'
    | 'schedule'
    | 'isEnabled'
    | 'nextRunAt'
    | 'datasetStartedAt'
    | 'childOrganizations'
    | 'childOrganizationsAddedAt'
    | 'childOrganizationsRemoved'
    | 'status'
    | 'consecutiveFailures'
    | 'updatedAt'
  >
>;

/** A run as the API returns it (`DataExportRun` of the OpenAPI). */
/** Where a page of runs continues: just below this run (newest first). */
export interface RunsPageToken {
  startedAt: string;
  id: string;
}

export interface DataExportRunView {
  id: string;
  destinationId: string;
  status: 'running' | 'succeeded' | 'failed';
  isManual: boolean;
  rowCount: number;
  fileCount: number;
  byteCount: number;
  stats: Record<string, Record<string, unknown>>;
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
}

/**
 * What the API needs from the control table. `@sluice/control`'s `ControlStore` implements it; the port
 * keeps the use cases testable and says exactly which operations the API performs.
 */
export interface ApiStore {
  createDestination(destination: Destination, options?: { maxPerWorkspace?: number }): Promise<unknown>;
  getDestination(workspaceId: string, id: string): Promise<DestinationView | undefined>;
  listDestinations(workspaceId: string): Promise<DestinationView[]>;
  updateDestination(
    workspaceId: string,
    id: string,
    changes: DestinationChanges,
    options: { bumpConfigVersion?: boolean; now?: Date; clearCursorsOf?: readonly Dataset[] },
  ): Promise<DestinationView | undefined>;
  deleteDestination(workspaceId: string, id: string): Promise<boolean>;
  queueRun(
    workspaceId: string,
    id: string,
    now: Date,
  ): Promise<{ queued: boolean; destination: DestinationView } | undefined>;
  listRuns(
    workspaceId: string,
    id: string,
    options: { limit: number; now: Date; after?: RunsPageToken },
  ): Promise<readonly DataExportRunView[]>;
  /** The workspace (made if missing) with its `uid`, from which new external IDs are derived. */
  ensureWorkspace(workspaceId: string): Promise<{ uid: string }>;
  /** Sluice's external-ID key, sealed; undefined before the first is stored. */
  getSealedExternalIdKey(): Promise<SealedSecret | undefined>;
  /** Stores the sealed key unless one is stored already; true when this one was. */
  putSealedExternalIdKey(sealed: SealedSecret): Promise<boolean>;
  /** The workspace's current child workspaces, oldest link first (`OrganizationStore.listChildren`). */
  listChildren(parentId: string): Promise<ChildLink[]>;
}

/** Encryption context binding a sealed secret to its destination. */
export interface SecretContext {
  workspaceId: string;
  destinationId: string;
}

/** What the API needs from `@sluice/secrets`' `SecretSealer`. */
export interface ApiSealer {
  seal(secret: string, context: SecretContext): Promise<SealedSecret>;
  open(sealed: SealedSecret, context: SecretContext): Promise<string>;
}

/**
 * Credentials of a bucket: an access key in clear (only ever held in memory for the duration of a request) or
 * the role to assume (its keys come from STS inside the test and stay there).
 */
export type BucketCredentials =
  | { accessKeyId: string; secretAccessKey: string }
  | { roleArn: string; externalId: string; sessionName: string };

/**
 * Writes `<prefix>/_sluice/connection-test.json` and throws `ConnectionFailedError` (a person can act on its
 * message) when the write fails, or when the bucket has not answered within `deadlineMs`. `@sluice/sinks`' `testConnection` is the implementation.
 */
/** A warning of a connection test: the destination works, but its bucket deserves a look. */
export interface ConnectionWarning {
  code: string;
  message: string;
}

/** What a connection test found besides success: warnings (absent or empty when none). */
export interface ConnectionTestOutcome {
  warnings?: readonly ConnectionWarning[];
}

export type ConnectionTester = (
  location: BucketLocation,
  credentials: BucketCredentials,
  options: {
    now: () => Date;
    /** Total milliseconds for the test's bucket requests; the API always sets it. */
    deadlineMs?: number;
    /** Origins exempt from the endpoint rules. @default none */
    allowedEndpoints?: ReadonlySet<string>;
    /** False where no AWS STS can be reached (the local runtime). @default true */
    assumeRoles?: boolean;
    /** Origins whose buckets are not checked for a lifecycle rule (the local bucket). @default none */
    withoutLifecycleCheck?: ReadonlySet<string>;
  },
) => Promise<ConnectionTestOutcome | undefined>;

/** What the API needs from `@sluice/control`'s `BackfillStore`. */
export type ApiBackfillStore = Pick<BackfillStore, 'create' | 'get' | 'list' | 'cancel' | 'retry'>;
