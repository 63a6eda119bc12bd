import type { Dataset, Frequency } from './datasets.js';

export const PROVIDERS = ['s3', 'gcs'] as const;
export type Provider = (typeof PROVIDERS)[number];

export const DESTINATION_STATUSES = ['idle', 'queued', 'running', 'failed'] as const;
export type DestinationStatus = (typeof DESTINATION_STATUSES)[number];

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
  accessKeyId: string;
  secret: SealedSecret;
  datasets: Dataset[];
  frequency: Frequency;
  format: 'jsonl.gz';
  isEnabled: boolean;
  status: DestinationStatus;
  /** Bumped on every change of location or credentials; a running export stops when it changes. */
  configVersion: number;
  startFrom: string;
  /** Per dataset: ISO time everything recorded up to which is written (events) or the last snapshot date. */
  exportedThrough: Partial<Record<Dataset, string | null>>;
  /** When each dataset was added (ISO); event datasets start there (or at startFrom for the first ones). */
  datasetStartedAt: Partial<Record<Dataset, string>>;
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  consecutiveFailures: number;
  totalRowsExported: number;
  /** True when a manual run is queued (POST /run or create). */
  manualRunQueued: boolean;
  createdAt: string;
  updatedAt: string;
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
  accessKeyId: string;
  secret: SealedSecret;
  datasets: Dataset[];
  frequency: Frequency;
  /** ISO time the event datasets start from. */
  startFrom: string;
  now: Date;
}

/**
 * A destination as it is first saved: enabled, its first run queued (`nextRunAt` now), every dataset
 * starting at `startFrom`, `configVersion` 1, nothing exported, no failure.
 */
export function newDestination(input: NewDestinationInput): Destination {
  const { now, ...config } = input;
  const nowIso = now.toISOString();
  return {
    ...config,
    format: 'jsonl.gz',
    isEnabled: true,
    status: 'queued',
    configVersion: 1,
    exportedThrough: Object.fromEntries(input.datasets.map((dataset) => [dataset, null])),
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
