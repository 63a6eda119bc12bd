import type { Logger } from '@aws-lambda-powertools/logger';
import { type AuthorizerContext, bearerToken } from '@sluice/api';
import { type ApiKeyRecord, parseApiKey } from '@sluice/control';
import { createLogger, DatabaseUnavailableError } from '@sluice/core';

/** The authorizer's logger. It logs outcomes only, never a key or any part of one. */
export const logger = createLogger();

/** What the authorizer needs from the control table. */
export interface ApiKeyFinder {
  findApiKey(apiKey: string): Promise<ApiKeyRecord | undefined>;
}

/** The subset of an HTTP API (payload 2.0) REQUEST authorizer event that is read. */
export interface AuthorizerRequest {
  identitySource?: string[] | null;
  headers?: Record<string, string | undefined>;
}

/** A simple response (`enableSimpleResponses`), always authorized: see {@link createAuthorizer}. */
export interface AuthorizerResponse {
  isAuthorized: true;
  context: AuthorizerContext & Record<string, string>;
}

function authorizationHeader(request: AuthorizerRequest): string | undefined {
  return (
    request.identitySource?.[0] ??
    Object.entries(request.headers ?? {}).find(([name]) => name.toLowerCase() === 'authorization')?.[1]
  );
}

/**
 * Builds the HTTP API Lambda authorizer (payload 2.0, simple responses).
 *
 * Why it never answers `isAuthorized: false`: an HTTP API answers a denied request itself, with its own body
 * (`{"message":"Forbidden"}` or `{"message":"Unauthorized"}`), which would break the API's error format
 * (`{success:false, error, code, retryable}`) and its 401 status. So the authorizer only establishes who the
 * caller is and always lets the request through:
 * - a valid key: context `{keyId, workspaceId, role, scopes}` (scopes comma-separated: contexts hold only strings);
 * - no key: `{authError: 'missing_api_key'}`; a malformed, mistyped or unknown key: `{authError: 'invalid_api_key'}`;
 * - the key store unreachable: `{authError: 'unavailable'}`.
 * The API handler turns any `authError`, or a missing context, into 401 (503 for `unavailable`) before doing
 * anything else, so no route is reachable without a valid key.
 *
 * The key's format and checksum are checked before any database read (a typo or a random value costs no
 * read), and the key is never logged. API Gateway caches this answer per `Authorization` value for at most a
 * minute; the API function reads the key again on every request (its rate limit's write), so a revoked or
 * narrowed key does not even wait for that.
 */
export function createAuthorizer(store: ApiKeyFinder, log: Logger = logger) {
  return async (request: AuthorizerRequest): Promise<AuthorizerResponse> => {
    const token = bearerToken(authorizationHeader(request));
    if (token === undefined) return deny('missing_api_key', log);
    const parsed = parseApiKey(token);
    if (!parsed.ok) return deny('invalid_api_key', log, parsed.reason);
    let record: ApiKeyRecord | undefined;
    try {
      record = await store.findApiKey(parsed.apiKey);
    } catch (error) {
      log.warn('API key lookup failed', {
        reason: error instanceof DatabaseUnavailableError ? 'unavailable' : 'error',
        errorName: error instanceof Error ? error.name : undefined,
      });
      return { isAuthorized: true, context: { authError: 'unavailable' } };
    }
    if (record === undefined) return deny('invalid_api_key', log, 'unknown');
    log.info('Authorized', { keyId: record.keyId, workspaceId: record.workspaceId, role: record.role });
    return {
      isAuthorized: true,
      context: {
        keyId: record.keyId,
        workspaceId: record.workspaceId,
        role: record.role,
        scopes: record.scopes.join(','),
      },
    };
  };
}

function deny(
  authError: 'missing_api_key' | 'invalid_api_key',
  log: Logger,
  reason?: string,
): AuthorizerResponse {
  log.info('Not authenticated', { authError, reason });
  return { isAuthorized: true, context: { authError } };
}
