import { isTransientDynamoError } from '@sluice/control';
import {
  DatabaseUnavailableError,
  InvalidInputError,
  KmsUnavailableError,
  SecretRejectedError,
  SluiceError,
} from '@sluice/core';
import { BucketError, PERMANENT_BUCKET_ERROR_NAMES, TRANSIENT_BUCKET_ERROR_NAMES } from '@sluice/sinks';

/**
 * The engine's failures, by name. A Lambda's thrown error `name` becomes the `Error` that Step Functions Retry
 * and Catch match, so every error the engine lets out carries one of the names below: the domain errors of
 * `@sluice/core` (the database, the key service) and `@sluice/sinks` (the bucket) pass through as they are,
 * and every workflow's Retry reads {@link TRANSIENT_ERROR_NAMES} (backoff and jitter) and never retries
 * {@link PERMANENT_ERROR_NAMES}. The messages are for people: no stack, no secret.
 */

/** The destination's stored location cannot be used (for example a region missing for Amazon S3). */
export class DestinationConfigError extends SluiceError {}

/** Anything not classified above: retried a few times, then recorded with a generic message. */
export class UnexpectedExportError extends SluiceError {
  constructor(cause?: unknown) {
    super('An internal error interrupted the export. Sluice will retry.', { cause });
  }
}

/** Lambda service errors Step Functions reports for the task itself: worth retrying. */
export const LAMBDA_SERVICE_ERROR_NAMES: readonly string[] = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.TooManyRequestsException',
  'Lambda.ClientExecutionTimeoutException',
  'Lambda.Unknown',
];

/** Error names that fail a run at once: nothing changes until someone fixes the destination. */
export const PERMANENT_ERROR_NAMES: readonly string[] = [
  ...PERMANENT_BUCKET_ERROR_NAMES,
  SecretRejectedError.name,
  DestinationConfigError.name,
];

/**
 * Error names retried with backoff and jitter, a few attempts: the one list every workflow's Retry reads
 * (ExportRun's tasks and Dispatch's pages).
 */
export const TRANSIENT_ERROR_NAMES: readonly string[] = [
  ...TRANSIENT_BUCKET_ERROR_NAMES,
  KmsUnavailableError.name,
  DatabaseUnavailableError.name,
  UnexpectedExportError.name,
  ...LAMBDA_SERVICE_ERROR_NAMES,
];

const KNOWN_NAMES = new Set<string>([...PERMANENT_ERROR_NAMES, ...TRANSIENT_ERROR_NAMES]);

/** True when an error already carries one of the classified names. */
export function isClassified(error: unknown): error is Error {
  return error instanceof Error && KNOWN_NAMES.has(error.name);
}

/**
 * Gives any failure a classified name and a safe message: a domain error with a listed name passes as it is;
 * a raw DynamoDB throttle (the event log's reader) is the database's; a location the endpoint rules refuse is
 * the destination's configuration; anything else is unexpected (the original stays as `cause` for the logs,
 * never for the payload).
 */
export function classifyEngineError(error: unknown): Error {
  if (error instanceof BucketError || isClassified(error)) return error;
  if (isTransientDynamoError(error)) return new DatabaseUnavailableError(error);
  if (error instanceof InvalidInputError) return new DestinationConfigError(error.message, { cause: error });
  return new UnexpectedExportError(error);
}

/** The `{ Error, Cause }` Step Functions hands a Catch. */
export interface StepFunctionsError {
  Error?: string;
  Cause?: string;
}

const MAX_MESSAGE_LENGTH = 500;

/**
 * The human-readable message of a caught failure, for `lastError` and the run record. The Cause is the
 * Lambda error as JSON (`errorType`, `errorMessage`, `trace`): only the message of a classified error is
 * used (those messages are written to be shown); anything else gets a generic sentence naming the error
 * type. Never a stack trace, never a secret.
 */
export function describeFailure(error: StepFunctionsError | undefined): string {
  let type = error?.Error ?? 'UnknownError';
  let message: string | undefined;
  if (typeof error?.Cause === 'string') {
    try {
      const cause = JSON.parse(error.Cause) as { errorType?: unknown; errorMessage?: unknown };
      if (typeof cause.errorType === 'string') type = cause.errorType;
      if (typeof cause.errorMessage === 'string') message = cause.errorMessage;
    } catch {
      // Not JSON (a States.* error): the type alone is described.
    }
  }
  let text: string;
  if (KNOWN_NAMES.has(type) && !LAMBDA_SERVICE_ERROR_NAMES.includes(type) && message !== undefined) {
    text = message;
  } else if (type.startsWith('Lambda.') || type === 'States.Timeout' || type === 'Sandbox.Timedout') {
    text = `The export worker did not finish (${type}). Sluice will retry.`;
  } else {
    text = `An internal error interrupted the export (${type.slice(0, 80)}). Sluice will retry.`;
  }
  const single = text.replace(/\s+/g, ' ').trim();
  return single.length > MAX_MESSAGE_LENGTH ? `${single.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : single;
}
