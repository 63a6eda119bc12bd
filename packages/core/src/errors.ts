/** One field-level problem with a request, as the API reports it. */
export interface InputIssue {
  path: string;
  message: string;
  allowedValues?: readonly unknown[];
}

/** The base of every error Sluice raises on purpose. Sets `name` and keeps `cause`. */
export class SluiceError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * An error that maps to an HTTP response. `expose` says whether `message` may be shown to the caller;
 * every 5xx is shown as a generic message instead.
 */
export class HttpError extends SluiceError {
  readonly statusCode: number;
  readonly code: string | undefined;
  readonly retryable: boolean;
  readonly issues: InputIssue[] | undefined;
  readonly expose: boolean;
  readonly headers: Record<string, string>;

  constructor(
    statusCode: number,
    message: string,
    options: {
      code?: string;
      retryable?: boolean;
      issues?: InputIssue[];
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.statusCode = statusCode;
    this.code = options.code;
    this.retryable = options.retryable ?? false;
    this.issues = options.issues;
    this.expose = statusCode < 500;
    this.headers = options.headers ?? {};
  }
}

/** 400 invalid_input: a value is not valid. Carries field-level issues. */
export class InvalidInputError extends HttpError {
  constructor(message: string, issues: InputIssue[] = []) {
    super(400, message, { code: 'invalid_input', issues });
  }
}

/** 422: the body does not match the schema (wrong type, unknown enum value, not an object). */
export class UnprocessableError extends HttpError {
  constructor(message: string, issues: InputIssue[] = []) {
    super(422, message, { code: 'unprocessable_entity', issues });
  }
}

/** 400 connection_failed: the test write to the customer's bucket failed. */
export class ConnectionFailedError extends HttpError {
  constructor(message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(400, message, { code: 'connection_failed', ...options });
  }
}

export class UnauthorizedError extends HttpError {
  constructor(message = 'Missing or invalid API key. Send it as "Authorization: Bearer <key>".') {
    super(401, message, { code: 'unauthorized' });
  }
}

export class ForbiddenError extends HttpError {
  constructor(message: string) {
    super(403, message, { code: 'forbidden' });
  }
}

export class NotFoundError extends HttpError {
  constructor(message = 'Data export not found') {
    super(404, message, { code: 'not_found' });
  }
}

export class ConflictError extends HttpError {
  constructor(message: string, code: string) {
    super(409, message, { code });
  }
}

/** 503 SERVICE_UNAVAILABLE with Retry-After: the database throttled or could not be reached. */
export class ServiceUnavailableError extends HttpError {
  constructor(cause?: unknown, retryAfterSeconds = 1) {
    super(503, 'The service could not reach its database for a moment. Retry the request.', {
      code: 'SERVICE_UNAVAILABLE',
      retryable: true,
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause,
    });
  }
}
