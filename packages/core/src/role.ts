import { createHmac } from 'node:crypto';

/**
 * An IAM role in the customer's account that Sluice assumes (through STS, with the external ID) to write to
 * an Amazon S3 bucket, instead of a stored access key. Neither field is a secret.
 */
export interface AssumedRole {
  /** `arn:aws:iam::<account>:role/<path/name>` (or another AWS partition's). */
  roleArn: string;
  /**
   * What the role's trust policy must require (`StringEquals sts:ExternalId`): chosen by Sluice, never by the
   * caller, so nobody in another workspace can have Sluice assume this role. See {@link externalIdFor}.
   */
  externalId: string;
}

/** The shape of an IAM role ARN: any AWS partition, a 12-digit account, a role name with an optional path. */
export const ROLE_ARN_RE = /^arn:aws(-[a-z]+)*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;

/** The 12-digit account of a role ARN (one that matches {@link ROLE_ARN_RE}). */
export function roleAccountId(roleArn: string): string {
  return roleArn.split(':')[4] ?? '';
}

/** Longest role session name STS accepts. */
const MAX_SESSION_NAME_LENGTH = 64;

/**
 * The external ID of a new role destination: `sluice-` and 32 hex digits of the HMAC-SHA256, under Sluice's
 * external-ID key (a secret only Sluice holds), of the workspace's `uid` (random, made with the workspace and
 * never reused). Deterministic per workspace, so a customer can learn it before the trust policy exists (a
 * create whose connection test cannot assume the role fails with this ID in its message; the same create sent
 * again uses it), and unguessable without the key; a workspace id used again later gets a new uid, so it never
 * inherits an old customer's trust. Fixed on the destination when it is created and kept for its life
 * (destinations created before keep the ID they have).
 */
export function externalIdFor(key: Uint8Array, workspaceUid: string): string {
  const digest = createHmac('sha256', key).update(`sluice-external-id:v2\n${workspaceUid}`).digest('hex');
  return `sluice-${digest.slice(0, 32)}`;
}

/** The STS session name of a destination's writes, `sluice-<destinationId>`: CloudTrail shows it. */
export function roleSessionName(destinationId: string): string {
  return `sluice-${destinationId}`.replace(/[^\w+=,.@-]/g, '-').slice(0, MAX_SESSION_NAME_LENGTH);
}
