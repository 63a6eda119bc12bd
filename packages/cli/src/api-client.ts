import type { BackfillView, DataExportRunView, DataExportView } from '@sluice/api';
import { backfillIdProblem, destinationIdProblem } from '@sluice/core';
import type { Connection } from './connection.js';
import { UsageError } from './context.js';

export type { BackfillView, DataExportRunView, DataExportView };

/** One field problem, as the API reports it. */
export interface ApiIssue {
  path: string;
  message: string;
  allowedValues?: unknown[];
}

/** The API's error body (`Error` in the OpenAPI document). */
export interface ApiErrorBody {
  success?: false;
  error: string;
  code?: string;
  retryable?: boolean;
  issues?: ApiIssue[];
}

/** A non-2xx answer of the API, carrying its JSON as it came. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(body.error);
    this.name = 'ApiError';
  }

  get code(): string | undefined {
    return this.body.code;
  }

  get issues(): ApiIssue[] {
    return this.body.issues ?? [];
  }
}

/** The API could not be reached, or answered with something that is not its JSON. */
export class ApiUnreachableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ApiUnreachableError';
  }
}

/** Fields of a create request, as the API names them. */
export type CreateDataExportBody = Record<string, unknown>;
/** Fields of a PATCH request, as the API names them. */
export type UpdateDataExportBody = Record<string, unknown>;

/** What each operation returns: the API's JSON. */
export interface DataExportResponse {
  success: true;
  dataExport: DataExportView;
}
export interface DataExportListResponse {
  success: true;
  dataExports: DataExportView[];
}
export interface ChildOrganizationsResponse {
  success: true;
  children: { workspaceId: string; linkedAt: string }[];
}
export interface DeleteResponse {
  success: true;
  dataExportId: string;
}
export interface TestResponse {
  success: true;
  testedAt: string;
}
export interface RunResponse {
  success: true;
  queued: boolean;
  dataExport: DataExportView;
}
export interface RunsResponse {
  success: true;
  runs: DataExportRunView[];
  /** Present on a full page: pass it back for the next one. */
  nextToken?: string;
}

export interface BackfillResponse {
  success: true;
  backfill: BackfillView;
}
export interface BackfillsResponse {
  success: true;
  backfills: BackfillView[];
  /** Present on a full page: pass it back for the next one. */
  nextToken?: string;
}

/**
 * `/data-exports/<id>`, the id checked first: the CLI and the MCP tools refuse a malformed one before they
 * call the client, and this refuses it again, so no value (`..`) can make the URL name another resource.
 */
function exportPath(id: string): string {
  const problem = destinationIdProblem(id);
  if (problem !== undefined) throw new UsageError(problem);
  return `/data-exports/${id}`;
}

/** `/data-exports/<id>/backfills/<backfillId>`, both ids checked (see {@link exportPath}). */
function backfillPath(id: string, backfillId: string): string {
  const problem = backfillIdProblem(backfillId);
  if (problem !== undefined) throw new UsageError(problem);
  return `${exportPath(id)}/backfills/${backfillId}`;
}

/**
 * A thin client of the Data Exports API: one method per operation, each returning the API's JSON as it came,
 * and throwing {@link ApiError} for an error answer. The key goes in the `Authorization` header only.
 */
export class DataExportsClient {
  constructor(
    private readonly connection: Pick<Connection, 'apiUrl' | 'apiKey'>,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  list(): Promise<DataExportListResponse> {
    return this.request('GET', '/data-exports');
  }
  create(body: CreateDataExportBody): Promise<DataExportResponse> {
    return this.request('POST', '/data-exports', body);
  }
  get(id: string): Promise<DataExportResponse> {
    return this.request('GET', exportPath(id));
  }
  update(id: string, body: UpdateDataExportBody): Promise<DataExportResponse> {
    return this.request('PATCH', exportPath(id), body);
  }
  delete(id: string): Promise<DeleteResponse> {
    return this.request('DELETE', exportPath(id));
  }
  test(id: string): Promise<TestResponse> {
    return this.request('POST', `${exportPath(id)}/test`);
  }
  run(id: string): Promise<RunResponse> {
    return this.request('POST', `${exportPath(id)}/run`);
  }
  runs(id: string, limit?: number, nextToken?: string): Promise<RunsResponse> {
    return this.request('GET', `${exportPath(id)}/runs${pageQuery(limit, nextToken)}`);
  }
  childOrganizations(): Promise<ChildOrganizationsResponse> {
    return this.request('GET', '/organizations/children');
  }

  createBackfill(id: string, body: Record<string, unknown>): Promise<BackfillResponse> {
    return this.request('POST', `${exportPath(id)}/backfills`, body);
  }
  backfills(id: string, limit?: number, nextToken?: string): Promise<BackfillsResponse> {
    return this.request('GET', `${exportPath(id)}/backfills${pageQuery(limit, nextToken)}`);
  }
  backfill(id: string, backfillId: string): Promise<BackfillResponse> {
    return this.request('GET', backfillPath(id, backfillId));
  }
  cancelBackfill(id: string, backfillId: string): Promise<BackfillResponse> {
    return this.request('DELETE', backfillPath(id, backfillId));
  }
  retryBackfill(id: string, backfillId: string): Promise<BackfillResponse> {
    return this.request('POST', `${backfillPath(id, backfillId)}/retry`);
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.connection.apiUrl}${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.connection.apiKey}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new ApiUnreachableError(
        `Could not reach the API at ${this.connection.apiUrl}: ${reason(error)}`,
        {
          cause: error,
        },
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiUnreachableError(
        `${method} ${url} answered ${response.status} without JSON: is ${this.connection.apiUrl} the Sluice API (ending in /v1 or /api/v1)?`,
      );
    }
    if (!response.ok) {
      const errorBody = isErrorBody(parsed) ? parsed : { error: `HTTP ${response.status}` };
      throw new ApiError(response.status, errorBody);
    }
    return parsed as T;
  }
}

/** `?limit=…&nextToken=…` of a paged list, or '' when neither is given. */
function pageQuery(limit?: number, nextToken?: string): string {
  const query = new URLSearchParams();
  if (limit !== undefined) query.set('limit', String(limit));
  if (nextToken !== undefined) query.set('nextToken', nextToken);
  return query.size > 0 ? `?${query}` : '';
}

function isErrorBody(value: unknown): value is ApiErrorBody {
  return typeof value === 'object' && value !== null && typeof (value as ApiErrorBody).error === 'string';
}

/** The reason of a failed fetch: undici puts the useful part (ECONNREFUSED, ...) in `cause`. */
function reason(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
}
