import type { ApiBody } from './api-types.js';
import { operationFor, validateResponse } from './openapi.js';

/** One HTTP exchange, with the JSON body parsed. */
export interface ApiResponse<T = ApiBody> {
  status: number;
  headers: Headers;
  /** The parsed JSON body (`undefined` when the body was not JSON). */
  body: T;
  text: string;
}

/** Options of one request. */
export interface RequestOptions {
  /** Serialized as JSON with `Content-Type: application/json` unless `rawBody` is given. */
  json?: unknown;
  /** Sent as is. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Skip the OpenAPI check (only for the gateway's own answers, such as its 413 over 10 MB). */
  skipContract?: boolean;
}

/** Every response text seen by any {@link ApiClient} in this worker, for the secrets check. */
export const recordedResponses: string[] = [];

/**
 * An HTTP client for the Data Exports API that checks every response, success or error, against the
 * OpenAPI (see `validateResponse`) and records it.
 */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly apiKey: string | undefined,
    /** `/api/v1` (the default) or `/v1`. */
    readonly prefix = '/api/v1',
  ) {}

  /** A client with the same base URL and another key (or none). */
  withKey(apiKey: string | undefined): ApiClient {
    return new ApiClient(this.baseUrl, apiKey, this.prefix);
  }

  async request<T = ApiBody>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = {};
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    }
    Object.assign(headers, options.headers);
    const fullPath = `${this.prefix}${path}`;
    const response = await fetch(`${this.baseUrl}${fullPath}`, { method, headers, body });
    const text = await response.text();
    recordedResponses.push(text);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const contentType = response.headers.get('content-type') ?? '';
    if (!options.skipContract) {
      if (!contentType.startsWith('application/json')) {
        throw new Error(`${method} ${fullPath}: content-type ${contentType}, expected application/json`);
      }
      validateResponse(operationFor(method, new URL(fullPath, 'http://x').pathname), response.status, parsed);
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  get<T = ApiBody>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }
  post<T = ApiBody>(path: string, json?: unknown, options: RequestOptions = {}) {
    return this.request<T>('POST', path, json === undefined ? options : { ...options, json });
  }
  patch<T = ApiBody>(path: string, json?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PATCH', path, json === undefined ? options : { ...options, json });
  }
  delete<T = ApiBody>(path: string, options?: RequestOptions) {
    return this.request<T>('DELETE', path, options);
  }
}
