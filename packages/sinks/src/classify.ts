import type { BucketLocation } from '@sluice/core';
import { SluiceError } from '@sluice/core';
import { UNSAFE_ADDRESS_CODE } from './lookup.js';
import { formatSeconds, RequestDeadlineError, ResponseTooLargeError } from './request-deadline.js';

/** Why a bucket operation failed, in terms a person can act on. */
export type BucketErrorReason =
  | 'no_such_bucket'
  | 'invalid_bucket_name'
  | 'access_denied'
  | 'wrong_region'
  | 'invalid_access_key'
  | 'role_not_assumable'
  | 'signature_mismatch'
  | 'unsafe_endpoint'
  | 'redirected'
  | 'tls_error'
  | 'not_supported'
  | 'endpoint_unreachable'
  | 'throttled'
  | 'server_error'
  | 'unknown';

/** Whether retrying the same request can succeed without anyone changing anything. */
export type BucketErrorKind = 'permanent' | 'transient';

/** The result of {@link classifyBucketError}. */
export interface BucketErrorClassification {
  kind: BucketErrorKind;
  reason: BucketErrorReason;
  /** Safe to show to the customer and to store as `lastError`: no secret, no signature. */
  message: string;
}

/**
 * The `name` of a {@link BucketError} per reason. A Lambda's thrown error's `name` becomes the `Error`
 * that Step Functions Retry and Catch match, so these names are part of the orchestration contract.
 */
export const BUCKET_ERROR_NAMES = {
  no_such_bucket: 'BucketNotFound',
  invalid_bucket_name: 'BucketInvalidName',
  access_denied: 'BucketAccessDenied',
  wrong_region: 'BucketWrongRegion',
  invalid_access_key: 'BucketInvalidAccessKey',
  role_not_assumable: 'BucketRoleNotAssumable',
  signature_mismatch: 'BucketSignatureMismatch',
  unsafe_endpoint: 'BucketUnsafeEndpoint',
  redirected: 'BucketRedirected',
  tls_error: 'BucketTlsError',
  not_supported: 'BucketNotSupported',
  endpoint_unreachable: 'BucketUnreachable',
  throttled: 'BucketThrottled',
  server_error: 'BucketServerError',
  unknown: 'BucketUnknownError',
} as const satisfies Record<BucketErrorReason, string>;

/** One of {@link BUCKET_ERROR_NAMES}. */
export type BucketErrorName = (typeof BUCKET_ERROR_NAMES)[BucketErrorReason];

const REASON_KIND: Record<BucketErrorReason, BucketErrorKind> = {
  no_such_bucket: 'permanent',
  invalid_bucket_name: 'permanent',
  access_denied: 'permanent',
  wrong_region: 'permanent',
  invalid_access_key: 'permanent',
  role_not_assumable: 'permanent',
  signature_mismatch: 'permanent',
  unsafe_endpoint: 'permanent',
  redirected: 'permanent',
  tls_error: 'permanent',
  not_supported: 'permanent',
  endpoint_unreachable: 'transient',
  throttled: 'transient',
  server_error: 'transient',
  unknown: 'transient',
};

const reasons = Object.keys(REASON_KIND) as BucketErrorReason[];

/** Error names that fail a run at once: retrying cannot help until the customer changes something. */
export const PERMANENT_BUCKET_ERROR_NAMES: readonly BucketErrorName[] = reasons
  .filter((reason) => REASON_KIND[reason] === 'permanent')
  .map((reason) => BUCKET_ERROR_NAMES[reason]);

/** Error names worth retrying inside the run (with backoff): unreachable, throttled, 5xx, unknown. */
export const TRANSIENT_BUCKET_ERROR_NAMES: readonly BucketErrorName[] = reasons
  .filter((reason) => REASON_KIND[reason] === 'transient')
  .map((reason) => BUCKET_ERROR_NAMES[reason]);

/** A classified bucket failure. `name` is one of {@link BUCKET_ERROR_NAMES}; `message` is safe to show. */
export class BucketError extends SluiceError {
  override readonly name: BucketErrorName;
  readonly reason: BucketErrorReason;
  readonly kind: BucketErrorKind;
  constructor(classification: BucketErrorClassification, options: { cause?: unknown } = {}) {
    super(classification.message, { ...options, retryable: classification.kind === 'transient' });
    this.name = BUCKET_ERROR_NAMES[classification.reason];
    this.reason = classification.reason;
    this.kind = classification.kind;
  }
}

