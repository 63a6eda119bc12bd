import { Logger } from '@aws-lambda-powertools/logger';
import { DatabaseUnavailableError, InvalidInputError, UnauthorizedError } from '@sluice/core';
import { describe, expect, it, vi } from 'vitest';
import { authorize, callerFromContext, SCOPES } from './auth.js';
import {
  type ApiHandlerOptions,
  checkJsonBody,
  createApiHandler,
  errorResponse,
  MAX_BODY_BYTES,
  hasEmptyOrDotSegment,
  matchRoute,
} from './http.js';
import { openapiDocument } from './openapi/document.js';
import { isPublicRoute, OPENAPI_PATHS } from './openapi/serve.js';

describe('errorResponse', () => {
  it('maps an input error to 400 and the error body', () => {
    const response = errorResponse(new InvalidInputError('Bad', [{ path: 'name', message: 'Bad' }]));
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body)).toEqual({
      success: false,
      error: 'Bad',
      code: 'invalid_input',
      retryable: false,
      issues: [{ path: 'name', message: 'Bad' }],
    });
  });

  it('adds Retry-After to a 503', () => {
    const response = errorResponse(new DatabaseUnavailableError(new Error('ECONNREFUSED')));
    expect(response.statusCode).toBe(503);
    expect(response.headers['Retry-After']).toBe('1');
  });

  it('turns anything else into a generic 500, logged, never shown', () => {
    // Prepare
    const log = new Logger({ serviceName: 'test' });
    const spy = vi.spyOn(log, 'error').mockImplementation(() => undefined);

    // Act
    const response = errorResponse(new TypeError('secret internals at line 42'), log);

    // Assess
    expect(response.statusCode).toBe(500);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(response.body)).toEqual({
      success: false,
      error: 'Internal error',
      code: 'internal_error',
      retryable: true,
    });
    expect(spy).toHaveBeenCalledOnce();
  });
});

describe('matchRoute', () => {
  it.each([
    ['/v1/data-exports', { route: 'collection', id: '' }],
    ['/api/v1/data-exports', { route: 'collection', id: '' }],
    ['/api/v1/data-exports/exp_1', { route: 'item', id: 'exp_1' }],
    ['/v1/data-exports/exp_1/test', { route: 'test', id: 'exp_1' }],
    ['/v1/data-exports/exp_1/run', { route: 'run', id: 'exp_1' }],
    ['/v1/data-exports/exp_1/runs', { route: 'runs', id: 'exp_1' }],
    ['/v2/data-exports', undefined],
    ['/v1/data-exports/a/b', undefined],
    ['/v1/data-exports/%E0%A4%A', undefined],
    ['/v1/data-exports/exp_1/', undefined],
    ['/v1/data-exports/', undefined],
  ])('%s', (path, expected) => {
    expect(matchRoute(path)).toEqual(expected);
  });
});

describe('hasEmptyOrDotSegment', () => {
  it.each([
    ['/v1/data-exports/exp_1', false],
    ['/v1/data-exports/exp_1/backfills/bf_0123456789abcdef01234567', false],
    ['/v1/data-exports/exp_1.', false],
    ['/v1/data-exports/exp_1/', true],
    ['/v1/data-exports//exp_1', true],
    ['/v1/data-exports/exp_1/backfills/..', true],
    ['/v1/data-exports/exp_1/backfills/.', true],
    ['/v1/data-exports/exp_1/backfills/%2e%2E', true],
    ['/v1/data-exports/exp_1/backfills/.%2e/', true],
  ])('%s', (path, expected) => {
    expect(hasEmptyOrDotSegment(path)).toBe(expected);
  });
});

describe('checkJsonBody', () => {
  const request = (body: string, headers: Record<string, string>, isBase64Encoded = false) => ({
    rawPath: '/v1/data-exports',
    body,
    isBase64Encoded,
    headers,
    requestContext: { http: { method: 'POST' } },
  });

  it('accepts +json media types in any case and refuses others', () => {
    expect(() =>
      checkJsonBody(request('{}', { 'content-type': 'application/merge-patch+json' })),
    ).not.toThrow();
    expect(() =>
      checkJsonBody(request('{}', { 'content-type': 'Application/JSON ; charset=utf-8' })),
    ).not.toThrow();
    expect(() => checkJsonBody(request('{}', { 'content-type': 'text/plain' }))).toThrow(/Content-Type/);
  });

  it('measures a base64 body decoded', () => {
    const body = Buffer.from(`"${'a'.repeat(MAX_BODY_BYTES)}"`).toString('base64');
    expect(() => checkJsonBody(request(body, { 'content-type': 'application/json' }, true))).toThrow(/limit/);
  });
});

