/** The console's client of the Data Exports API: `fetch` with the Bearer key, errors as {@link ApiError}. */

/** One field issue of a `400`/`422`, as the API reports it. */
export interface FieldIssue {
  path: string;
  message: string;
}

import type { BackfillView, DataExportRunView, DataExportView } from '@sluice/api';

export type { BackfillView, DataExportView };
/** A run as the API returns it (the OpenAPI `DataExportRun`). */
export type RunView = DataExportRunView;

/** An answer other than 2xx: the API's message, code and field issues (the gateway's own errors have none). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly issues: readonly FieldIssue[] = [],
  ) {
    super(message);
  }
}

/** A create or update: the export, and what its connection test found worth a look (`warnings`). */
export interface Saved {
  dataExport: DataExportView;
  warnings: { code: string; message: string }[];
}

/** A child workspace of the signed-in workspace (`GET /v1/organizations/children`). */
export interface ChildOrganization {
  workspaceId: string;
  /** When it was linked to this workspace (ISO). */
  linkedAt: string;
}

/** Pages of runs the console reads at most (100 runs each): 14 days of an every-5-minutes export is 4,032. */
const MAX_RUN_PAGES = 45;

export class SluiceApi {
  constructor(
    /** Ends in `/v1`. */
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  async list(): Promise<DataExportView[]> {
    return (await this.call<{ dataExports: DataExportView[] }>('GET', '/data-exports')).dataExports;
  }

  async get(id: string): Promise<DataExportView> {
    return (await this.call<{ dataExport: DataExportView }>('GET', exportPath(id))).dataExport;
  }

  async create(body: Record<string, unknown>): Promise<Saved> {
    const saved = await this.call<Saved>('POST', '/data-exports', body);
    return { dataExport: saved.dataExport, warnings: saved.warnings ?? [] };
  }

  async update(id: string, body: Record<string, unknown>): Promise<Saved> {
    const saved = await this.call<Saved>('PATCH', exportPath(id), body);
    return { dataExport: saved.dataExport, warnings: saved.warnings ?? [] };
  }

  async remove(id: string): Promise<void> {
    await this.call('DELETE', exportPath(id));
  }

  /** The workspace's child organisations (none for a workspace that is not a parent). */
  async children(): Promise<ChildOrganization[]> {
    return (await this.call<{ children: ChildOrganization[] }>('GET', '/organizations/children')).children;
  }

  /** Writes the connection-test file; returns when it was written. */
  async test(id: string): Promise<string> {
    return (await this.call<{ testedAt: string }>('POST', `${exportPath(id)}/test`)).testedAt;
  }

  async run(id: string): Promise<{ queued: boolean }> {
    return this.call<{ queued: boolean }>('POST', `${exportPath(id)}/run`);
  }

  /** Every run of the last 14 days, newest first, following `nextToken` page by page. */
  async allRuns(id: string): Promise<RunView[]> {
    const runs: RunView[] = [];
    let nextToken: string | undefined;
    for (let page = 0; page < MAX_RUN_PAGES; page++) {
      const query = new URLSearchParams({ limit: '100' });
      if (nextToken !== undefined) query.set('nextToken', nextToken);
      const body = await this.call<{ runs: RunView[]; nextToken?: string }>(
        'GET',
        `${exportPath(id)}/runs?${query}`,
      );
      runs.push(...body.runs);
      nextToken = body.nextToken;
      if (nextToken === undefined) break;
    }
    return runs;
  }

  /** The newest backfills of an export, newest first (the API's first page of `limit`). */
  async backfills(id: string, limit = 50): Promise<BackfillView[]> {
    const query = new URLSearchParams({ limit: String(limit) });
    return (await this.call<{ backfills: BackfillView[] }>('GET', `${exportPath(id)}/backfills?${query}`))
      .backfills;
  }

  async createBackfill(id: string, body: Record<string, unknown>): Promise<BackfillView> {
    return (await this.call<{ backfill: BackfillView }>('POST', `${exportPath(id)}/backfills`, body))
      .backfill;
  }

  async cancelBackfill(id: string, backfillId: string): Promise<BackfillView> {
    return (
      await this.call<{ backfill: BackfillView }>(
        'DELETE',
        `${exportPath(id)}/backfills/${encodeURIComponent(backfillId)}`,
      )
    ).backfill;
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch {
      throw new ApiError('The API cannot be reached.', 0, 'network_error');
    }
    const parsed = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.ok) return parsed as T;
    const message =
      typeof parsed.error === 'string'
        ? parsed.error
        : typeof parsed.message === 'string'
          ? parsed.message
          : `HTTP ${response.status}`;
    const issues = Array.isArray(parsed.issues) ? (parsed.issues as FieldIssue[]) : [];
    throw new ApiError(
      message,
      response.status,
      typeof parsed.code === 'string' ? parsed.code : 'error',
      issues,
    );
  }
}

function exportPath(id: string): string {
  return `/data-exports/${encodeURIComponent(id)}`;
}
