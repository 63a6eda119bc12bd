import type { Dataset, Frequency } from './datasets.js';
import { type Compression, type ExportFormat, type FileFormat, JSONL_GZIP } from './file-format.js';
import { childOrganizationsAddedAt, type RemovedChildEntry } from './organizations.js';
import type { AssumedRole } from './role.js';
import type { Layout, Schedule } from './run-hour.js';

export const PROVIDERS = ['s3', 'gcs'] as const;
export type Provider = (typeof PROVIDERS)[number];

export const DESTINATION_STATUSES = ['idle', 'queued', 'running', 'failed'] as const;
export type DestinationStatus = (typeof DESTINATION_STATUSES)[number];

/**
 * A destination whose runs fail for a reason only its customer can fix (their bucket, key or settings): set
 * by the first such failure, cleared by the next run that succeeds.
 */
export interface DestinationFailing {
  /** When the first failure of this streak was recorded (ISO). */
  since: string;
  /** The latest failure's reason code, for example `access_denied` (see the engine's `failureReasonCode`). */
  reason: string;
}

/**
 * A change of a destination's failing state, to announce on the event bus: decided in the same write that
 * records the run's outcome and kept on the destination (`pendingNotice`) until it is published.
 */
export interface DestinationNotice {
  /** Stable per transition (`<destinationId>:<kind>:<failing since>`): a republished notice keeps it. */
  id: string;
  kind: 'failing' | 'recovered';
  workspaceId: string;
  destinationId: string;
  /** The reason code of the failure that started (failing) or that was the last one (recovered). */
  reason: string;
  /** The failure's message, as `lastError` shows it (failing); null for recovered. Never a secret. */
  message: string | null;
  /** When the failing streak began. */
  failingSince: string;
  /** When the transition was recorded (ISO). */
  occurredAt: string;
}

/** The server-side encryption S3 applies to each object: S3-managed keys, or the customer's KMS key. */
export const SERVER_SIDE_ENCRYPTIONS = ['AES256', 'aws:kms'] as const;
export type ServerSideEncryption = (typeof SERVER_SIDE_ENCRYPTIONS)[number];

/** Server-side encryption requested on every object Sluice writes (files, manifests, markers). */
export interface ObjectEncryption {
  serverSideEncryption: ServerSideEncryption;
  /** The customer's KMS key (id, ARN or alias) with `aws:kms`; absent: the bucket's default KMS key. */
  kmsKeyId?: string;
}

/** Where files go: everything a writer needs to reach the bucket, except the secret. */
export interface BucketLocation {
  provider: Provider;
  bucket: string;
  /** `auto` for GCS and custom endpoints unless the caller named one. */
  region: string;
  /** HTTPS origin of an S3-compatible store; null for AWS S3 and GCS. */
  endpoint: string | null;
  /** No leading or trailing slash; '' for the bucket root. */
  pathPrefix: string;
  /** Server-side encryption of every object written (Amazon S3 and S3-compatible stores only). */
  encryption?: ObjectEncryption | null;
}

/** The secret ciphertext as stored: a KMS-encrypted data key and the AES-256-GCM sealed secret. */
export interface SealedSecret {
  /** base64 KMS CiphertextBlob of the data key */
  encryptedDataKey: string;
  /** base64 12-byte IV */
  iv: string;
  /** base64 ciphertext followed by nothing; the tag is separate */
  ciphertext: string;
  /** base64 16-byte GCM tag */
  tag: string;
}

