import { randomBytes } from 'node:crypto';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { type AssumedRole, type Destination, roleSessionName, type SealedSecret } from '@sluice/core';
import { BucketError } from './classify.js';
import { DeadlineHttpHandler, formatSeconds, UNTIL_PARSED_OPTIONS, untilParsed } from './request-deadline.js';

/** An access key pair. The secret is only ever handed to the SDK's signer. */
export interface AccessKeyCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** A role to assume for the bucket's requests: STS returns short-lived keys, held by one client only. */
export interface RoleCredentials extends AssumedRole {
  /** `sluice-<destinationId>`: what the customer's CloudTrail shows as the session. */
  sessionName: string;
}

/** How a bucket client signs in: a stored key or an assumed role. */
export type BucketCredentials = AccessKeyCredentials | RoleCredentials;

/** True for role credentials. */
export function isRoleCredentials(credentials: BucketCredentials): credentials is RoleCredentials {
  return 'roleArn' in credentials;
}

/** Short-lived keys of an assumed role, as an S3 client's credential provider returns them. */
export interface TemporaryCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** How long the assumed role's keys last: one writer invocation or connection test needs minutes at most. */
export const ROLE_SESSION_SECONDS = 3600;

/** Options of {@link assumeRoleCredentials}. */
export interface AssumeRoleOptions {
  /** The STS region: the bucket's (regional STS endpoint); `us-east-1` when the location has none. */
  region: string;
  /**
   * False where no STS can be reached (the local runtime): every use fails at once with a message that says
   * role destinations need Sluice deployed on AWS. @default true
   */
  available?: boolean;
  /** Total milliseconds of one AssumeRole; each of its two attempts gets half. @default ASSUME_ROLE_DEADLINE_MS */
  deadlineMs?: number;
}

/** The total time of one AssumeRole, both attempts and their backoff included. */
export const ASSUME_ROLE_DEADLINE_MS = 8_000;

/** AssumeRole did not end within its deadline: transient. */
function stsNotAnswered(cause: unknown, deadlineMs: number): BucketError {
  return new BucketError(
    {
      kind: 'transient',
      reason: 'unknown',
      message: `AWS STS did not answer Sluice's AssumeRole in ${formatSeconds(deadlineMs)} s. Sluice will retry.`,
    },
    { cause },
  );
}

/** The message of a role destination in the local runtime. */
export const ROLE_UNAVAILABLE_MESSAGE =
  'IAM role destinations need Sluice deployed on AWS (it assumes the role through AWS STS); this local ' +
  'runtime has no STS. Use an access key locally.';

/** STS error names that mean "this role cannot be assumed by Sluice as configured". */
const NOT_ASSUMABLE = new Set(['AccessDenied', 'AccessDeniedException', 'RegionDisabledException']);

/**
 * The one refusal of a role, whatever the reason: it does not exist, its trust policy does not admit Sluice
 * with this external ID, or it admits Sluice without one ({@link assertExternalIdRequired}). One message for
 * all, so a caller naming someone else's role learns nothing about it.
 */
export function roleRefused(role: AssumedRole, cause?: unknown): BucketError {
  return new BucketError(
    {
      kind: 'permanent',
      reason: 'role_not_assumable',
      message: `Sluice could not use the role ${role.roleArn}. Check that the role exists and that its trust policy allows sts:AssumeRole to Sluice's principal only with the condition StringEquals sts:ExternalId "${role.externalId}" (see docs/deploy.md).`,
    },
    cause === undefined ? {} : { cause },
  );
}

/**
 * Refuses a role whose trust policy lets Sluice in without the destination's external ID: an AssumeRole with
 * a random, wrong external ID must be refused. If it succeeds, the keys are dropped at once and the role is
 * refused with {@link roleRefused} (the message of a role that cannot be assumed at all). A transient failure
 * of the probe is thrown as it is; a refusal (the expected outcome) returns.
 */
export async function assertExternalIdRequired(
  role: RoleCredentials,
  options: AssumeRoleOptions,
): Promise<void> {
  const probe = { ...role, externalId: `sluice-probe-${randomBytes(16).toString('hex')}` };
  try {
    await assumeRoleCredentials(probe, options)();
  } catch (error) {
    if (error instanceof BucketError && error.reason === 'role_not_assumable') return;
    throw error;
  }
  throw roleRefused(role);
}

