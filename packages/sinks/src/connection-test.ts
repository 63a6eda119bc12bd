import type { S3Client } from '@aws-sdk/client-s3';
import { type BucketLocation, ConnectionFailedError } from '@sluice/core';
import { type BucketErrorClassification, classifyBucketError, notAnswered } from './classify.js';
import { createBucketClient, resolveBucketEndpoint, stsRegionOf } from './client.js';
import { assertExternalIdRequired, type BucketCredentials, isRoleCredentials } from './role.js';
import {
  NO_ALLOWED_ENDPOINTS,
  assertEndpointResolvesPublic,
  isAllowListedEndpoint,
  parseEndpoint,
  type Resolver,
} from './endpoint.js';
import { connectionTestKey } from './keys.js';
import { type ConnectionWarning, checkAbortIncompleteUploadsRule } from './lifecycle.js';
import { putSmallObject } from './upload.js';

/** The message of a key that could create the test file but not overwrite it. */
export const OVERWRITE_DENIED_MESSAGE =
  'The key can create objects but not overwrite them, and Sluice rewrites files under the same names when ' +
  'it retries. On Google Cloud Storage, grant the service account Storage Object User ' +
  '(roles/storage.objectUser) or a role with storage.objects.delete, not only Storage Object Creator; on ' +
  'other stores, allow replacing existing objects under the path.';

/**
 * The reasons a connection test to a custom endpoint reports with one message ({@link endpointFailureMessage}):
 * told apart (refused, reset, no such host, a certificate's errno, a huge or non-S3 answer), they would make the
 * API a scanner of which public hosts and ports answer and what. What a customer needs to fix their own store
 * (bucket, key, secret, access, region) keeps its own message.
 */
const OPAQUE_ENDPOINT_REASONS: ReadonlySet<BucketErrorClassification['reason']> = new Set([
  'endpoint_unreachable',
  'tls_error',
  'not_supported',
]);

/** The one message of a custom endpoint that could not be used as a store: no errno, no host detail. */
export function endpointFailureMessage(endpoint: string): string {
  return (
    `Sluice could not use ${endpoint} as an S3-compatible store. Check that the endpoint is right, reachable ` +
    'from the internet over HTTPS with a valid certificate, and serves the S3 API; then try again.'
  );
}

/**
 * The error a failed connection test throws: the classification's message and retryability, except for a
 * custom endpoint's {@link OPAQUE_ENDPOINT_REASONS}, which all get {@link endpointFailureMessage}, retryable.
 */
function connectionFailed(
  classified: BucketErrorClassification,
  location: BucketLocation,
  cause: unknown,
): ConnectionFailedError {
  if (location.endpoint !== null && OPAQUE_ENDPOINT_REASONS.has(classified.reason)) {
    return new ConnectionFailedError(endpointFailureMessage(location.endpoint), { cause, retryable: true });
  }
  return new ConnectionFailedError(classified.message, { cause, retryable: classified.kind === 'transient' });
}

/**
 * The default total deadline of a connection test, both writes and their retries included: the API answers
 * inside API Gateway's 29 s with room for KMS, DynamoDB and the DNS check around it.
 */
export const CONNECTION_TEST_DEADLINE_MS = 10_000;

/** Options of {@link testConnection}. */
export interface ConnectionTestOptions {
  /** The clock for `testedAt`: a clock function or the time itself. */
  now: (() => Date) | Date;
  /** A client to use instead of one made from the credentials (tests). */
  client?: S3Client;
  /** @default NO_ALLOWED_ENDPOINTS */
  allowedEndpoints?: ReadonlySet<string>;
  /** @default the system resolver */
  resolve?: Resolver;
  /** Total milliseconds for the bucket requests of the test. @default CONNECTION_TEST_DEADLINE_MS */
  deadlineMs?: number;
  /** False where no AWS STS can be reached (the local runtime). @default true */
  assumeRoles?: boolean;
  /**
   * Origins whose buckets are not checked for a lifecycle rule: the local runtime's own bucket (s3rver keeps no
   * lifecycle configuration, and the warning could not apply to it). @default none: every bucket is checked
   */
  withoutLifecycleCheck?: ReadonlySet<string>;
}

/** What a successful connection test wrote. */
export interface ConnectionTestResult {
  key: string;
  testedAt: string;
  /** What works but deserves a look (see {@link checkAbortIncompleteUploadsRule}); empty when nothing does. */
  warnings: ConnectionWarning[];
}

