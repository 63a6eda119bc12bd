import { isTransientDynamoError } from '@sluice/control';
import { InvalidInputError, ServiceUnavailableError, SluiceError } from '@sluice/core';
import { SecretUnavailableError } from '@sluice/secrets';
import { BucketError, PERMANENT_BUCKET_ERROR_NAMES, TRANSIENT_BUCKET_ERROR_NAMES } from '@sluice/sinks';

/**
 * The one classification of the engine's failures. A Lambda's thrown error `name` becomes the `Error`
 * that Step Functions Retry and Catch match, so every error the engine lets out carries one of the names
 * below: the CDK reads {@link TRANSIENT_ERROR_NAMES} for Retry (backoff and jitter) and never retries
 * {@link PERMANENT_ERROR_NAMES}. The messages are for people: no stack, no secret.
 */

/** The stored secret does not decrypt for this destination (tampered, copied, key refused). */
export class SecretRejectedError extends SluiceError {
  constructor(cause?: unknown) {
    super(
      'The stored secret of this export could not be decrypted. Update the export with its credentials again.',
      { cause },
    );
  }
}

/** KMS throttled or could not be reached while opening the secret. */
export class KmsUnavailableError extends SluiceError {
  constructor(cause?: unknown) {
    super('The encryption service was unavailable while opening the export credentials. Sluice will retry.', {
      cause,
    });
  }
}

/** The control table or the event log throttled or could not be reached. */
export class DatabaseUnavailableError extends SluiceError {
  constructor(cause?: unknown) {
    super("Sluice's database was unavailable for a moment. Sluice will retry.", { cause });
  }
}

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
  'SecretRejectedError',
  'DestinationConfigError',
];

/** Error names retried inside the run, with backoff and jitter, a few attempts. */
export const TRANSIENT_ERROR_NAMES: readonly string[] = [
  ...TRANSIENT_BUCKET_ERROR_NAMES,
  'KmsUnavailableError',
  'DatabaseUnavailableError',
  'UnexpectedExportError',
  ...LAMBDA_SERVICE_ERROR_NAMES,
];

const KNOWN_NAMES = new Set<string>([...PERMANENT_ERROR_NAMES, ...TRANSIENT_ERROR_NAMES]);

/** True when an error already carries one of the classified names. */
export function isClassified(error: unknown): error is Error {
  return error instanceof Error && KNOWN_NAMES.has(error.name);
}

/**
 * Maps any failure to an error with a classified name and a safe message (the original stays as `cause`
 * for the logs, never for the payload).
 */
export function classifyEngineError(error: unknown): Error {
  if (error instanceof BucketError) return error;
  if (isClassified(error)) return error;
  if (error instanceof SecretUnavailableError) {
    return error.retryable ? new KmsUnavailableError(error) : new SecretRejectedError(error);
  }
  if (error instanceof ServiceUnavailableError || isTransientDynamoError(error)) {
    return new DatabaseUnavailableError(error);
  }
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