/** A destination as the control table holds it (never returned as is: see the API's DataExport view). */
export interface Destination extends BucketLocation {
  workspaceId: string;
  id: string;
  name: string;
  /** The access key of a key destination; absent on a role destination. */
  accessKeyId?: string;
  /** The sealed secret access key of a key destination; absent on a role destination. */
  secret?: SealedSecret;
  /** The IAM role Sluice assumes (Amazon S3 only) instead of a stored key; absent or null on a key destination. */
  role?: AssumedRole | null;
  datasets: Dataset[];
  frequency: Frequency;
  /** The format of windows planned from now on (see `fileFormatOf`); `jsonl` on items stored before formats. */
  format: ExportFormat;
  /** `gzip` for `jsonl`; `snappy` or `zstd` for `parquet`. */
  compression: Compression;
  /** The layout of windows planned from now on; absent (items stored before layouts): `date`. */
  layout?: Layout;
  /** The chosen run time (hourly and daily); absent or null: the spread slot of its id. */
  schedule?: Schedule | null;
  /** `schemaKeyOf` of the schema objects last written beside the data (`_sluice/schema/`); absent: none. */
  schemaWritten?: string;
  isEnabled: boolean;
  status: DestinationStatus;
  /** Bumped on every change of location or credentials; a running export stops when it changes. */
  configVersion: number;
  startFrom: string;
  /** When each dataset was added (ISO); event datasets start there (or at startFrom for the first ones). */
  datasetStartedAt: Partial<Record<Dataset, string>>;
  /**
   * The child workspaces whose data the export includes, or `['*']` (`ALL_CHILDREN`): every current and future
   * child. Absent or empty: none (only the workspace's own data).
   */
  childOrganizations?: string[];
  /**
   * When each entry of `childOrganizations` (`'*'` included) was added to it (ISO), like `datasetStartedAt`:
   * `startFrom` for the entries of the create; the time of the update for an entry added later; kept while the
   * entry stays; dropped when it is removed.
   */
  childOrganizationsAddedAt?: Record<string, string>;
  /**
   * Entries removed from `childOrganizations`, each with when it was added and removed (ISO): windows planned
   * after a removal still include the child for the time before it (`includedOrganizations`). Never shown.
   */
  childOrganizationsRemoved?: RemovedChildEntry[];
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  consecutiveFailures: number;
  totalRowsExported: number;
  /** True when a manual run is queued (POST /run or create). */
  manualRunQueued: boolean;
  /** Set while runs fail for a customer-caused reason; null or absent otherwise (and on older items). */
  failing?: DestinationFailing | null;
  /** A failing/recovered notice recorded but not yet published on the bus; null or absent when none. */
  pendingNotice?: DestinationNotice | null;
  createdAt: string;
  updatedAt: string;
}

/**
 * A destination as the control store reads it back: its stored fields and what its cursors derive, which is
 * never stored (so a write takes a {@link Destination}, and nothing is stripped from it).
 */
export interface DestinationView extends Destination {
  /** Per dataset: ISO time everything recorded up to which is written (events) or the last snapshot date. */
  exportedThrough: Partial<Record<Dataset, string | null>>;
}

/** Masks an access key id as `AKIA…WXYZ`: the first four and the last four characters. */
export function maskAccessKeyId(accessKeyId: string): string {
  if (accessKeyId.length <= 8) return `${accessKeyId.slice(0, 2)}…`;
  return `${accessKeyId.slice(0, 4)}…${accessKeyId.slice(-4)}`;
}

/** What a new destination is made of: its configuration and sealed secret. */
export interface NewDestinationInput extends BucketLocation {
  workspaceId: string;
  id: string;
  name: string;
  /** A key destination's access key id and sealed secret; a role destination has `role` instead. */
  accessKeyId?: string;
  secret?: SealedSecret;
  role?: AssumedRole;
  datasets: Dataset[];
  frequency: Frequency;
  /** ISO time the event datasets start from. */
  startFrom: string;
  /** @default JSON lines, gzip */
  fileFormat?: FileFormat;
  /** @default `date` (stored only when `run_hour`) */
  layout?: Layout;
  schedule?: Schedule | null;
  /** Child workspaces included (or `['*']`); absent or empty: none. */
  childOrganizations?: string[];
  now: Date;
}

/**
 * A destination as it is first saved: enabled, its first run queued (`nextRunAt` now), every dataset
 * starting at `startFrom`, `configVersion` 1, nothing exported, no failure.
 */
export function newDestination(input: NewDestinationInput): Destination {
  const { now, fileFormat = JSONL_GZIP, childOrganizations, ...config } = input;
  const nowIso = now.toISOString();
  return {
    ...config,
    ...(childOrganizations !== undefined && childOrganizations.length > 0
      ? {
          childOrganizations,
          childOrganizationsAddedAt: childOrganizationsAddedAt(
            undefined,
            childOrganizations,
            input.startFrom,
          ),
        }
      : {}),
    format: fileFormat.format,
    compression: fileFormat.compression,
    isEnabled: true,
    status: 'queued',
    configVersion: 1,
    datasetStartedAt: Object.fromEntries(input.datasets.map((dataset) => [dataset, input.startFrom])),
    nextRunAt: nowIso,
    lastRunAt: null,
    lastSuccessAt: null,
    lastError: null,
    lastErrorAt: null,
    consecutiveFailures: 0,
    totalRowsExported: 0,
    manualRunQueued: true,
    createdAt: nowIso,
    updatedAt: nowIso,
  };
}
