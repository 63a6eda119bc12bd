/**
 * The customer-facing reference of every dataset's columns (`docs/datasets.md`), rendered from the catalogue so
 * it cannot drift: `npm run docs:datasets` writes it, `scripts/datasets-doc.test.ts` fails when it differs.
 * Pure: no AWS SDK.
 */
import { DATASETS } from '../datasets.js';
import { CATALOG } from './index.js';
import type { ColumnDefinition, DatasetDefinition, ExportSemantics } from './types.js';

const TYPE_NAMES: Record<ColumnDefinition['type'], string> = {
  string: 'string',
  timestamp_millis_utc: 'timestamp',
  date: 'date',
  int32: 'int32',
  int64: 'int64',
  double: 'double',
  boolean: 'boolean',
  json: 'JSON (string)',
  string_list: 'list of strings',
};

const SEMANTICS: Record<ExportSemantics, string> = {
  append: 'append-only: each row once, in the window of the time Sluice recorded it',
  current_row:
    'one current row per key: the whole row again, in a later window, when its status changes; keep the greatest `updated_at` per `message_id`',
  once: 'one row per key, exported once, in the window in which it is recorded complete',
  snapshot: 'a full snapshot per UTC day',
};

function table(definition: DatasetDefinition): string[] {
  const rows = definition.columns.map(
    (column) =>
      `| \`${column.name}\` | ${TYPE_NAMES[column.type]}${column.required ? '' : ', nullable'} | ${column.doc.replace(/\|/g, '\\|')} |`,
  );
  return ['| Column | Type | Meaning |', '| --- | --- | --- |', ...rows];
}

/** The Markdown of `docs/datasets.md`. */
export function datasetsReference(): string {
  const lines = [
    '# Datasets',
    '',
    '<!-- Generated from the dataset catalogue (packages/core/src/catalog): run `npm run docs:datasets`. Do not edit. -->',
    '',
    'Every dataset a Data Export can deliver, with its columns in file order. JSON lines files carry exactly',
    'these keys, in this order (`null` when absent); Parquet files these columns with these types. Timestamps',
    'are `TIMESTAMP(MILLIS, UTC)` in Parquet and ISO 8601 UTC strings in JSON lines. Windows are by the time',
    'Sluice recorded a row, so no row is ever missed: a row sent when it happens (a click, an opt-out, a',
    'completed project, a delivery receipt) goes out in the window that holds that time. New columns are only',
    'ever added at the end; the `v1` in the path is the schema version.',
    '',
    "The second product's datasets (`message_events`, `project_summary`, `opt_out_events`, `click_events`) carry",
    "exactly the reference's columns: no `id`, `recorded_at` or `schema_version` column. Phone numbers are E.164",
    '(`+15555550123`; a number without `+` is read as North American); short-code senders appear as the short',
    'code itself (`471016`). `organization_id` is the workspace that owns the row.',
  ];
  for (const dataset of DATASETS) {
    const definition: DatasetDefinition = CATALOG[dataset];
    lines.push(
      '',
      `## ${dataset}`,
      '',
      definition.summary,
      '',
      `Export: ${SEMANTICS[definition.semantics]}.`,
      '',
      ...table(definition),
    );
  }
  return `${lines.join('\n')}\n`;
}
