import {
  GetBucketLifecycleConfigurationCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { BucketLocation } from '@sluice/core';

/** The codes of {@link ConnectionWarning}s (the OpenAPI document's enum mirrors this list). */
export const CONNECTION_WARNING_CODES = ['no_abort_incomplete_multipart_rule'] as const;

/** A warning of a connection test: the destination works, but something in the bucket deserves a look. */
export interface ConnectionWarning {
  /** Stable, machine-readable. */
  code: (typeof CONNECTION_WARNING_CODES)[number];
  /** What to do, for a person. */
  message: string;
}

/** The warning's code: no lifecycle rule aborts incomplete multipart uploads (or it could not be read). */
export const NO_ABORT_RULE: ConnectionWarning['code'] = 'no_abort_incomplete_multipart_rule';

/** The permission that lets Sluice read the lifecycle configuration. */
export const LIFECYCLE_PERMISSION = 's3:GetLifecycleConfiguration';

/** The rule to add, as the S3 lifecycle configuration JSON (`aws s3api put-bucket-lifecycle-configuration`). */
export function abortRuleToAdd(pathPrefix: string): string {
  const rule = {
    ID: 'abort-incomplete-multipart-uploads',
    Status: 'Enabled',
    Filter: { Prefix: pathPrefix === '' ? '' : `${pathPrefix}/` },
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
  };
  return JSON.stringify({ Rules: [rule] });
}

/**
 * True when an enabled rule aborts incomplete multipart uploads for every key under `pathPrefix`: its
 * filter has no prefix, or one that the prefix's keys all start with (a rule filtered by tags or size does
 * not count: a pending upload has neither).
 */
export function coversIncompleteUploads(rules: readonly LifecycleRule[], pathPrefix: string): boolean {
  const folder = pathPrefix === '' ? '' : `${pathPrefix}/`;
  return rules.some((rule) => {
    if (rule.Status !== 'Enabled' || rule.AbortIncompleteMultipartUpload?.DaysAfterInitiation === undefined) {
      return false;
    }
    const filter = rule.Filter;
    if (filter?.Tag !== undefined || filter?.And !== undefined) return false;
    if (filter?.ObjectSizeGreaterThan !== undefined || filter?.ObjectSizeLessThan !== undefined) return false;
    const prefix = filter?.Prefix ?? rule.Prefix ?? '';
    return folder.startsWith(prefix);
  });
}

function warning(location: BucketLocation, unreadable: boolean): ConnectionWarning {
  const why =
    'An upload that is cut off (a writer stopped mid-file) leaves its parts in the bucket, billed but invisible, until a lifecycle rule aborts it.';
  const check = unreadable
    ? ` Sluice could not read the bucket's lifecycle configuration; grant ${LIFECYCLE_PERMISSION} on the bucket so it can check.`
    : ` No enabled lifecycle rule of bucket "${location.bucket}" aborts incomplete multipart uploads under the export's path.`;
  return {
    code: NO_ABORT_RULE,
    message: `${why}${check} Add a rule such as ${abortRuleToAdd(location.pathPrefix)}.`,
  };
}

/**
 * Reads the bucket's lifecycle configuration and returns the {@link NO_ABORT_RULE} warning when no rule
 * aborts incomplete multipart uploads, or when it cannot be read (no configuration at all counts as no
 * rule; denied, not implemented by the store, or any other failure as unreadable). Never throws.
 */
export async function checkAbortIncompleteUploadsRule(
  client: S3Client,
  location: BucketLocation,
  abortSignal?: AbortSignal,
): Promise<ConnectionWarning[]> {
  try {
    const result = await client.send(
      new GetBucketLifecycleConfigurationCommand({ Bucket: location.bucket }),
      abortSignal ? { abortSignal } : {},
    );
    return coversIncompleteUploads(result.Rules ?? [], location.pathPrefix) ? [] : [warning(location, false)];
  } catch (error) {
    const name = (error as { name?: unknown }).name;
    return [warning(location, name !== 'NoSuchLifecycleConfiguration')];
  }
}
