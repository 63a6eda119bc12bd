/**
 * The HTTP side of the Data Exports API, on middy: the Lambda context on every log line, one router for `/v1`
 * and `/api/v1`, `@middy/http-json-body-parser` for the bodies of create and update, and the one error handler.
 * It speaks the shape of an API Gateway HTTP API (payload 2.0) event: {@link HttpRequest} and
 * {@link HttpResponse} are the subsets it reads and writes.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy, { type MiddlewareObj, type Request } from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import { createLogger, DatabaseUnavailableError, DEFAULT_EVENT_RETENTION_MS } from '@sluice/core';
import type { Context } from 'aws-lambda';
import { CONNECTION_TEST_DEADLINE_MS, NO_ALLOWED_ENDPOINTS, testConnection } from '@sluice/sinks';
import { type Access, type AuthorizerContext, authorize, callerFromContext, meteredCaller } from './auth.js';
import { HttpError, toHttpError } from './errors.js';
import { externalIdSource } from './external-ids.js';
import { isOpenApiPath, openApiResponse } from './openapi/serve.js';
import type { ApiBackfillStore, ApiSealer, ApiStore, Caller, ConnectionTester, KeyMeter } from './ports.js';
import {
  cancelBackfill,
  createBackfill,
  getBackfill,
  listBackfills,
  retryBackfill,
} from './use-cases/backfills.js';
import { createDataExport } from './use-cases/create-data-export.js';
import { deleteDataExport } from './use-cases/delete-data-export.js';
import { newDestinationId, type UseCaseDeps } from './use-cases/deps.js';
import { getDataExport } from './use-cases/get-data-export.js';
import { listDataExportRuns } from './use-cases/list-data-export-runs.js';
import { listDataExports } from './use-cases/list-data-exports.js';
import { listChildOrganizations } from './use-cases/organizations.js';
import { runDataExport } from './use-cases/run-data-export.js';
import { testDataExport } from './use-cases/test-data-export.js';
import { updateDataExport } from './use-cases/update-data-export.js';

/** Largest JSON body the API reads; API Gateway itself allows 10 MB. */
export const MAX_BODY_BYTES = 64 * 1024;

/** The fields of an API Gateway v2 event the API reads. */
export interface HttpRequest {
  rawPath: string;
  rawQueryString?: string;
  /** Lower-cased names, as API Gateway v2 delivers them. */
  headers?: Record<string, string | undefined>;
  /** The raw body; on create and update, the JSON body parser replaces it with the parsed value. */
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: {
    http: { method: string };
    requestId?: string;
    authorizer?: { lambda?: AuthorizerContext | null } | null;
  };
}

/** An API Gateway v2 structured response. */
export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** The API's Powertools logger (JSON lines). It never logs a request body, a header or a secret. */
export const logger = createLogger();

/** What an operation runs, once the caller is known and authorized. */
export type Handler = (context: {
  deps: UseCaseDeps;
  caller: Caller;
  id: string;
  /** The second id of the path (a backfill's), or '' when the route has none. */
  subId: string;
  request: HttpRequest;
  /** The parsed JSON body, for an operation that {@link Operation.readsBody}. */
  body: unknown;
}) => Promise<{ status: number; body: unknown }>;

/** One operation of the API: its OpenAPI id, the access it needs, and what it runs. */
export interface Operation {
  operationId: string;
  access: Access;
  /** Whether it takes a JSON body (checked by {@link checkJsonBody}, then parsed). @default false */
  readsBody?: boolean;
  run: Handler;
}

/**
 * The operations of the API by route name (see {@link matchRoute}) and method; each `operationId` is the
 * OpenAPI document's (`document.test.ts` checks the two agree).
 */
