import {
  type Dataset,
  type Destination,
  type DestinationView,
  type DestinationFailing,
  fileFormatOf,
  type Layout,
  layoutOf,
  maskAccessKeyId,
  type Schedule,
  type ServerSideEncryption,
} from '@sluice/core';

/** A destination as the API returns it: exactly the OpenAPI `DataExport`, never the secret. */
export interface DataExportView {
  id: string;
  name: string;
  provider: Destination['provider'];
  bucket: string;
  region: string;
  endpoint: string | null;
  pathPrefix: string;
  /** Masked, for example `AKIA…WXYZ`; absent on a role destination. */
  accessKeyId?: string;
  /** The IAM role Sluice assumes (Amazon S3); absent on a key destination. */
  roleArn?: string;
  /** What the role's trust policy must require as `sts:ExternalId`; not a secret; absent with a key. */
  externalId?: string;
  /** Server-side encryption of every object written; null when none is requested. */
  serverSideEncryption: ServerSideEncryption | null;
  /** The customer's KMS key with `aws:kms` (not a secret); null otherwise. */
  kmsKeyId: string | null;
  datasets: Dataset[];
  /**
   * The child workspaces whose data the export includes, or `["*"]` for every child; `[]` for none (always
   * sent by the API; optional for views built before it existed).
   */
  childOrganizations?: string[];
  frequency: Destination['frequency'];
  /** The format of windows planned from now on; `jsonl` for exports created before formats. */
  format: Destination['format'];
  compression: Destination['compression'];
  /** `date` (also for exports created before layouts) or `run_hour`. */
  layout: Layout;
  /** The chosen run time; null: the spread slot. */
  schedule: Schedule | null;
  isEnabled: boolean;
  status: Destination['status'];
  startFrom: string;
  exportedThrough: Partial<Record<Dataset, string | null>>;
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  consecutiveFailures: number;
  /** Set while runs fail for a reason only the customer can fix; null once a run succeeds again. */
  failing: DestinationFailing | null;
  totalRowsExported: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * Builds the `DataExport` view, field by field (so nothing stored, such as the sealed secret, can leak by
 * being added to the record). `exportedThrough` lists every current dataset, `null` until its first export.
 * Nullable fields an older record lacks come back `null`, counters `0`. `accessKeyId` is masked here (masking a masked id leaves it as it is).
 */
export function toDataExportView(destination: DestinationView): DataExportView {
  const exportedThrough: Partial<Record<Dataset, string | null>> = {};
  for (const dataset of destination.datasets) {
    exportedThrough[dataset] = destination.exportedThrough?.[dataset] ?? null;
  }
  return {
    id: destination.id,
    name: destination.name,
    provider: destination.provider,
    bucket: destination.bucket,
    region: destination.region,
    endpoint: destination.endpoint ?? null,
    pathPrefix: destination.pathPrefix,
    ...(destination.role
      ? { roleArn: destination.role.roleArn, externalId: destination.role.externalId }
      : { accessKeyId: maskAccessKeyId(destination.accessKeyId ?? '') }),
    serverSideEncryption: destination.encryption?.serverSideEncryption ?? null,
    kmsKeyId: destination.encryption?.kmsKeyId ?? null,
    datasets: [...destination.datasets],
    childOrganizations: [...(destination.childOrganizations ?? [])],
    frequency: destination.frequency,
    ...fileFormatOf(destination),
    layout: layoutOf(destination),
    schedule: destination.schedule ?? null,
    isEnabled: destination.isEnabled,
    status: destination.status,
    startFrom: destination.startFrom,
    exportedThrough,
    nextRunAt: destination.nextRunAt ?? null,
    lastRunAt: destination.lastRunAt ?? null,
    lastSuccessAt: destination.lastSuccessAt ?? null,
    lastError: destination.lastError ?? null,
    lastErrorAt: destination.lastErrorAt ?? null,
    consecutiveFailures: destination.consecutiveFailures ?? 0,
    failing: destination.failing
      ? { since: destination.failing.since, reason: destination.failing.reason }
      : null,
    totalRowsExported: destination.totalRowsExported ?? 0,
    createdAt: destination.createdAt,
    updatedAt: destination.updatedAt,
  };
}