/**
 * Tests a destination before it is saved:
 * 1. validates the endpoint, if any: the endpoint rules, then every resolved address public (an
 *    allow-listed origin is exempt);
 * 2. for a role, first refuses one whose trust policy admits Sluice without the external ID
 *    ({@link assertExternalIdRequired});
 * 2b. writes `<prefix>/_sluice/connection-test.json` = `{"service":"sluice","testedAt":<ISO>}` with a
 *    client that retries little (2 attempts);
 * 3. writes it again: Sluice rewrites fixed names (every retried window, every later connection test), so a
 *    key that may create objects but not overwrite them (GCS `roles/storage.objectCreator`) must fail here,
 *    with {@link OVERWRITE_DENIED_MESSAGE}, not at the first retry of an export;
 * 4. reads the bucket's lifecycle configuration: no rule aborting incomplete multipart uploads (or none
 *    readable) is a warning in the result, never a failure (not for the origins of `withoutLifecycleCheck`);
 * 5. on failure, classifies the error once ({@link classifyBucketError}) and throws its message; for a custom
 *    endpoint, unreachable, TLS, not-an-S3-store and too-large answers all get one message
 *    ({@link endpointFailureMessage}), so the test tells nothing about a host that is not the customer's store.
 * Steps 2 and 3 share one total deadline (`deadlineMs`): past it, whatever the server is still sending, the
 * test fails with "did not answer in N s" (for a custom endpoint, the one message of step 5).
 *
 * @throws InvalidInputError (`endpoint` issue) when the endpoint breaks the rules
 * @throws ConnectionFailedError with a message a person can act on, `cause` the original error
 */
export async function testConnection(
  location: BucketLocation,
  credentials: BucketCredentials,
  options: ConnectionTestOptions,
): Promise<ConnectionTestResult> {
  const allowedEndpoints = options.allowedEndpoints ?? NO_ALLOWED_ENDPOINTS;
  if (location.endpoint !== null) {
    const origin = parseEndpoint(location.endpoint, { allowedEndpoints });
    if (!isAllowListedEndpoint(origin, allowedEndpoints)) {
      await assertEndpointResolvesPublic(origin, {
        allowedEndpoints,
        ...(options.resolve ? { resolve: options.resolve } : {}),
      });
    }
  }
  const deadlineMs = options.deadlineMs ?? CONNECTION_TEST_DEADLINE_MS;
  const deadline = AbortSignal.timeout(deadlineMs);
  if (isRoleCredentials(credentials) && options.assumeRoles !== false) {
    try {
      await assertExternalIdRequired(credentials, {
        region: stsRegionOf(resolveBucketEndpoint(location, { allowedEndpoints })),
      });
    } catch (error) {
      throw connectionFailed(classifyBucketError(error, location), location, error);
    }
  }
  const client =
    options.client ??
    createBucketClient(location, credentials, {
      maxAttempts: 2,
      allowedEndpoints,
      requestDeadlineMs: deadlineMs,
      ...(options.assumeRoles === false ? { assumeRoles: false } : {}),
    });
  const key = connectionTestKey(location.pathPrefix);
  const testedAt = (typeof options.now === 'function' ? options.now() : options.now).toISOString();
  const put = () =>
    putSmallObject(
      client,
      {
        bucket: location.bucket,
        key,
        body: JSON.stringify({ service: 'sluice', testedAt }),
        contentType: 'application/json',
        abortSignal: deadline,
        encryption: location.encryption ?? null,
      },
      location,
    );
  try {
    await put();
    try {
      await put();
    } catch (error) {
      if (classifyBucketError(error, location).reason === 'access_denied') {
        throw new ConnectionFailedError(OVERWRITE_DENIED_MESSAGE, { cause: error, retryable: false });
      }
      throw error;
    }
    const unchecked =
      location.endpoint !== null && isAllowListedEndpoint(location.endpoint, options.withoutLifecycleCheck);
    const warnings = unchecked ? [] : await checkAbortIncompleteUploadsRule(client, location, deadline);
    return { key, testedAt, warnings };
  } catch (error) {
    if (deadline.aborted) throw connectionFailed(notAnswered(location, deadlineMs), location, error);
    if (error instanceof ConnectionFailedError) throw error;
    throw connectionFailed(classifyBucketError(error, location), location, error);
  } finally {
    if (!options.client) client.destroy();
  }
}
