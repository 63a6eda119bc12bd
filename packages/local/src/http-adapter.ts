/**
 * The local stand-in for API Gateway (HTTP API, payload 2.0): a node:http server that turns each request into
 * the events API Gateway would send, runs the Lambda authorizer, then the API function, and writes the result.
 * The same handler code runs here and in Lambda.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isPublicRoute } from '@sluice/api';
import type {
  APIGatewayProxyEventV2,
  Context,
  APIGatewayProxyEventV2WithLambdaAuthorizer,
  APIGatewayProxyStructuredResultV2,
  APIGatewayRequestAuthorizerEventV2,
} from 'aws-lambda';

/** API Gateway's own payload limit; the API function applies its own, smaller one. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

/** The authorizer, as API Gateway calls it (simple responses). */
export type AuthorizerFunction = (
  event: APIGatewayRequestAuthorizerEventV2,
  context?: Partial<Context>,
) => Promise<{ isAuthorized: boolean; context?: Record<string, unknown> }>;

/** The API function, as API Gateway calls it. */
export type ApiFunction = (
  event: APIGatewayProxyEventV2,
  context?: Partial<Context>,
) => Promise<APIGatewayProxyStructuredResultV2>;

/** The part of a Lambda context the functions' log lines show: a request id of its own for each call. */
function localContext(functionName: string): Partial<Context> {
  return { functionName, functionVersion: '$LATEST', awsRequestId: randomUUID() };
}

/** Options of {@link startApiServer}. */
export interface ApiServerOptions {
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 0 (a free port) */
  port?: number;
  /**
   * The handlers to run. @default the real ones, built by the factories `functions/authorizer/handler.ts` and
   * `functions/api/handler.ts` use, from `process.env` when the server starts, with the local bucket allow-listed
   * (`local-functions.ts`).
   */
  handlers?: { authorizer: AuthorizerFunction; api: ApiFunction };
  /**
   * Checks the local bucket's lifecycle like a customer's (a warning, as s3rver keeps none), for suites that test
   * that warning. @default false: `npm start` gives no warning that could not apply locally
   */
  checkLocalLifecycle?: boolean;
  /** Called once each answer is sent (`npm start` prints it). */
  onRequest?: (call: ApiCall) => void;
  /**
   * Answers the requests that are not the API's (the console's files, `serveConsole` of `@sluice/console`):
   * asked first, it returns true when it has answered. @default none: every request goes to the API
   */
  site?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
}

/** One API call as {@link ApiServerOptions.onRequest} reports it. */
export interface ApiCall {
  method: string;
  /** The path, without the query. */
  path: string;
  status: number;
  /** From the request's arrival to the answer's last byte. */
  ms: number;
}

/** A running server. */
export interface ApiServer {
  /** `http://host:port`, without a trailing slash; the API is under `/v1` and `/api/v1`. */
  url: string;
  close(): Promise<void>;
}

const TEXT_TYPE_RE = /^(?:text\/|application\/(?:[\w.+-]+\+)?(?:json|xml|x-www-form-urlencoded))/i;

async function loadHandlers(
  checkLocalLifecycle: boolean,
): Promise<{ authorizer: AuthorizerFunction; api: ApiFunction }> {
  const { localApiFunctions } = await import('./local-functions.js');
  const { authorizer, api } = localApiFunctions(process.env, { checkLocalLifecycle });
  return { authorizer, api: api as unknown as ApiFunction };
}

function gatewayError(res: ServerResponse, statusCode: number, message: string): void {
  // API Gateway's own error shape, for what it answers itself (the API function never sees these requests).
  const body = JSON.stringify({ message });
  res.writeHead(statusCode, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > GATEWAY_MAX_BODY_BYTES) {
        tooLarge = true;
        chunks.length = 0;
        return;
      }
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? 'too_large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Lower-cased headers, repeated ones joined with commas, as API Gateway v2 does (cookies aside). */
function eventHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name === 'cookie') continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  return headers;
}

function queryParameters(rawQueryString: string): Record<string, string> | undefined {
  if (rawQueryString === '') return undefined;
  const params: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(rawQueryString)) {
    params[key] = params[key] === undefined ? value : `${params[key]},${value}`;
  }
  return params;
}

/** Builds the payload 2.0 event API Gateway would send for this request. */
export function toProxyEvent(
  req: IncomingMessage,
  body: Buffer,
  now: Date = new Date(),
): APIGatewayProxyEventV2 {
  // Split by hand: `new URL` throws on request targets such as `//@` (an empty authority), which API Gateway
  // passes through as the raw path.
  const target = req.url ?? '/';
  const queryAt = target.indexOf('?');
  const pathname = queryAt === -1 ? target : target.slice(0, queryAt);
  const rawQueryString = queryAt === -1 ? '' : (target.slice(queryAt + 1).split('#')[0] ?? '');
  const headers = eventHeaders(req);
  const contentType = headers['content-type'] ?? '';
  const isBase64Encoded = body.length > 0 && !TEXT_TYPE_RE.test(contentType);
  const method = (req.method ?? 'GET').toUpperCase();
  const cookies = req.headers.cookie?.split(';').map((cookie) => cookie.trim());
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: '$default',
    rawPath: pathname,
    rawQueryString,
    headers,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0] ?? 'localhost',
      http: {
        method,
        path: pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded,
  };
  const queryStringParameters = queryParameters(rawQueryString);
  if (queryStringParameters) event.queryStringParameters = queryStringParameters;
  if (cookies && cookies.length > 0) event.cookies = cookies;
  if (body.length > 0) event.body = isBase64Encoded ? body.toString('base64') : body.toString('utf8');
  return event;
}

