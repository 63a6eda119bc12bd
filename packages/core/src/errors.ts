/** One field-level problem with a request, as the API reports it. */
export interface InputIssue {
  path: string;
  message: string;
  allowedValues?: readonly unknown[];
}

/**
 * The one error model. Every error Sluice raises on purpose is a `SluiceError`: its class says what failed
 * (the input, the caller's access, a record's state, the database, the key service, the bucket), `retryable`
 * whether a later attempt can succeed without anyone changing anything. No HTTP status: `@sluice/api` maps
 * these to responses in one place (`errors.ts`), and the engine's error names are what the workflows' Retry
 * and Catch match (`@sluice/engine` `errors.ts`).
 */
export class SluiceError extends Error {
  /** True when retrying the same operation later can succeed. */
  readonly retryable: boolean;

  constructor(message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.retryable = options.retryable ?? false;
  }
}

/** The input: a value is not valid. Carries field-level issues. */
export class InvalidInputError extends SluiceError {
  readonly issues: InputIssue[];

  constructor(message: string, issues: InputIssue[] = []) {
    super(message);
    this.issues = issues;
  }
}

/** The input: the body does not match the schema (wrong type, unknown enum value, not an object). */
export class InputShapeError extends SluiceError {
  readonly issues: InputIssue[];

  constructor(message: string, issues: InputIssue[] = []) {
    super(message);
    this.issues = issues;
  }
}

/** The caller: no valid API key. */
export class UnauthorizedError extends SluiceError {
  constructor(message = 'Missing or invalid API key. Send it as "Authorization: Bearer <key>".') {
    super(message);
  }
}

/** The caller: the key's role or scopes do not allow the operation. */
export class ForbiddenError extends SluiceError {}

/** The caller: its API key sent more requests than its per-key rate limit allows. Retryable after a pause. */
export class RateLimitedError extends SluiceError {
  /** Whole seconds until the key may send again. */
  readonly retryAfterSeconds: number;

  constructor(retryAfterSeconds: number) {
    super(`Too many requests with this API key. Retry after ${retryAfterSeconds} s.`, { retryable: true });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The record: it does not exist for this workspace. */
export class NotFoundError extends SluiceError {
  constructor(message = 'Data export not found') {
    super(message);
  }
}

/** The record: its state does not allow the operation; `code` names which conflict (`conflict`, ...). */
export class ConflictError extends SluiceError {
  readonly code: string;

  constructor(message: string, code: string) {
    super(message);
    this.code = code;
  }
}

/** The bucket: the connection test write to the customer's bucket failed. */
export class ConnectionFailedError extends SluiceError {}

/** The database (control table or event log) throttled or could not be reached. Retryable. */
export class DatabaseUnavailableError extends SluiceError {
  constructor(cause?: unknown) {
    super("Sluice's database was unavailable for a moment. Sluice will retry.", { cause, retryable: true });
  }
}

/** The key service (KMS) throttled or could not be reached while sealing or opening a secret. Retryable. */
export class KmsUnavailableError extends SluiceError {
  constructor(cause?: unknown) {
    super('The encryption service (KMS) was unavailable for a moment. Sluice will retry.', {
      cause,
      retryable: true,
    });
  }
}

/** The key service refused the stored secret of this destination (tampered, copied, key refused). */
export class SecretRejectedError extends SluiceError {
  constructor(cause?: unknown) {
    super(
      'The stored secret of this export could not be decrypted. Update the export with its credentials again.',
      { cause },
    );
  }
}
