/**
 * The second product's four datasets exported end to end (issue 24): ingested as producers send them, exported
 * as JSON lines and as Parquet through the synthesized state machines, read back by DuckDB with the reference's
 * columns and types, and `message_events` deduplicated by a consumer on `message_id` by greatest `updated_at`.
 */
import {
  currentRowKeyOf,
  PARQUET_COLUMNS,
  SECOND_PRODUCT_DATASETS,
  type SecondProductDataset,
  startOfUtcDay,
} from '@sluice/core';
import { generateDatasetRows } from '@sluice/eventlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalWorkflows } from '@sluice/devstack';
import { jsonLineAsRead, openParquetReader, type ParquetReader } from '../helpers/parquet.js';
import { createLocalExport, type E2eHarness, ingestAll, manualRunInput, startE2eHarness } from './harness.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const midnight = startOfUtcDay(Date.now() - HOUR_MS - 5 * MINUTE_MS);
const startFromMs = midnight - 2 * HOUR_MS;

/** DuckDB's type of each of the reference's types. */
const DUCKDB_TYPE = {
  string: 'VARCHAR',
  int32: 'INTEGER',
  boolean: 'BOOLEAN',
  timestamp_millis_utc: 'TIMESTAMP WITH TIME ZONE',
} as Record<string, string>;

let h: E2eHarness;
let workflows: LocalWorkflows;
let reader: ParquetReader;
const generated = new Map<SecondProductDataset, Record<string, unknown>[]>();

beforeAll(async () => {
  h = await startE2eHarness();
  workflows = await h.workflows();
  reader = await openParquetReader();
  const ws = h.ws.workspaceId;
  for (const dataset of SECOND_PRODUCT_DATASETS) {
    const rows = [
      ...generateDatasetRows({
        dataset,
        count: 300,
        workspaceId: ws,
        seed: 5,
        from: startFromMs,
        to: midnight + 20 * MINUTE_MS,
      }),
    ];
    generated.set(dataset, rows);
    await ingestAll(h.events, ws, rows);
  }
}, 300_000);

afterAll(async () => {
  await reader?.close();
  expect(await h.close()).toEqual([]);
});

/**
 * How many rows the hourly files of the export hold for a dataset: every generated row recorded after the start;
 * for the current-row datasets (docs/internals.md, "Current-row datasets") the rows emitted (a message when
 * new and on each status change, a project on its first complete row), one per key and window.
 */
function expectedRows(dataset: SecondProductDataset): number {
  const rows = generated.get(dataset)!;
  const after = (row: Record<string, unknown>) => Date.parse(String(row.recorded_at)) > startFromMs;
  const keyField = currentRowKeyOf(dataset);
  if (keyField === undefined) return rows.filter(after).length;
  const current = new Map<string, Record<string, unknown>>();
  const emitted = new Set<string>();
  for (const row of rows) {
    const key = String(row[keyField]);
    const before = current.get(key);
    let emit: boolean;
    if (dataset === 'project_summary') {
      emit = before === undefined && row.completed_at !== null && row.completed_at !== undefined;
      if (emit) current.set(key, row);
    } else {
      if (before !== undefined && Date.parse(String(row.updated_at)) <= Date.parse(String(before.updated_at)))
        continue;
      emit = before === undefined || before.status !== row.status;
      current.set(key, row);
    }
    const window = Math.ceil(Date.parse(String(row.recorded_at)) / HOUR_MS);
    if (emit && after(row)) emitted.add(`${key}#${window}`);
  }
  return emitted.size;
}

describe("the second product's datasets, exported", () => {
  it('as Parquet DuckDB reads with the documented columns and types, the same rows as the JSON lines', async () => {
    // Prepare
    const options = {
      prefixRoot: 'e2e-second/',
      startFromMs,
      datasets: [...SECOND_PRODUCT_DATASETS],
      frequency: 'hourly',
    };
    const jsonl = await createLocalExport(h, options);
    const parquet = await createLocalExport(h, { ...options, fileFormat: { format: 'parquet' } });

    // Act
    const outcomes = [
      await workflows.runExportRun(manualRunInput(h, jsonl.id)),
      await workflows.runExportRun(manualRunInput(h, parquet.id)),
    ];

    // Assess
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['succeeded', 'succeeded']);
    const below = (prefix: string, key: string) => key.slice(prefix.length + 1);
    const jsonlKeys = (await h.list(jsonl.prefix)).map((object) => below(jsonl.prefix, object.key));
    const files = jsonlKeys.filter((key) => key.endsWith('.jsonl.gz'));
    expect(new Set(files.map((key) => key.split('/')[0]))).toEqual(new Set(SECOND_PRODUCT_DATASETS));
    for (const dataset of SECOND_PRODUCT_DATASETS) {
      const names = PARQUET_COLUMNS[dataset].map((column) => column.name);
      const paths: string[] = [];
      const lines: string[] = [];
      for (const file of files.filter((key) => key.startsWith(`${dataset}/`))) {
        const fileLines = await h.readLines(`${jsonl.prefix}/${file}`);
        // JSON lines: exactly the columns, in order (no id, recorded_at or schema_version)
        for (const line of fileLines) expect(Object.keys(JSON.parse(line)), file).toEqual(names);
        lines.push(...fileLines);
        const parquetKey = `${parquet.prefix}/${file.replace(/\.jsonl\.gz$/, '.parquet')}`;
        paths.push(await reader.put(parquetKey, await h.readBytes(parquetKey)));
      }
      // Every row of the export's range is in the files (of a current-row dataset: each emitted row, the last
      // of its message in each window), organization_id the workspace's
      expect(lines.length, dataset).toBe(expectedRows(dataset));
      for (const line of lines) expect(JSON.parse(line).organization_id).toBe(h.ws.workspaceId);
      // DuckDB: every column with the documented type
      const described = await reader.describe(paths[0]!);
      expect(described, dataset).toEqual(
        PARQUET_COLUMNS[dataset].map((column) => ({ name: column.name, type: DUCKDB_TYPE[column.type] })),
      );
      expect(await reader.rows(paths, dataset), dataset).toEqual(
        lines.map((line) => jsonLineAsRead(line, dataset)),
      );
    }
  }, 300_000);

  it("gives each message's latest status to a consumer that keeps the greatest updated_at per message_id", async () => {
    // Prepare
    const parquet = await createLocalExport(h, {
      prefixRoot: 'e2e-second-dedupe/',
      startFromMs,
      datasets: ['message_events'],
      frequency: 'hourly',
      fileFormat: { format: 'parquet' },
    });

    // Act
    expect((await workflows.runExportRun(manualRunInput(h, parquet.id))).status).toBe('succeeded');
    const paths: string[] = [];
    for (const object of await h.list(parquet.prefix)) {
      if (object.key.endsWith('.parquet'))
        paths.push(await reader.put(object.key, await h.readBytes(object.key)));
    }
    const latest = await reader.query(
      `SELECT message_id, status FROM read_parquet([${paths.map((p) => `'${p}'`).join(', ')}])
       QUALIFY row_number() OVER (PARTITION BY message_id ORDER BY updated_at DESC) = 1`,
    );

    // Assess: the last row the producer sent of each message
    const expected = new Map<string, unknown>();
    for (const row of generated.get('message_events')!) {
      if (Date.parse(String(row.recorded_at)) > startFromMs) expected.set(String(row.message_id), row.status);
    }
    expect(new Map(latest.map((row) => [String(row.message_id), row.status]))).toEqual(expected);
    expect(new Set(expected.values())).toEqual(
      new Set(['delivered', 'failed', 'received', 'queued', 'sent']),
    );
  }, 300_000);
});