/** Builds the REQUEST authorizer event for a proxy event; the identity source is the Authorization header. */
export function toAuthorizerEvent(event: APIGatewayProxyEventV2): APIGatewayRequestAuthorizerEventV2 {
  const authorization = event.headers.authorization;
  const authorizerEvent: APIGatewayRequestAuthorizerEventV2 = {
    version: '2.0',
    type: 'REQUEST',
    routeArn: `arn:aws:execute-api:us-east-1:000000000000:local/$default/${event.requestContext.http.method}${event.rawPath}`,
    identitySource: authorization === undefined ? [] : [authorization],
    routeKey: '$default',
    rawPath: event.rawPath,
    rawQueryString: event.rawQueryString,
    cookies: event.cookies ?? [],
    headers: event.headers,
    requestContext: event.requestContext,
  };
  if (event.queryStringParameters) authorizerEvent.queryStringParameters = event.queryStringParameters;
  return authorizerEvent;
}

function writeResult(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  const body =
    result.body === undefined
      ? Buffer.alloc(0)
      : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8');
  const headers: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {}))
    headers[name.toLowerCase()] = String(value);
  if (result.cookies && result.cookies.length > 0) headers['set-cookie'] = result.cookies;
  headers['content-length'] = body.length;
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(body);
}

/**
 * Starts the local API: for each request,
 * 1. read the body, refusing more than 10 MB (413) like API Gateway;
 * 2. build the payload 2.0 event (raw path and query, lower-cased headers, body base64 unless text);
 * 3. call the authorizer with the Authorization header as identity source; a denial or a failure is answered
 *    as API Gateway would (403 / 500), otherwise its context goes to `requestContext.authorizer.lambda`.
 *    The public routes (`PUBLIC_ROUTES` of `@sluice/api`: `GET` of the OpenAPI document) skip the authorizer,
 *    as they do in the CDK app;
 * 4. call the API function and write its structured result.
 *
 * Each answer closes its connection (`Connection: close`): a client never races the server's keep-alive timeout.
 */
export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  const handlers = options.handlers ?? (await loadHandlers(options.checkLocalLifecycle ?? false));
  const server = createServer((req, res) => {
    // Every answer closes its connection (`Connection: close`), so that no client ever reuses one: a kept-alive
    // connection left idle is closed by the server after its keep-alive timeout, and a client whose event loop
    // was busy past it (a script running other commands synchronously) sends its next request on it and gets
    // `fetch failed` (ECONNRESET). A new connection on the loopback costs well under a millisecond.
    res.shouldKeepAlive = false;
    const onRequest = options.onRequest;
    if (onRequest) {
      const started = performance.now();
      res.once('finish', () =>
        onRequest({
          method: req.method ?? 'GET',
          path: (req.url ?? '/').split('?')[0] ?? '/',
          status: res.statusCode,
          ms: performance.now() - started,
        }),
      );
    }
    void handle(req, res).catch(() => {
      if (!res.headersSent) gatewayError(res, 500, 'Internal Server Error');
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (options.site && (await options.site(req, res))) return;
    const body = await readBody(req);
    if (body === 'too_large') return gatewayError(res, 413, 'Request Entity Too Large');
    let event: APIGatewayProxyEventV2 | APIGatewayProxyEventV2WithLambdaAuthorizer<unknown> = toProxyEvent(
      req,
      body,
    );
    if (!isPublicRoute(event.requestContext.http.method, event.rawPath)) {
      let authorization: Awaited<ReturnType<AuthorizerFunction>>;
      try {
        authorization = await handlers.authorizer(
          toAuthorizerEvent(event),
          localContext('sluice-local-authorizer'),
        );
      } catch {
        return gatewayError(res, 500, 'Internal Server Error');
      }
      if (!authorization.isAuthorized) return gatewayError(res, 403, 'Forbidden');
      event = {
        ...event,
        requestContext: {
          ...event.requestContext,
          authorizer: { lambda: authorization.context ?? {} },
        },
      };
    }
    let result: APIGatewayProxyStructuredResultV2;
    try {
      result = await handlers.api(event, localContext('sluice-local-api'));
    } catch {
      return gatewayError(res, 500, 'Internal Server Error');
    }
    writeResult(res, result);
  }

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