/** The classified error of a failed AssumeRole; the message names the role and the trust policy's condition. */
export function roleError(error: unknown, role: AssumedRole): BucketError {
  const name = (error as { name?: unknown } | null)?.name;
  const errorName = typeof name === 'string' && name !== '' ? name : 'unknown error';
  if (name === 'RegionDisabledException') {
    return new BucketError(
      {
        kind: 'permanent',
        reason: 'role_not_assumable',
        message: `Sluice could not assume the role ${role.roleArn}: AWS STS is not activated in the region of the bucket for the role's account. Activate it in IAM (Account settings), or use a bucket in another region.`,
      },
      { cause: error },
    );
  }
  if (NOT_ASSUMABLE.has(errorName)) return roleRefused(role, error);
  return new BucketError(
    {
      kind: 'transient',
      reason: 'unknown',
      message: `Sluice could not assume the role ${role.roleArn} right now (${errorName}). Sluice will retry.`,
    },
    { cause: error },
  );
}

/**
 * A credential provider that assumes `role` through STS (`AssumeRole` with the external ID and the session
 * name, one hour), within `deadlineMs` in all (each of two attempts with a total deadline of half of it and
 * at most 1 MiB read of its answer, {@link DeadlineHttpHandler}). It calls STS on every call: give it to one S3 client, whose own identity cache
 * (the SDK memoizes a credential provider until shortly before the keys expire) makes that one
 * AssumeRole per client, so per connection test and per writer invocation. The keys live in that client's
 * memory only: never stored, never logged, never in a payload. A failure throws a {@link BucketError}
 * ({@link roleError}).
 */
export function assumeRoleCredentials(
  role: RoleCredentials,
  options: AssumeRoleOptions,
): () => Promise<TemporaryCredentials> {
  return async (): Promise<TemporaryCredentials> => {
    if (options.available === false) {
      throw new BucketError({
        kind: 'permanent',
        reason: 'role_not_assumable',
        message: ROLE_UNAVAILABLE_MESSAGE,
      });
    }
    const deadlineMs = options.deadlineMs ?? ASSUME_ROLE_DEADLINE_MS;
    const requestHandler = new DeadlineHttpHandler({
      connectionTimeout: Math.min(5_000, deadlineMs / 2),
      deadlineMs: deadlineMs / 2,
    });
    const sts = new STSClient({ region: options.region, maxAttempts: 2, requestHandler });
    sts.middlewareStack.add(untilParsed(requestHandler), UNTIL_PARSED_OPTIONS);
    const deadline = AbortSignal.timeout(deadlineMs);
    try {
      const { Credentials: keys } = await sts.send(
        new AssumeRoleCommand({
          RoleArn: role.roleArn,
          ExternalId: role.externalId,
          RoleSessionName: role.sessionName,
          DurationSeconds: ROLE_SESSION_SECONDS,
        }),
        { abortSignal: deadline },
      );
      if (!keys?.AccessKeyId || !keys.SecretAccessKey) {
        throw roleError(new Error('STS returned no credentials'), role);
      }
      return {
        accessKeyId: keys.AccessKeyId,
        secretAccessKey: keys.SecretAccessKey,
        ...(keys.SessionToken ? { sessionToken: keys.SessionToken } : {}),
        ...(keys.Expiration ? { expiration: keys.Expiration } : {}),
      };
    } catch (error) {
      if (deadline.aborted) throw stsNotAnswered(error, deadlineMs);
      throw error instanceof BucketError ? error : roleError(error, role);
    } finally {
      sts.destroy();
    }
  };
}

/**
 * A stored destination's credentials, ready for a bucket client: its role (with the session name of its
 * id), or its access key with the secret opened by `openSecret` (the only place that decrypts).
 */
export async function destinationCredentials(
  destination: Pick<Destination, 'id' | 'accessKeyId' | 'secret' | 'role'>,
  openSecret: (sealed: SealedSecret) => Promise<string>,
): Promise<BucketCredentials> {
  if (destination.role) {
    const { roleArn, externalId } = destination.role;
    return { roleArn, externalId, sessionName: roleSessionName(destination.id) };
  }
  if (destination.accessKeyId === undefined || destination.secret === undefined) {
    throw new Error(`Destination ${destination.id} has neither a role nor an access key.`);
  }
  return { accessKeyId: destination.accessKeyId, secretAccessKey: await openSecret(destination.secret) };
}
