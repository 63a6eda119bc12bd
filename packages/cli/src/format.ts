/**
 * The readable output of the `data-exports` commands: aligned tables and key/value blocks. `--json` prints
 * the API's JSON instead, so nothing here is meant for scripts.
 */
import { ALL_CHILDREN } from '@sluice/core';
import { exportState, formatBytes, formatCount } from '@sluice/api/view-format';
import type { ApiIssue, DataExportRunView, DataExportView } from './api-client.js';

/**
 * What a terminal must never receive raw from API data: control characters (C0, DEL, C1: line breaks,
 * escape sequences, terminal titles) and the bidirectional marks, overrides and isolates.
 */
const TERMINAL_UNSAFE = /[\p{Cc}\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;
/** The same, less the line breaks and control characters `JSON.stringify` escapes itself. */
const JSON_TERMINAL_UNSAFE = /[\u007F-\u009F\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

const escapeChar = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** One line safe to print: every unsafe character shown as `\uXXXX` (the API refuses them in new names). */
export function terminalSafe(line: string): string {
  return line.replace(TERMINAL_UNSAFE, escapeChar);
}

/** `--json` output safe to print: the same JSON value, unsafe characters written as `\uXXXX` escapes. */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(JSON_TERMINAL_UNSAFE, escapeChar);
}

export { exportState, formatBytes, formatCount };

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(headers: readonly string[], input: readonly (readonly string[])[]): string[] {
  const rows = input.map((row) => row.map(terminalSafe));
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

/** `:05` (hourly), `08:00` (daily, UTC), or `default slot`. */
function scheduleText(schedule: DataExportView['schedule'] | undefined): string {
  if (schedule === null || schedule === undefined) return 'default slot';
  const minute = String(schedule.minute).padStart(2, '0');
  return schedule.hour === undefined
    ? `:${minute} every hour`
    : `${String(schedule.hour).padStart(2, '0')}:${minute} UTC`;
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
    ['layout', view.layout ?? 'date'],
    ['schedule', scheduleText(view.schedule)],
    ['child orgs', childOrganizationsText(view.childOrganizations)],
    ['start from', view.startFrom],
    ['next run', nextRunOf(view)],
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

/** The children an export includes: `-` for none, `* (every child)`, or the ids. */
export function childOrganizationsText(children: readonly string[] | undefined): string {
  if (children === undefined || children.length === 0) return '-';
  if (children.length === 1 && children[0] === ALL_CHILDREN) return `${ALL_CHILDREN} (every child)`;
  return children.join(', ');
}

/** `2026-12-04T19:05:00.000Z`, `- (paused)` for a paused export (it has no next run), `-` without one. */
export function nextRunOf(view: DataExportView): string {
  if (!view.isEnabled) return '- (paused)';
  return view.nextRunAt ?? '-';
}

/**
 * What `data-exports create` says of the first files: when the first run is queued for (the scheduler starts
 * it within a minute of then), where its files go, and what waits for the next run.
 */
export function firstFilesLines(view: DataExportView): string[] {
  if (!view.isEnabled || !view.nextRunAt) return [];
  return [
    `First files: its first run is queued for ${view.nextRunAt} and starts within a minute; it writes every dataset ` +
      `(rows recorded from ${view.startFrom} up to a few minutes before it) to ${bucketOf(view)}; later runs: ` +
      `${view.frequency}.`,
  ];
}

/** What the runs table shows for a finished run that exported nothing. */
export const NO_ROWS = 'No rows';

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
      // A finished run with nothing to export (an idle slot included) reads as the job history says it.
      run.status === 'succeeded' && run.rowCount === 0 ? NO_ROWS : formatCount(run.rowCount),
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

/** A field issue as the CLI prints it: `option` is the command's option that sets the field, when one does. */
export interface CliIssue extends ApiIssue {
  option?: string;
}

/**
 * An API error as printed: its message alone; or, when it lists field issues (its message then only sums them
 * up), one line per issue, named by its option (`--bucket`) when it has one, else by its API field. The API's
 * wording of a body (`"from": "earliest"`) is said as the option (`--from earliest`).
 */
export function errorLines(message: string, issues: readonly CliIssue[]): string[] {
  if (issues.length === 0) return [`Error: ${message}`];
  const lines = [`Error: ${issues.length === 1 ? 'a value was' : `${issues.length} values were`} refused:`];
  for (const issue of issues) {
    const allowed =
      issue.allowedValues && issue.allowedValues.length > 0 && !issue.message.includes('Allowed:')
        ? ` (allowed: ${issue.allowedValues.join(', ')})`
        : '';
    const name = issue.option ?? (issue.path === '' ? '(body)' : issue.path);
    const text = issue.option
      ? issue.message.replaceAll('"from": "earliest"', '--from earliest')
      : issue.message;
    lines.push(`  ${name}: ${text}${allowed}`);
  }
  return lines;
}