interface ErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  Code?: unknown;
  Region?: unknown;
  BucketRegion?: unknown;
  Endpoint?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $response?: { statusCode?: unknown; headers?: Record<string, unknown> };
}

const UNREACHABLE_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
]);

const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'EPROTO',
]);

const THROTTLE_NAMES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'TooManyRequests',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'ServiceUnavailable',
]);

const SERVER_NAMES = new Set(['InternalError', 'InternalServerError', 'ServiceFailure', 'RequestTimeout']);

function asString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function header(shape: ErrorShape, name: string): string | undefined {
  const headers = shape.$response?.headers;
  if (!headers || typeof headers !== 'object') return undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? asString(value[0]) : asString(value);
  }
  return undefined;
}

const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$|^auto$|^[a-z0-9-]{2,40}$/;

/** The bucket's real region, when the provider says it (header, error field, or message). */
export function regionFromError(error: unknown): string | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const shape = error as ErrorShape;
  const candidates = [
    header(shape, 'x-amz-bucket-region'),
    asString(shape.BucketRegion),
    asString(shape.Region),
  ];
  const message = asString(shape.message) ?? '';
  candidates.push(/expecting '([a-z0-9-]+)'/i.exec(message)?.[1]);
  const endpoint = asString(shape.Endpoint) ?? '';
  const fromEndpoint = /(?:^|\.)s3[.-]([a-z0-9-]+)\.amazonaws\.com/.exec(endpoint)?.[1];
  if (fromEndpoint && fromEndpoint !== 'external-1') candidates.push(fromEndpoint);
  else if (/(?:^|\.)s3(?:-external-1)?\.amazonaws\.com/.test(endpoint)) candidates.push('us-east-1');
  return candidates.find((value): value is string => value !== undefined && REGION.test(value));
}

/** The error of class `type` in `error`'s `cause` chain, if any (the SDK may wrap it as a `cause`). */
function causeOf<T>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    if (current instanceof type) return current;
    current = (current as ErrorShape).cause;
  }
  return undefined;
}

/** Walks `cause` chains (the SDK and lib-storage wrap socket errors) looking for an errno-style code. */
function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = asString((current as ErrorShape).code);
    if (code) return code;
    current = (current as ErrorShape).cause;
  }
  return undefined;
}