export const ROUTES: Readonly<Record<string, Partial<Record<string, Operation>>>> = {
  collection: {
    GET: {
      operationId: 'listDataExports',
      access: 'read',
      run: async ({ deps, caller }) => ok(await listDataExports(deps, caller)),
    },
    POST: {
      operationId: 'createDataExport',
      access: 'write',
      readsBody: true,
      run: async ({ deps, caller, body }) => ({
        status: 201,
        body: await createDataExport(deps, caller, body),
      }),
    },
  },
  item: {
    GET: {
      operationId: 'getDataExport',
      access: 'read',
      run: async ({ deps, caller, id }) => ok(await getDataExport(deps, caller, id)),
    },
    PATCH: {
      operationId: 'updateDataExport',
      access: 'write',
      readsBody: true,
      run: async ({ deps, caller, id, body }) => ok(await updateDataExport(deps, caller, id, body)),
    },
    DELETE: {
      operationId: 'deleteDataExport',
      access: 'delete',
      run: async ({ deps, caller, id }) => ok(await deleteDataExport(deps, caller, id)),
    },
  },
  test: {
    POST: {
      operationId: 'testDataExport',
      access: 'write',
      run: async ({ deps, caller, id }) => ok(await testDataExport(deps, caller, id)),
    },
  },
  run: {
    POST: {
      operationId: 'runDataExport',
      access: 'write',
      run: async ({ deps, caller, id }) => ok(await runDataExport(deps, caller, id)),
    },
  },
  runs: {
    GET: {
      operationId: 'listDataExportRuns',
      access: 'read',
      run: async ({ deps, caller, id, request }) =>
        ok(
          await listDataExportRuns(
            deps,
            caller,
            id,
            queryParam(request, 'limit'),
            queryParam(request, 'nextToken'),
          ),
        ),
    },
  },
  backfills: {
    GET: {
      operationId: 'listBackfills',
      access: 'read',
      run: async ({ deps, caller, id, request }) =>
        ok(
          await listBackfills(
            deps,
            caller,
            id,
            queryParam(request, 'limit'),
            queryParam(request, 'nextToken'),
          ),
        ),
    },
    POST: {
      operationId: 'createBackfill',
      access: 'write',
      readsBody: true,
      run: async ({ deps, caller, id, body }) => ({
        status: 202,
        body: await createBackfill(deps, caller, id, body),
      }),
    },
  },
  backfill: {
    GET: {
      operationId: 'getBackfill',
      access: 'read',
      run: async ({ deps, caller, id, subId }) => ok(await getBackfill(deps, caller, id, subId)),
    },
    DELETE: {
      operationId: 'cancelBackfill',
      access: 'write',
      run: async ({ deps, caller, id, subId }) => ok(await cancelBackfill(deps, caller, id, subId)),
    },
  },
  organizationChildren: {
    GET: {
      operationId: 'listChildOrganizations',
      access: 'read',
      run: async ({ deps, caller }) => ok(await listChildOrganizations(deps, caller)),
    },
  },
  backfillRetry: {
    POST: {
      operationId: 'retryBackfill',
      access: 'write',
      run: async ({ deps, caller, id, subId }) => ({
        status: 202,
        body: await retryBackfill(deps, caller, id, subId),
      }),
    },
  },
};

function ok(body: unknown): { status: number; body: unknown } {
  return { status: 200, body };
}

const PATH_RE =
  /^\/(?:api\/)?v1\/data-exports(?:\/([^/]+)(?:\/(test|run|runs|backfills)(?:\/([^/]+)(?:\/(retry))?)?)?)?$/;
/** `/v1/organizations/children` (the caller's workspace's children). */
const ORGANIZATION_CHILDREN_RE = /^\/(?:api\/)?v1\/organizations\/children$/;

/**
 * True when a path has an empty segment (`//`, a trailing `/`) or a dot segment (`.`, `..`, raw or
 * percent-encoded): such a path never names what the same path without it names. A client that builds
 * `…/backfills/${id}` from an id `..` must not reach `…/<export id>` (a DELETE there deletes the export).
 */
export function hasEmptyOrDotSegment(rawPath: string): boolean {
  return rawPath
    .split('/')
    .slice(1)
    .some((segment) => {
      const plain = segment.replace(/%2e/gi, '.');
      return plain === '' || plain === '.' || plain === '..';
    });
}

/**
 * Matches a raw path to a route name, the destination id and, for one backfill, its id (`subId`), or
 * undefined for an unknown path.
 */
export function matchRoute(rawPath: string): { route: string; id: string; subId?: string } | undefined {
  if (ORGANIZATION_CHILDREN_RE.test(rawPath)) return { route: 'organizationChildren', id: '' };
  const match = PATH_RE.exec(rawPath);
  if (!match) return undefined;
  const [, rawId, action, rawSubId, subAction] = match;
  if (rawId === undefined) return { route: 'collection', id: '' };
  if (rawSubId !== undefined && action !== 'backfills') return undefined;
  let id: string;
  let subId: string | undefined;
  try {
    id = decodeURIComponent(rawId);
    if (rawSubId !== undefined) subId = decodeURIComponent(rawSubId);
  } catch {
    return undefined;
  }
  if (subId !== undefined) return { route: subAction === 'retry' ? 'backfillRetry' : 'backfill', id, subId };
  return { route: action ?? 'item', id };
}

function queryParam(request: HttpRequest, name: string): string | undefined {
  const value = new URLSearchParams(request.rawQueryString ?? '').get(name);
  return value ?? undefined;
}