describe('createApiHandler: JSON bodies', () => {
  const owner = {
    workspaceId: 'ws_1',
    role: 'owner',
    scopes: SCOPES.join(','),
  };
  const api = createApiHandler({
    store: {} as ApiHandlerOptions['store'],
    sealer: {} as ApiHandlerOptions['sealer'],
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
  });
  const post = (body: string, options: { contentType?: string; base64?: boolean; lambda?: object } = {}) => ({
    rawPath: '/v1/data-exports',
    body: options.base64 ? Buffer.from(body).toString('base64') : body,
    isBase64Encoded: options.base64 ?? false,
    headers: options.contentType === undefined ? {} : { 'content-type': options.contentType },
    requestContext: { http: { method: 'POST' }, authorizer: { lambda: options.lambda ?? owner } },
  });
  const answer = async (request: ReturnType<typeof post>) => {
    const response = await api(request);
    return { status: response.statusCode, code: JSON.parse(response.body).code };
  };

  it.each([
    ['malformed JSON', post('{"name":', { contentType: 'application/json' }), 400, 'invalid_json'],
    [
      'malformed base64 JSON',
      post('{', { contentType: 'application/json', base64: true }),
      400,
      'invalid_json',
    ],
    ['an empty body', post('  ', { contentType: 'application/json' }), 400, 'invalid_json'],
    ['no content type', post('{}'), 415, 'unsupported_media_type'],
    [
      'a form body',
      post('a=1', { contentType: 'application/x-www-form-urlencoded' }),
      415,
      'unsupported_media_type',
    ],
  ])('answers %s in the API error format', async (_, request, status, code) => {
    expect(await answer(request)).toEqual({ status, code });
  });

  it('parses a base64 body and hands the value to validation', async () => {
    // Act
    const response = await api(post('{"name":7}', { contentType: 'application/json', base64: true }));

    // Assess: the body was read as JSON (not invalid_json), and validation found what is wrong with it.
    expect(response.statusCode).toBe(422);
    expect(JSON.parse(response.body).issues).toContainEqual(expect.objectContaining({ path: 'name' }));
  });

  it('asks for the API key before it reads the body', async () => {
    const request = post('{', { contentType: 'application/json', lambda: { authError: 'missing_api_key' } });
    expect((await answer(request)).status).toBe(401);
  });
});

describe('auth', () => {
  it('turns a missing context or an authError into 401', () => {
    expect(() => callerFromContext(undefined)).toThrow(UnauthorizedError);
    expect(errorResponse(new UnauthorizedError()).statusCode).toBe(401);
    expect(() => callerFromContext({ authError: 'invalid_api_key' })).toThrow(/Invalid API key/);
    expect(() => callerFromContext({ authError: 'missing_api_key' })).toThrow(/Missing API key/);
  });

  it('parses the scopes and checks them', () => {
    const caller = callerFromContext({
      workspaceId: 'ws',
      role: 'owner',
      scopes: 'data_exports:read, analytics:read',
    });
    expect(caller.scopes).toEqual(['data_exports:read', 'analytics:read']);
    expect(() => authorize(caller, 'read')).not.toThrow();
    expect(() => authorize(caller, 'write')).toThrow(
      'API key is missing required scopes: data_exports:write, subscribers:read',
    );
    expect(() => authorize({ ...caller, role: 'member' }, 'read')).toThrow(/member role/);
  });
});

