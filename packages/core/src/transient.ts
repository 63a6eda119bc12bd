/**
 * One test of "a later attempt can fix this" for AWS SDK errors, shared by the stores (DynamoDB, KMS) and the
 * ingest batch writer. Pure: it reads error shapes (`name`, `code`, `$metadata`), never imports the SDK.
 */

/** DynamoDB's names for throttling and its own transient failures. */
export const TRANSIENT_DYNAMODB_ERROR_NAMES: readonly string[] = [
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
];

/** KMS's names for throttling and its own transient failures. */
export const TRANSIENT_KMS_ERROR_NAMES: readonly string[] = [
  'ThrottlingException',
  'KMSInternalException',
  'DependencyTimeoutException',
  'TimeoutError',
  'RequestTimeout',
];

/** Node socket error codes of a service that cannot be reached. */
export const CONNECTION_ERROR_CODES: readonly string[] = [
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ECONNABORTED',
];

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  errors?: unknown[];
  cause?: unknown;
}

/**
 * True when an SDK call failed for a reason that retrying later can fix: one of `names`, a connection
 * failure, a 5xx from the service, or `extra` (a service-specific rule) — also inside an `AggregateError`'s
 * `errors` or a `cause`, a few levels deep.
 */
export function isTransientServiceError(
  error: unknown,
  names: readonly string[],
  extra?: (error: object) => boolean,
  depth = 0,
): boolean {
  if (depth > 4 || typeof error !== 'object' || error === null) return false;
  const candidate = error as ErrorShape;
  if (typeof candidate.name === 'string' && names.includes(candidate.name)) return true;
  if (typeof candidate.code === 'string' && CONNECTION_ERROR_CODES.includes(candidate.code)) return true;
  const status = candidate.$metadata?.httpStatusCode;
  if (typeof status === 'number' && status >= 500) return true;
  if (extra?.(error)) return true;
  if (
    Array.isArray(candidate.errors) &&
    candidate.errors.some((inner) => isTransientServiceError(inner, names, extra, depth + 1))
  ) {
    return true;
  }
  return candidate.cause !== undefined && isTransientServiceError(candidate.cause, names, extra, depth + 1);
}
