/**
 * The one mapping from Sluice's errors to HTTP. Domain errors (`@sluice/core`) say what failed and whether a
 * retry can help; here each becomes a status, the API's error `code` and the message the caller sees. Errors
 * that only the HTTP layer raises (unknown route, wrong method, empty body) are `HttpError`s already; the JSON
 * body parser's refusal is mapped here too.
 */
import {
  ConflictError,
  ConnectionFailedError,
  DatabaseUnavailableError,
  ForbiddenError,
  InputShapeError,
  type InputIssue,
  InvalidInputError,
  KmsUnavailableError,
  NotFoundError,
  RateLimitedError,
  SecretRejectedError,
  SluiceError,
  UnauthorizedError,
} from '@sluice/core';

/**
 * An error that is an HTTP response. `expose` says whether `message` may be shown to the caller; every 5xx is
 * shown as a generic message unless the mapping wrote its message for the caller.
 */
export class HttpError extends SluiceError {
  readonly statusCode: number;
  readonly code: string | undefined;
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
      /** @default statusCode < 500 */
      expose?: boolean;
    } = {},
  ) {
    super(message, { cause: options.cause, retryable: options.retryable ?? false });
    this.statusCode = statusCode;
    this.code = options.code;
    this.issues = options.issues;
    this.expose = options.expose ?? statusCode < 500;
    this.headers = options.headers ?? {};
  }
}

/** A 503 the caller may retry at once: a dependency (`what`) was unavailable for a moment. */
function unavailable(what: string, error: SluiceError): HttpError {
  return new HttpError(503, `The service could not reach its ${what} for a moment. Retry the request.`, {
    code: 'SERVICE_UNAVAILABLE',
    retryable: true,
    headers: { 'Retry-After': '1' },
    cause: error.cause,
    expose: true,
  });
}

/** The package that names itself in the `cause` of the errors `@middy/http-json-body-parser` throws. */
const JSON_BODY_PARSER = '@middy/http-json-body-parser';

/**
 * Whether `error` is `@middy/http-json-body-parser` refusing a body. Its cause carries the body itself, so the
 * error is never logged or shown, only mapped.
 */
function isJsonBodyParserError(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return (
    typeof cause === 'object' &&
    cause !== null &&
    (cause as { package?: unknown }).package === JSON_BODY_PARSER
  );
}

/**
 * Maps an error to its HTTP form: an `HttpError` as it is, a domain error by its class, anything else (an
 * unexpected error, or a domain error the API has no answer for) `undefined`, which the error handler turns
 * into a generic 500.
 */
export function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  // The API checks emptiness and the content type first, so the parser's one refusal left is "not JSON".
  if (isJsonBodyParserError(error)) {
    return new HttpError(400, 'The request body is not valid JSON.', { code: 'invalid_json' });
  }
  if (error instanceof InvalidInputError) {
    return new HttpError(400, error.message, { code: 'invalid_input', issues: error.issues });
  }
  if (error instanceof InputShapeError) {
    return new HttpError(422, error.message, { code: 'unprocessable_entity', issues: error.issues });
  }
  if (error instanceof ConnectionFailedError) {
    return new HttpError(400, error.message, {
      code: 'connection_failed',
      retryable: error.retryable,
      cause: error.cause,
    });
  }
  if (error instanceof UnauthorizedError) return new HttpError(401, error.message, { code: 'unauthorized' });
  if (error instanceof ForbiddenError) return new HttpError(403, error.message, { code: 'forbidden' });
  if (error instanceof RateLimitedError) {
    return new HttpError(429, error.message, {
      code: 'rate_limited',
      retryable: true,
      headers: { 'Retry-After': String(error.retryAfterSeconds) },
    });
  }
  if (error instanceof NotFoundError) return new HttpError(404, error.message, { code: 'not_found' });
  if (error instanceof ConflictError) return new HttpError(409, error.message, { code: error.code });
  // The stored secret will not open (another key, a damaged record): no retry helps until the credentials are
  // sent again, so a clear 409 and never a retryable 500.
  if (error instanceof SecretRejectedError) {
    return new HttpError(409, error.message, { code: 'secret_rejected', retryable: false });
  }
  if (error instanceof DatabaseUnavailableError) return unavailable('database', error);
  if (error instanceof KmsUnavailableError) return unavailable('key service', error);
  return undefined;
}