describe('createApiHandler with a cached "unavailable" verdict', () => {
  const request = (authorizerContext: Record<string, string>) =>
    ({
      rawPath: '/v1/data-exports',
      rawQueryString: '',
      headers: { authorization: 'Bearer x' },
      requestContext: {
        requestId: 'r1',
        http: { method: 'GET', path: '/v1/data-exports' },
        authorizer: { lambda: authorizerContext },
      },
      isBase64Encoded: false,
    }) as unknown as Parameters<ReturnType<typeof createApiHandler>>[0];
  const store = { listDestinations: async () => [] } as unknown as ApiHandlerOptions['store'];
  const sealer = {} as ApiHandlerOptions['sealer'];
  const log = new Logger({ serviceName: 'test', logLevel: 'SILENT' });

  it('checks the key again and serves the request once the store answers', async () => {
    // Prepare
    const recheckKey = vi.fn(async () => ({
      workspaceId: 'ws_1',
      role: 'owner',
      scopes: 'data_exports:read',
    }));
    const api = createApiHandler({ store, sealer, logger: log, recheckKey });

    // Act
    const response = await api(request({ authError: 'unavailable' }));

    // Assess
    expect(recheckKey).toHaveBeenCalledOnce();
    expect(response.statusCode).toBe(200);
  });

  it('is a 503 with Retry-After while the store is still unavailable', async () => {
    const api = createApiHandler({
      store,
      sealer,
      logger: log,
      recheckKey: async () => ({ authError: 'unavailable' }),
    });

    const response = await api(request({ authError: 'unavailable' }));

    expect(response.statusCode).toBe(503);
    expect(response.headers?.['Retry-After']).toBe('1');
  });
});

describe('createApiHandler: the OpenAPI document', () => {
  const api = createApiHandler({
    store: {} as ApiHandlerOptions['store'],
    sealer: {} as ApiHandlerOptions['sealer'],
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
  });
  const request = (
    method: string,
    rawPath: string,
    { headers = {}, lambda }: { headers?: Record<string, string>; lambda?: Record<string, string> } = {},
  ) => ({
    rawPath,
    headers,
    requestContext: { http: { method }, ...(lambda ? { authorizer: { lambda } } : {}) },
  });
  const owner = { workspaceId: 'ws_1', role: 'owner', scopes: 'data_exports:read' };

  it.each(OPENAPI_PATHS)('serves GET %s without an API key, cacheable, as JSON', async (path) => {
    // Act
    const response = await api(request('GET', path));

    // Assess
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('public, max-age=300');
    expect(response.headers.etag).toMatch(/^"[\w-]{27}"$/);
    expect(JSON.parse(response.body)).toEqual(openapiDocument);
  });

  it('answers 304 without a body when If-None-Match names the current ETag, weak or in a list', async () => {
    // Prepare
    const { etag } = (await api(request('GET', '/v1/openapi.json'))).headers;

    // Act
    const same = await api(
      request('GET', '/v1/openapi.json', { headers: { 'if-none-match': `"x", W/${etag}` } }),
    );
    const other = await api(request('GET', '/v1/openapi.json', { headers: { 'if-none-match': '"x"' } }));

    // Assess
    expect(same).toMatchObject({ statusCode: 304, body: '', headers: { etag } });
    expect(other.statusCode).toBe(200);
  });

  it('keeps every other method of the path behind the API key: 401 without one, 405 with Allow: GET', async () => {
    // Act
    const anonymous = await api(request('POST', '/api/v1/openapi.json'));
    const authorized = await api(request('DELETE', '/api/v1/openapi.json', { lambda: owner }));

    // Assess
    expect(anonymous.statusCode).toBe(401);
    expect(authorized.statusCode).toBe(405);
    expect(authorized.headers.Allow).toBe('GET');
  });

  it('serves only the exact paths: a neighbour still needs a key', async () => {
    // Act
    const responses = await Promise.all(
      ['/v1/openapi.json/', '/v2/openapi.json', '/v1/openapi.yaml', '/openapi.json'].map((path) =>
        api(request('GET', path)),
      ),
    );

    // Assess
    expect(responses.map((response) => response.statusCode)).toEqual([401, 401, 401, 401]);
  });
});

describe('isPublicRoute', () => {
  it.each([
    ['GET', '/v1/openapi.json', true],
    ['get', '/api/v1/openapi.json', true],
    ['POST', '/v1/openapi.json', false],
    ['GET', '/v1/openapi.json/', false],
    ['GET', '/v1/data-exports', false],
  ])('%s %s: %s', (method, path, expected) => {
    expect(isPublicRoute(method, path)).toBe(expected);
  });
});