function header(request: HttpRequest, name: string): string | undefined {
  const headers = request.headers ?? {};
  const found = Object.keys(headers).find((key) => key.toLowerCase() === name);
  return found === undefined ? undefined : headers[found];
}

const JSON_TYPE_RE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i;

/**
 * Checks the body of a create or update before the JSON body parser reads it: `400 invalid_json` when empty,
 * `415` unless the content type is JSON (any `+json` type, in any case, with parameters), `413` over
 * {@link MAX_BODY_BYTES}. The parser's own refusal (not JSON) becomes `400 invalid_json` in {@link toHttpError};
 * its message is never echoed, since it can quote the body (and so a secret).
 */
export function checkJsonBody(request: HttpRequest): void {
  const raw = request.body ?? '';
  const text = request.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  const contentType = header(request, 'content-type');
  if (text.trim() === '') {
    throw new HttpError(
      400,
      'The request body is empty; send a JSON object with Content-Type: application/json.',
      {
        code: 'invalid_json',
      },
    );
  }
  if (contentType === undefined || !JSON_TYPE_RE.test(contentType.trim())) {
    throw new HttpError(415, 'Send the body as JSON with the header Content-Type: application/json.', {
      code: 'unsupported_media_type',
    });
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_BODY_BYTES) {
    throw new HttpError(413, `The request body is ${bytes} bytes; the limit is ${MAX_BODY_BYTES} bytes.`, {
      code: 'payload_too_large',
    });
  }
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { statusCode, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/**
 * The one error handler. An error {@link toHttpError} maps becomes its status and `{success:false, error, code,
 * retryable, issues?}` with its headers (`Retry-After` on 503). Anything else is a 500 with a generic message,
 * logged with its stack but never with the request body or a secret.
 */
export function errorResponse(error: unknown, log: Logger = logger): HttpResponse {
  const http = toHttpError(error);
  if (http) {
    const shown = http.expose ? http.message : 'Internal error';
    if (http.statusCode >= 500) {
      log.warn('Request failed', {
        statusCode: http.statusCode,
        code: http.code,
        cause: causeName(http.cause),
      });
    }
    return json(
      http.statusCode,
      {
        success: false,
        error: shown,
        code: http.code ?? (http.statusCode >= 500 ? 'internal_error' : 'error'),
        retryable: http.retryable,
        ...(http.issues && http.issues.length > 0 ? { issues: http.issues } : {}),
      },
      http.headers,
    );
  }
  log.error('Unhandled error', error instanceof Error ? { error } : { error: String(error) });
  return json(500, { success: false, error: 'Internal error', code: 'internal_error', retryable: true });
}

function causeName(cause: unknown): string | undefined {
  return cause instanceof Error ? cause.name : undefined;
}

/** What {@link createApiHandler} needs. */
export interface ApiHandlerOptions {
  store: ApiStore;
  sealer: ApiSealer;
  /** Writes the connection-test file. @default `testConnection` of `@sluice/sinks`, under `allowedEndpoints` */
  testConnection?: ConnectionTester;
  /**
   * Origins exempt from the endpoint rules. Only the local runtime passes one (its own bucket); no
   * environment variable sets it. @default none: every endpoint is checked
   */
  allowedEndpoints?: ReadonlySet<string>;
  /**
   * Origins whose buckets the connection test does not check for a lifecycle rule. Only the local runtime passes
   * one (its own bucket, where the warning could not apply). @default none
   */
  withoutLifecycleCheck?: ReadonlySet<string>;
  /**
   * Sluice's own AWS account id (12 digits; the stack's account, `SLUICE_ACCOUNT_ID`): a `roleArn` in it is
   * refused with 400 `invalid_input`. @default none: no account refused (unit tests only)
   */
  ownAccountId?: string;
  /**
   * False where no AWS STS can be reached (only the local runtime): a role destination's connection test then
   * fails with a message saying role destinations need Sluice on AWS. @default true
   */
  assumeRoles?: boolean;
  /**
   * Total milliseconds a connection test's bucket requests may take, passed to every test: well inside API
   * Gateway's 29 s, so a bucket host that trickles its answer gets `400 connection_failed`, not a gateway
   * timeout. @default CONNECTION_TEST_DEADLINE_MS (10 s)
   */
  connectionTestDeadlineMs?: number;
  /** Backfills (`/data-exports/{id}/backfills`). @default none: those routes answer 500 */
  backfills?: ApiBackfillStore;
  /**
   * How long the event log keeps rows: the earliest time a backfill may start from is now minus this.
   * @default 35 days
   */
  eventRetentionMs?: number;
  /** The most data exports a workspace may have: a create beyond it is `409 limit_exceeded`. @default no limit */
  maxExportsPerWorkspace?: number;
  /** What the event archive holds (backfills may start at its start). @default none: the hot log only */
  archiveCoverage?: UseCaseDeps['archiveCoverage'];
  /** @default () => new Date() */
  now?: () => Date;
  /** @default `exp_` + 24 random hex digits */
  newId?: () => string;
  /** @default the module-level {@link logger} */
  logger?: Logger;
  /**
   * Counts each request against its key's rate limit and reads the key as stored now (see
   * {@link meteredCaller}): revocation and narrowing take effect at once, over the limit is a 429.
   * @default none: the authorizer's verdict is taken as it is, with no per-key limit (unit tests only)
   */
  keyMeter?: KeyMeter;
  /**
   * Checks the request's key again when the authorizer could not read the key store (`authError:
   * 'unavailable'`). The gateway caches the authorizer's verdict for up to a minute per key, so without this
   * a one-second outage would keep that key at 503 for the whole cache period.
   * @default none: an `unavailable` verdict is a 503
   */
  recheckKey?: (request: HttpRequest) => Promise<AuthorizerContext>;
}

/** The API's handler: an API Gateway v2 event in, a structured result out; the Lambda context is optional. */
export type ApiHandler = (request: HttpRequest, context?: Partial<Context>) => Promise<HttpResponse>;

/** What the routing step found, for the body parser and the operation. */
interface RoutedRequest {
  operation: Operation;
  caller: Caller;
  id: string;
  /** A backfill's id, or '' when the route has none. */
  subId: string;
}

/** The Lambda context, with the routing step's finding (middy's way of passing what a middleware found on). */
type ApiContext = Context & { route?: RoutedRequest };

/** What the access log line shows, collected as the steps go, even when one throws. */
interface AccessLogFields extends Record<string, unknown> {
  startedMs?: number;
  method?: string;
  operationId?: string;
  workspaceId?: string;
}

type ApiRequest = Request<HttpRequest, HttpResponse, Error, ApiContext, AccessLogFields>;
type ApiMiddleware = MiddlewareObj<HttpRequest, HttpResponse, Error, ApiContext, AccessLogFields>;

/**
 * Builds the API's request handler, on middy:
 * 0. `injectLambdaContext`: the request id and cold-start flag on every log line, keys reset after each request;
 * 1. `GET` of the OpenAPI document (`/v1/openapi.json`, `/api/v1/openapi.json`) is answered at once, without
 *    an API key (the gateway routes it without the authorizer);
 * 2. routing: the authorizer's verdict (no caller is a 401, a store outage while checking the key a 503), then
 *    the key meter (revoked since is a 401, over the per-key rate limit a 429); the route (unknown path 404,
 *    wrong method 405 with `Allow`); role and scopes (403);
 * 3. for create and update, {@link checkJsonBody} and `@middy/http-json-body-parser`;
 * 4. the use case;
 * 5. the one error handler, {@link errorResponse}, for an error thrown by any step.
 * Every body is JSON (a 304 has none); one access-log line per request (method, operation, status, workspace,
 * duration).
 */
export function createApiHandler(options: ApiHandlerOptions): ApiHandler {
  const endpointPolicy = { allowedEndpoints: options.allowedEndpoints ?? NO_ALLOWED_ENDPOINTS };
  const tester = options.testConnection ?? testConnection;
  const deadlineMs = options.connectionTestDeadlineMs ?? CONNECTION_TEST_DEADLINE_MS;
  const deps: UseCaseDeps = {
    store: options.store,
    sealer: options.sealer,
    externalIdOf: externalIdSource(options.store, options.sealer),
    testConnection: (location, credentials, testOptions) =>
      tester(location, credentials, {
        ...testOptions,
        ...endpointPolicy,
        deadlineMs,
        ...(options.assumeRoles === false ? { assumeRoles: false } : {}),
        ...(options.withoutLifecycleCheck ? { withoutLifecycleCheck: options.withoutLifecycleCheck } : {}),
      }),
    endpointPolicy,
    ...(options.ownAccountId === undefined ? {} : { ownAccountId: options.ownAccountId }),
    ...(options.maxExportsPerWorkspace === undefined
      ? {}
      : { maxExportsPerWorkspace: options.maxExportsPerWorkspace }),
    now: options.now ?? (() => new Date()),
    newId: options.newId ?? newDestinationId,
    ...(options.backfills ? { backfills: options.backfills } : {}),
    ...(options.archiveCoverage ? { archiveCoverage: options.archiveCoverage } : {}),
    eventRetentionMs: options.eventRetentionMs ?? DEFAULT_EVENT_RETENTION_MS,
  };
  const log = options.logger ?? logger;
  const handler = middy<HttpRequest, HttpResponse, Error, ApiContext, AccessLogFields>()
    .use(injectLambdaContext(log, { resetKeys: true }))
    .use(errorHandlerAndAccessLog(log))
    .use(routing(options))
    .use(jsonBody())
    .handler(async (request, context) => {
      const route = context.route;
      if (route === undefined) return openApiResponse(header(request, 'if-none-match'));
      const result = await route.operation.run({
        deps,
        caller: route.caller,
        id: route.id,
        subId: route.subId,
        request,
        body: request.body,
      });
      return json(result.status, result.body);
    });
  return (request, context = {}) => handler(request, context as ApiContext);
}

/** Step 5 and the access log: any error becomes its response, then one line per request. */
function errorHandlerAndAccessLog(log: Logger): ApiMiddleware {
  const accessLog = (request: ApiRequest) => {
    const { startedMs, method, operationId, workspaceId } = request.internal;
    log.info('Request', {
      method,
      operationId,
      workspaceId,
      statusCode: request.response?.statusCode,
      requestId: request.event.requestContext.requestId,
      durationMs: startedMs === undefined ? undefined : Date.now() - startedMs,
    });
  };
  return {
    before: (request) => {
      request.internal.startedMs = Date.now();
      request.internal.method = request.event.requestContext.http.method.toUpperCase();
    },
    after: accessLog,
    onError: (request) => {
      request.response = errorResponse(request.error, log);
      accessLog(request);
    },
  };
}

/** Steps 1 and 2: who calls, which operation, and whether the caller may run it. */
function routing(options: ApiHandlerOptions): ApiMiddleware {
  return {
    before: async (request) => {
      const event = request.event;
      const method = event.requestContext.http.method.toUpperCase();
      if (method === 'GET' && isOpenApiPath(event.rawPath)) {
        request.internal.operationId = 'getOpenApiDocument';
        return;
      }
      let context = event.requestContext.authorizer?.lambda;
      if (context?.authError === 'unavailable' && options.recheckKey)
        context = await options.recheckKey(event);
      if (context?.authError === 'unavailable') throw new DatabaseUnavailableError();
      const verdict = callerFromContext(context);
      const caller = options.keyMeter
        ? await meteredCaller(options.keyMeter, header(event, 'authorization'))
        : verdict;
      request.internal.workspaceId = caller.workspaceId;
      if (isOpenApiPath(event.rawPath)) throw methodNotAllowed(method, 'GET');
      if (hasEmptyOrDotSegment(event.rawPath)) {
        throw new HttpError(
          404,
          `Nothing at ${event.rawPath}: a path with an empty, "." or ".." segment names nothing.`,
          {
            code: 'not_found',
          },
        );
      }
      const match = matchRoute(event.rawPath);
      if (match === undefined) {
        throw new HttpError(
          404,
          `No route ${method} ${event.rawPath}. The API lives under /api/v1/data-exports.`,
          { code: 'route_not_found' },
        );
      }
      const methods = ROUTES[match.route] ?? {};
      const operation = methods[method];
      if (operation === undefined) throw methodNotAllowed(method, Object.keys(methods).join(', '));
      request.internal.operationId = operation.operationId;
      authorize(caller, operation.access);
      request.context.route = { operation, caller, id: match.id, subId: match.subId ?? '' };
    },
  };
}

/**
 * Step 3: the body of an operation that reads one, checked ({@link checkJsonBody}) and then parsed by
 * `@middy/http-json-body-parser`. The content type is checked here (any case, any `+json` type), so the
 * parser's own check is off; its only refusal left is a body that is not JSON (see {@link toHttpError}).
 */
function jsonBody(): ApiMiddleware {
  // The parser's types omit `disableContentTypeCheck` and name API Gateway's event types: the subset read here
  // (`headers`, `body`, `isBase64Encoded`) is the same.
  const parser = httpJsonBodyParser({
    disableContentTypeCheck: true,
  } as Parameters<typeof httpJsonBodyParser>[0]) as unknown as ApiMiddleware;
  return {
    before: async (request) => {
      if (!request.context.route?.operation.readsBody) return;
      checkJsonBody(request.event);
      await parser.before?.(request);
    },
  };
}

function methodNotAllowed(method: string, allow: string): HttpError {
  return new HttpError(405, `Method ${method} is not allowed here; use ${allow}.`, {
    code: 'method_not_allowed',
    headers: { Allow: allow },
  });
}
