import { ForbiddenError, RateLimitedError, UnauthorizedError } from '@sluice/core';
import type { Caller, KeyMeter } from './ports.js';

/** The scopes an API key can carry. */
export const SCOPES = [
  'data_exports:read',
  'data_exports:write',
  'data_exports:delete',
  'subscribers:read',
  'analytics:read',
] as const;
export type Scope = (typeof SCOPES)[number];

/** The roles of an API key's owner. Only owners and admins manage data exports. */
export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

/** What each kind of operation needs. Writes need the read scopes of the data the destination receives. */
export const REQUIRED_SCOPES = {
  read: ['data_exports:read'],
  write: ['data_exports:write', 'subscribers:read', 'analytics:read'],
  delete: ['data_exports:delete'],
} as const satisfies Record<string, readonly Scope[]>;
export type Access = keyof typeof REQUIRED_SCOPES;

/** Why the authorizer could not establish a caller (`authError` in its context). */
export type AuthError = 'missing_api_key' | 'invalid_api_key' | 'unavailable';

/**
 * The context the authorizer hands the API (`requestContext.authorizer.lambda`). HTTP API contexts hold only
 * strings, numbers and booleans, so `scopes` is a comma-separated string.
 */
export interface AuthorizerContext {
  /** The key's public id, for the logs. */
  keyId?: string;
  workspaceId?: string;
  role?: string;
  scopes?: string;
  authError?: AuthError;
}

const UNAUTHORIZED_MESSAGES: Record<'missing_api_key' | 'invalid_api_key', string> = {
  missing_api_key: 'Missing API key. Send it as "Authorization: Bearer <key>".',
  invalid_api_key: 'Invalid API key. Check that it was copied whole and has not been revoked.',
};

const BEARER_RE = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * The key in an `Authorization` header: `undefined` when the header is missing or blank, `''` when it is not
 * `Bearer <one token>` (so it is reported as an invalid key, not a missing one).
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  return BEARER_RE.exec(header.trim())?.[1] ?? '';
}

/**
 * Counts the request against its key and returns the caller as the key is stored now, not as the
 * authorizer's cached verdict saw it: a key revoked or deleted since is a 401, a narrowed key has its
 * new scopes, and a key over its rate limit is a `RateLimitedError` (429).
 */
export async function meteredCaller(meter: KeyMeter, authorization: string | undefined): Promise<Caller> {
  const use = await meter.use(bearerToken(authorization) ?? '');
  if (use.outcome === 'unknown') throw new UnauthorizedError(UNAUTHORIZED_MESSAGES.invalid_api_key);
  if (use.outcome === 'limited') throw new RateLimitedError(use.retryAfterSeconds);
  const { workspaceId, role, scopes } = use.record;
  return { workspaceId, role, scopes };
}

/**
 * Turns the authorizer's context into the caller, or throws `UnauthorizedError` (401) when the authorizer
 * found no valid key or no context is present at all (a route without the authorizer must never pass).
 * `unavailable` (the key store could not be read) is the caller's to map to 503.
 */
export function callerFromContext(context: AuthorizerContext | undefined | null): Caller {
  const authError = context?.authError;
  if (authError === 'missing_api_key' || authError === 'invalid_api_key') {
    throw new UnauthorizedError(UNAUTHORIZED_MESSAGES[authError]);
  }
  if (!context || authError !== undefined || !context.workspaceId || !context.role) {
    throw new UnauthorizedError();
  }
  const scopes = (context.scopes ?? '')
    .split(',')
    .map((scope) => scope.trim())
    .filter((scope) => scope !== '');
  return { workspaceId: context.workspaceId, role: context.role, scopes };
}

/**
 * Checks that the caller may perform an operation of the given kind: the member role may not manage data
 * exports at all; other roles need every scope of {@link REQUIRED_SCOPES}. Throws `ForbiddenError` (403)
 * naming the missing scopes.
 */
export function authorize(caller: Caller, access: Access): void {
  if (caller.role !== 'owner' && caller.role !== 'admin') {
    throw new ForbiddenError(
      `The ${caller.role} role cannot manage data exports; use an owner or admin key.`,
    );
  }
  const missing = REQUIRED_SCOPES[access].filter((scope) => !caller.scopes.includes(scope));
  if (missing.length > 0) {
    throw new ForbiddenError(`API key is missing required scopes: ${missing.join(', ')}`);
  }
}
