/**
 * The readable output of the `data-exports` commands: aligned tables and key/value blocks. `--json` prints
 * the API's JSON instead, so nothing here is meant for scripts.
 */
import { exportState, formatBytes, formatCount } from '@sluice/api/view-format';
import type { ApiIssue, DataExportRunView, DataExportView } from './api-client.js';

export { exportState, formatBytes, formatCount };

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** The table of `data-exports list`. */
export function dataExportsTable(views: readonly DataExportView[]): string[] {
  if (views.length === 0) return ['No data exports yet. Create one with `sluice data-exports create`.'];
  return table(
    ['ID', 'NAME', 'STATE', 'FREQUENCY', 'BUCKET', 'DATASETS', 'LAST SUCCESS'],
    views.map((view) => [
      view.id,
      view.name,
      exportState(view),
      view.frequency,
      bucketOf(view),
      view.datasets.join(','),
      view.lastSuccessAt ?? '-',
    ]),
  );
}

function bucketOf(view: DataExportView): string {
  const scheme = view.provider === 'gcs' ? 'gs' : 's3';
  return `${scheme}://${view.bucket}${view.pathPrefix ? `/${view.pathPrefix}` : ''}`;
}

/** The block of `data-exports get` (and of create and update): fields, then progress per dataset. */
export function dataExportBlock(view: DataExportView): string[] {
  const fields: [string, string][] = [
    ['id', view.id],
    ['name', view.name],
    ['state', exportState(view)],
    ['provider', view.provider],
    ['bucket', bucketOf(view)],
    ['region', view.region],
    ['endpoint', view.endpoint ?? '-'],
    ...((view.roleArn
      ? [
          ['role', view.roleArn],
          ['external id', view.externalId ?? '-'],
        ]
      : [['access key id', view.accessKeyId ?? '-']]) as [string, string][]),
    ['frequency', view.frequency],
    ['format', `${view.format} (${view.compression})`],
    ['start from', view.startFrom],
    ['next run', view.nextRunAt ?? '-'],
    ['last run', view.lastRunAt ?? '-'],
    ['last success', view.lastSuccessAt ?? '-'],
    ['rows exported', formatCount(view.totalRowsExported)],
  ];
  if (view.lastError) fields.push(['last error', `${view.lastError} (${view.lastErrorAt ?? '?'})`]);
  const width = Math.max(...fields.map(([key]) => key.length));
  return [
    ...fields.map(([key, value]) => `${key.padEnd(width)}  ${value}`),
    '',
    ...table(
      ['DATASET', 'EXPORTED THROUGH'],
      view.datasets.map((dataset) => [dataset, view.exportedThrough[dataset] ?? 'not yet']),
    ),
  ];
}

/** The table of `data-exports runs`. */
export function runsTable(runs: readonly DataExportRunView[]): string[] {
  if (runs.length === 0) return ['No runs in the last 14 days.'];
  return table(
    ['RUN', 'STARTED', 'STATUS', 'TRIGGER', 'ROWS', 'FILES', 'BYTES', 'ERROR'],
    runs.map((run) => [
      run.id,
      run.startedAt,
      run.status,
      run.isManual ? 'manual' : 'schedule',
      formatCount(run.rowCount),
      formatCount(run.fileCount),
      formatBytes(run.byteCount),
      run.error ?? '',
    ]),
  );
}

const count = (value: unknown): number => (typeof value === 'number' ? value : 0);

/** One progress line per dataset of a run, then its totals: what `runs --watch` prints at each change. */
export function runProgressLines(run: DataExportRunView): string[] {
  const datasets = Object.entries(run.stats).sort(([a], [b]) => a.localeCompare(b));
  const rows = datasets.map(([dataset, stats]) => [
    `  ${dataset}`,
    `${formatCount(count(stats.rows))} rows`,
    `${formatCount(count(stats.files))} files`,
    formatBytes(count(stats.bytes)),
  ]);
  rows.push([
    '  total',
    `${formatCount(run.rowCount)} rows`,
    `${formatCount(run.fileCount)} files`,
    formatBytes(run.byteCount),
  ]);
  const header = `${run.id} ${run.status}${run.finishedAt ? ` at ${run.finishedAt}` : ''}`;
  return [header, ...table(['', '', '', ''], rows).slice(1)];
}

/** An API error as printed: its message, then one line per field issue. */
export function errorLines(message: string, issues: readonly ApiIssue[]): string[] {
  const lines = [`Error: ${message}`];
  for (const issue of issues) {
    const allowed =
      issue.allowedValues && issue.allowedValues.length > 0 && !issue.message.includes('Allowed:')
        ? ` (allowed: ${issue.allowedValues.join(', ')})`
        : '';
    lines.push(`  ${issue.path === '' ? '(body)' : issue.path}: ${issue.message}${allowed}`);
  }
  return lines;
}