function statusOf(shape: ErrorShape): number | undefined {
  const status = shape.$metadata?.httpStatusCode ?? shape.$response?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

function providerName(location: BucketLocation): string {
  if (location.provider === 'gcs') return 'Google Cloud Storage';
  if (location.endpoint !== null) return `The store at ${location.endpoint}`;
  return 'Amazon S3';
}

function where(location: BucketLocation): string {
  return location.endpoint !== null ? location.endpoint : providerName(location);
}

/** Strips anything that looks like an access key id from provider text, and bounds its length. */
function scrub(text: string): string {
  return text
    .replace(/\b(AKIA|ASIA|GOOG)[A-Z0-9]{8,}\b/g, '$1…')
    .replace(/\s+/g, ' ')
    .slice(0, 200);
}

/**
 * A failure to use the destination's KMS key for server-side encryption (`KMS.AccessDeniedException`,
 * `KMS.NotFoundException`, `KMS.DisabledException`, ..., or an AccessDenied that names KMS): permanent, with a
 * message naming the key and the permissions to grant. Undefined for anything else.
 */
function kmsKeyProblem(
  name: string,
  message: string,
  location: BucketLocation,
): BucketErrorClassification | undefined {
  const encryption = location.encryption;
  const aboutKms = name.startsWith('KMS.') || (name === 'AccessDenied' && /\bkms\b/i.test(message));
  if (!aboutKms || encryption?.serverSideEncryption !== 'aws:kms') return undefined;
  const key =
    encryption.kmsKeyId !== undefined
      ? `KMS key ${scrub(encryption.kmsKeyId)}`
      : "the bucket's default KMS key";
  const what =
    name === 'KMS.NotFoundException'
      ? `${key} was not found (check its id or ARN, and that it is in the bucket's region)`
      : name === 'KMS.DisabledException' || name === 'KMS.KMSInvalidStateException'
        ? `${key} is disabled or pending deletion`
        : `the credentials may not use ${key}`;
  return make(
    'access_denied',
    `Amazon S3 could not encrypt objects with ${key} (server-side encryption aws:kms): ${what}. Grant the credentials kms:GenerateDataKey and kms:Decrypt on the key (the key policy must allow them too), or choose another key.`,
  );
}

/** `1048576` → `1 MiB`. */
function formatMebibytes(bytes: number): string {
  return `${Math.round((bytes / 1_048_576) * 10) / 10} MiB`;
}

function make(reason: BucketErrorReason, message: string): BucketErrorClassification {
  return { kind: REASON_KIND[reason], reason, message };
}

/**
 * Classifies a failed bucket operation, once, for everyone: the API's connection test shows the
 * message, the writers throw a {@link BucketError} whose `name` Step Functions Retry/Catch matches.
 *
 * Recognises S3-shaped service exceptions (by `name`, then HTTP status), Node socket and DNS errors,
 * TLS errors, the SDK's `TimeoutError`, a {@link RequestDeadlineError}, a {@link ResponseTooLargeError}, and the pinned lookup's `EUNSAFEADDRESS`. Messages name the
 * bucket, the region or the endpoint, never a credential.
 */
export function classifyBucketError(error: unknown, location: BucketLocation): BucketErrorClassification {
  if (error instanceof BucketError) return { kind: error.kind, reason: error.reason, message: error.message };
  const shape: ErrorShape = error && typeof error === 'object' ? (error as ErrorShape) : {};
  const name = asString(shape.name) ?? asString(shape.Code) ?? '';
  const code = errorCode(error);
  const status = statusOf(shape);
  const bucket = `"${location.bucket}"`;
  const provider = providerName(location);

  const deadline = causeOf(error, RequestDeadlineError);
  if (deadline !== undefined) return notAnswered(location, deadline.deadlineMs);
  const tooLarge = causeOf(error, ResponseTooLargeError);
  if (tooLarge !== undefined) {
    return make(
      'not_supported',
      `${where(location)} sent an answer of ${formatMebibytes(tooLarge.maxBytes)} or more, far more than a bucket's answer to Sluice's requests; Sluice stopped reading it. Check that the endpoint is an S3-compatible store.`,
    );
  }
  if (code === UNSAFE_ADDRESS_CODE) {
    return make(
      'unsafe_endpoint',
      `The endpoint ${where(location)} resolves to a private, loopback or reserved address; only public addresses are allowed.`,
    );
  }

  const kms = kmsKeyProblem(name, asString(shape.message) ?? '', location);
  if (kms !== undefined) return kms;

  switch (name) {
    case 'NoSuchBucket':
      return make('no_such_bucket', `Bucket ${bucket} does not exist${noBucketHint(location)}.`);
    case 'InvalidBucketName':
      return make('invalid_bucket_name', `${provider} says ${bucket} is not a valid bucket name.`);
    case 'AccessDenied':
    case 'Forbidden':
    case 'AllAccessDisabled':
    case 'AccountProblem':
    case 'AccountDisabled':
    case 'UserProjectAccountProblem':
      return accessDenied(location);
    case 'InvalidAccessKeyId':
    case 'InvalidClientTokenId':
    case 'UnrecognizedClientException':
    case 'InvalidToken':
    case 'ExpiredToken':
    case 'InvalidSecurity':
      return make(
        'invalid_access_key',
        `${provider} does not recognise the access key ID. Check that the key exists, is active and belongs to the account that owns ${bucket}.`,
      );
    case 'SignatureDoesNotMatch':
      return make(
        'signature_mismatch',
        `${provider} rejected the request signature: the secret access key is wrong. Enter the secret that belongs to this access key ID.`,
      );
    case 'PermanentRedirect':
    case 'AuthorizationHeaderMalformed':
    case 'IllegalLocationConstraintException':
    case 'InvalidRegion':
      if (name !== 'AuthorizationHeaderMalformed' || regionFromError(error) !== undefined) {
        return wrongRegion(error, location);
      }
      break;
    case 'NotImplemented':
      return make(
        'not_supported',
        `${provider} does not support an operation Sluice needs (${scrub(asString(shape.message) ?? name)}).`,
      );
    case 'TimeoutError':
    case 'RequestTimeTooSkewed':
      if (name === 'TimeoutError') return unreachable(location, 'the connection timed out');
      return make(
        'unknown',
        `${provider} says the request time is too far from its clock. Sluice will retry.`,
      );
    default:
      break;
  }
  if (THROTTLE_NAMES.has(name)) {
    return make('throttled', `${provider} is throttling requests to ${bucket} (${name}). Sluice will retry.`);
  }
  if (SERVER_NAMES.has(name)) {
    return make('server_error', `${provider} had an internal error (${name}). Sluice will retry.`);
  }

  if (code !== undefined && TLS_CODES.has(code)) {
    return make(
      'tls_error',
      `Could not make a secure connection to ${where(location)} (${code}). The endpoint needs a valid TLS certificate.`,
    );
  }
  if (code !== undefined && UNREACHABLE_CODES.has(code)) {
    return unreachable(location, UNREACHABLE_TEXT[code] ?? code);
  }

  if (status !== undefined) {
    if (
      header(shape, 'x-amz-bucket-region') !== undefined &&
      (status === 301 || status === 307 || status === 400)
    ) {
      return wrongRegion(error, location);
    }
    if (status >= 300 && status < 400) {
      return make(
        'redirected',
        `${provider} answered with a redirect (HTTP ${status}); Sluice does not follow redirects. Use the endpoint that serves ${bucket} directly.`,
      );
    }
    if (status === 404)
      return make('no_such_bucket', `Bucket ${bucket} does not exist${noBucketHint(location)}.`);
    if (status === 403) return accessDenied(location);
    if (status === 429 || status === 503) {
      return make(
        'throttled',
        `${provider} is throttling requests to ${bucket} (HTTP ${status}). Sluice will retry.`,
      );
    }
    if (status >= 500)
      return make('server_error', `${provider} had an internal error (HTTP ${status}). Sluice will retry.`);
  }

  const detail = scrub(asString(shape.message) ?? (name || 'unknown error'));
  const label = [name, status !== undefined ? `HTTP ${status}` : undefined].filter(Boolean).join(', ');
  return make('unknown', `Writing to ${bucket} failed${label ? ` (${label})` : ''}: ${detail}`);
}

const UNREACHABLE_TEXT: Record<string, string> = {
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved right now',
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
};

function target(location: BucketLocation): string {
  return location.endpoint ?? (location.provider === 'gcs' ? 'Google Cloud Storage' : 'Amazon S3');
}

/** A request (or a connection test) that ran past its total deadline: the server accepted but did not finish. */
export function notAnswered(location: BucketLocation, deadlineMs: number): BucketErrorClassification {
  return make(
    'endpoint_unreachable',
    `${target(location)} did not answer in ${formatSeconds(deadlineMs)} s. Check the endpoint; Sluice will retry.`,
  );
}

function unreachable(location: BucketLocation, why: string): BucketErrorClassification {
  return make(
    'endpoint_unreachable',
    `Could not reach ${target(location)}: ${why}. Check the endpoint; Sluice will retry.`,
  );
}

function accessDenied(location: BucketLocation): BucketErrorClassification {
  return make(
    'access_denied',
    `Access denied writing to "${location.bucket}". Grant the key permission to put objects under the configured path.`,
  );
}

function noBucketHint(location: BucketLocation): string {
  if (location.provider === 'gcs') return ' in Google Cloud Storage. Check the bucket name';
  if (location.endpoint !== null) return ` at ${location.endpoint}. Check the bucket name`;
  return `. Check the bucket name and the region (${location.region})`;
}

function wrongRegion(error: unknown, location: BucketLocation): BucketErrorClassification {
  const actual = regionFromError(error);
  if (actual !== undefined && actual !== location.region) {
    return make(
      'wrong_region',
      `Bucket "${location.bucket}" is in region ${actual}, not ${location.region}. Set the region to ${actual}.`,
    );
  }
  return make(
    'wrong_region',
    `Bucket "${location.bucket}" is not in region ${location.region}. Set the region the bucket was created in.`,
  );
}

/** {@link classifyBucketError} as a throwable {@link BucketError}, keeping the original as `cause`. */
export function toBucketError(error: unknown, location: BucketLocation): BucketError {
  if (error instanceof BucketError) return error;
  return new BucketError(classifyBucketError(error, location), { cause: error });
}
