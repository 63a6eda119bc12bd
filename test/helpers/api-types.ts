import type { BackfillView, DataExportRunView, DataExportView } from '@sluice/api';
import type { InputIssue } from '@sluice/core';

/** Any response body of the Data Exports API, every field optional: tests narrow with `!` where they expect one. */
export interface ApiBody {
  success: boolean;
  error?: string;
  code?: string;
  retryable?: boolean;
  issues?: InputIssue[];
  dataExport?: DataExportView;
  dataExports?: DataExportView[];
  queued?: boolean;
  runs?: DataExportRunView[];
  nextToken?: string;
  testedAt?: string;
  dataExportId?: string;
  warnings?: { code: string; message: string }[];
  backfill?: BackfillView;
  backfills?: BackfillView[];
  children?: { workspaceId: string; linkedAt: string }[];
}
