/**
 * Serving the OpenAPI document: the routes that need no API key, read by the API handler, the local HTTP
 * adapter and the CDK app alike, and the response itself (JSON, cacheable, with an ETag).
 */
import { createHash } from 'node:crypto';
import { openapiDocument } from './document.js';

/** Where the document is served, under both prefixes of the API. */
export const OPENAPI_PATHS = ['/v1/openapi.json', '/api/v1/openapi.json'] as const;

/** A route served without the authorizer: API Gateway calls the API function with no authorizer context. */
export interface PublicRoute {
  method: 'GET';
  path: string;
}

/** The only routes that need no API key: `GET` of the OpenAPI document. Every other route has the authorizer. */
export const PUBLIC_ROUTES: readonly PublicRoute[] = OPENAPI_PATHS.map((path) => ({ method: 'GET', path }));

/** Whether a method and raw path is one of {@link PUBLIC_ROUTES}. */
export function isPublicRoute(method: string, rawPath: string): boolean {
  const upper = method.toUpperCase();
  return PUBLIC_ROUTES.some((route) => route.method === upper && route.path === rawPath);
}

/** Whether a raw path is the document's, whatever the method. */
export function isOpenApiPath(rawPath: string): boolean {
  return (OPENAPI_PATHS as readonly string[]).includes(rawPath);
}

/** How long clients and proxies may keep the document: it changes only with a deployment. */
export const OPENAPI_CACHE_CONTROL = 'public, max-age=300';

/** The served body and its strong ETag, computed once per container. */
const BODY = JSON.stringify(openapiDocument);
const ETAG = `"${createHash('sha256').update(BODY).digest('base64url').slice(0, 27)}"`;

/** Whether an `If-None-Match` value names the current ETag (or is `*`); weak tags compare equal too. */
function matchesEtag(ifNoneMatch: string | undefined): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === ETAG);
}

/**
 * The response to `GET` of the document: `200` with the JSON, or `304` without a body when `If-None-Match`
 * names the current ETag. Both carry the ETag and {@link OPENAPI_CACHE_CONTROL}.
 */
export function openApiResponse(ifNoneMatch: string | undefined): {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
} {
  const headers = { etag: ETAG, 'cache-control': OPENAPI_CACHE_CONTROL };
  if (matchesEtag(ifNoneMatch)) return { statusCode: 304, headers, body: '' };
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: BODY,
  };
}
